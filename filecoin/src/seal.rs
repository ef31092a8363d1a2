//! Commit phase 2 (C2): filecoin-proofs' `seal_commit_phase2`, with every
//! partition proved as an engine partition.
//!
//! Before any proving, the C1 output is checked the way a sealing worker
//! wants it checked: its replica id must be the one of the given prover id,
//! sector id, ticket and proof type; its proofs must be for the configured
//! sector size and partition count; and filecoin-proofs' own verifier must
//! accept its vanilla proofs. After proving, the bytes (the partition proofs
//! in partition order, as `MultiProof::write` lays them out) must pass
//! `filecoin_proofs::verify_seal`, or nothing is returned.
//!
//! Each partition is a [`PorepPartition`]: filecoin-proofs' `StackedCircuit`,
//! whose witness-only synthesis runs its challenges on every core.

mod partition;
mod witness;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use filecoin_hashers::{Domain, Hasher};
use filecoin_proofs::constants::DefaultPieceHasher;
use filecoin_proofs::parameters::setup_params;
use filecoin_proofs::{
    as_safe_commitment, verify_seal, DefaultPieceDomain, MerkleTreeTrait, PoRepConfig, ProverId,
    SealCommitOutput, SealCommitPhase1Output,
};
use storage_proofs_core::api_version::ApiFeature;
use storage_proofs_core::compound_proof::{self, CompoundProof};
use storage_proofs_core::merkle::MerkleProofTrait;
use storage_proofs_core::multi_proof::MultiProof;
use storage_proofs_core::proof::ProofScheme;
use storage_proofs_core::sector::SectorId;
use storage_proofs_porep::stacked::{self, generate_replica_id, StackedCompound, StackedDrg};

use crate::error::{FilecoinError, Result};
use crate::prover::FilecoinProver;
use crate::vanilla_check::vanilla_accepted;
use crate::JobTimes;

pub use partition::PorepPartition;

/// What C2 returns: filecoin-proofs' output type and the engine's account
/// of the job.
pub struct SealCommit {
    /// The proof bytes exactly as filecoin-proofs' `seal_commit_phase2`
    /// lays them out; already accepted by `verify_seal`.
    pub output: SealCommitOutput,
    pub times: JobTimes,
}

type Compound<Tree> = StackedCompound<Tree, DefaultPieceHasher>;
type Vanilla<'a, Tree> = StackedDrg<'a, Tree, DefaultPieceHasher>;

/// The partition circuits of one C2, checked and ready for any prover.
pub struct PreparedC2<Tree: 'static + MerkleTreeTrait> {
    /// One circuit per partition, in partition order.
    pub circuits: Vec<PorepPartition<Tree>>,
    /// The bellperson params file filecoin-proofs would prove with.
    pub params: PathBuf,
    comm_r: [u8; 32],
    comm_d: [u8; 32],
    seed: [u8; 32],
    ticket: [u8; 32],
    checks: Duration,
    build: Duration,
}

/// Checks a C1 output against the proof type, prover id and sector id
/// (replica id, sector size, partition count, filecoin-proofs' vanilla
/// verifier) and builds its partition circuits.
pub fn prepare_c2<Tree: 'static + MerkleTreeTrait>(
    porep_config: &PoRepConfig,
    c1: SealCommitPhase1Output<Tree>,
    prover_id: ProverId,
    sector_id: SectorId,
) -> Result<PreparedC2<Tree>> {
    let t_checks = Instant::now();
    if porep_config.feature_enabled(ApiFeature::NonInteractivePoRep) {
        return Err(FilecoinError::Input(
            "non-interactive PoRep (an aggregated proof) is not supported".into(),
        ));
    }
    let SealCommitPhase1Output {
        vanilla_proofs,
        comm_r,
        comm_d,
        replica_id,
        seed,
        ticket,
    } = c1;
    if comm_d == [0; 32] || comm_r == [0; 32] || seed == [0; 32] {
        return Err(FilecoinError::Input(
            "the C1 output has an all-zero comm_d, comm_r or seed".into(),
        ));
    }
    let size = crate::SectorSize::new(u64::from(porep_config.sector_size))?;
    let partitions = usize::from(porep_config.partitions);
    if vanilla_proofs.len() != partitions || vanilla_proofs.iter().any(|p| p.is_empty()) {
        return Err(FilecoinError::Input(format!(
            "the C1 output has {} partitions of vanilla proofs ({} empty); a {size} sector has {}",
            vanilla_proofs.len(),
            vanilla_proofs.iter().filter(|p| p.is_empty()).count(),
            partitions
        )));
    }
    check_sector_size(porep_config, &vanilla_proofs)?;

    let expected_replica_id = generate_replica_id::<Tree::Hasher, _>(
        &prover_id,
        sector_id.into(),
        &ticket,
        comm_d,
        &porep_config.porep_id,
    );
    if expected_replica_id != replica_id {
        return Err(FilecoinError::Identity(format!(
            "the C1 output's replica id is not the one of prover id {}, sector {} and this \
             proof type: it was made for another prover, sector or porep id",
            hex(&prover_id),
            u64::from(sector_id)
        )));
    }

    let comm_r_safe = as_safe_commitment::<<Tree::Hasher as Hasher>::Domain, _>(&comm_r, "comm_r")
        .map_err(|e| FilecoinError::Input(format!("{e:#}")))?;
    let comm_d_safe = DefaultPieceDomain::try_from_bytes(&comm_d)
        .map_err(|e| FilecoinError::Input(format!("comm_d: {e:#}")))?;
    let public_inputs = stacked::PublicInputs {
        replica_id,
        tau: Some(stacked::Tau {
            comm_d: comm_d_safe,
            comm_r: comm_r_safe,
        }),
        k: None,
        seed: Some(seed),
    };
    let setup = compound_proof::SetupParams {
        vanilla_params: setup_params(porep_config)
            .map_err(|e| FilecoinError::proofs("setup params", e))?,
        partitions: Some(partitions),
        priority: false,
    };
    let public_params = <Compound<Tree> as CompoundProof<Vanilla<'static, Tree>, _>>::setup(&setup)
        .map_err(|e| FilecoinError::proofs("public params", e))?;

    // filecoin-proofs' own vanilla verifier: a tampered C1 stops here, not
    // as an unsatisfied circuit later.
    vanilla_accepted(
        "filecoin-proofs",
        "the C1 output's vanilla proofs (altered, or made for other commitments or seed)",
        || {
            Vanilla::<Tree>::verify_all_partitions(
                &public_params.vanilla_params,
                &public_inputs,
                &vanilla_proofs,
            )
        },
    )?;
    let checks = t_checks.elapsed();

    // The vanilla proofs move into the partitions: one copy of them.
    let t_circuits = Instant::now();
    let mut circuits: Vec<PorepPartition<Tree>> = Vec::with_capacity(vanilla_proofs.len());
    for proofs in vanilla_proofs {
        let p = PorepPartition::new(&public_inputs, proofs)?;
        // One challenge size for the whole proof (learned once).
        circuits.push(match circuits.first() {
            Some(first) => p.sharing_sizes_with(first),
            None => p,
        });
    }
    let build = t_circuits.elapsed();
    let params = porep_config
        .get_cache_params_path::<Tree>()
        .map_err(|e| FilecoinError::proofs("parameter path", e))?;
    Ok(PreparedC2 {
        circuits,
        params,
        comm_r,
        comm_d,
        seed,
        ticket,
        checks,
        build,
    })
}

/// `seal_commit_phase2` through the engine. `Tree` is the sector's shape
/// (see `with_sector_shape!`); `porep_config` says size, partitions, porep
/// id and API version.
pub fn seal_commit_phase2<Tree: 'static + MerkleTreeTrait>(
    prover: &FilecoinProver,
    porep_config: &PoRepConfig,
    c1: SealCommitPhase1Output<Tree>,
    prover_id: ProverId,
    sector_id: SectorId,
) -> Result<SealCommit> {
    let prepared = prepare_c2::<Tree>(porep_config, c1, prover_id, sector_id)?;
    let partitions = prepared.circuits.len();
    let (parallel, native) = (prover.parallel_witness(), prover.native_witness());
    let circuits = prepared
        .circuits
        .into_iter()
        .map(|c| {
            c.with_parallel_witness(parallel)
                .with_native_witness(native)
        })
        .collect();
    let proved = prover.prove(
        &format!("seal-commit-{}", u64::from(sector_id)),
        circuits,
        &prepared.params,
    )?;
    let key = prover.key(&prepared.params)?.0;
    let mut bytes = Vec::with_capacity(192 * partitions);
    MultiProof::new(proved.proofs, key.prepared_vk())
        .write(&mut bytes)
        .map_err(|e| FilecoinError::proofs("writing the proofs", e))?;

    let t_verify = Instant::now();
    let ok = verify_seal::<Tree>(
        porep_config,
        prepared.comm_r,
        prepared.comm_d,
        prover_id,
        sector_id,
        prepared.ticket,
        prepared.seed,
        &bytes,
    )
    .map_err(|e| FilecoinError::proofs("verify_seal", e))?;
    if !ok {
        return Err(FilecoinError::Rejected("seal commit"));
    }
    Ok(SealCommit {
        output: SealCommitOutput { proof: bytes },
        times: JobTimes {
            checks: prepared.checks,
            circuits: prepared.build,
            key_load: proved.key_load,
            verify: t_verify.elapsed(),
            report: proved.report,
        },
    })
}

/// The comm_d inclusion paths of a C1 output have one element per level of
/// the sector's binary data tree: a sector of 2^n nodes has paths of n.
fn check_sector_size<Tree: 'static + MerkleTreeTrait>(
    porep_config: &PoRepConfig,
    vanilla_proofs: &[Vec<stacked::Proof<Tree, DefaultPieceHasher>>],
) -> Result<()> {
    let size = u64::from(porep_config.sector_size);
    let levels = (size / 32).trailing_zeros() as usize;
    for (k, partition) in vanilla_proofs.iter().enumerate() {
        for proof in partition {
            let n = proof.comm_d_proofs.path().len();
            if n != levels {
                let theirs = 32u64.checked_shl(n as u32).unwrap_or(0);
                let theirs = crate::SectorSize::new(theirs)
                    .map(|s| s.to_string())
                    .unwrap_or_else(|_| format!("2^{n}-node"));
                return Err(FilecoinError::SectorSize(format!(
                    "the C1 output is for a {theirs} sector (partition {k}), not {}",
                    crate::SectorSize::new(size)?
                )));
            }
        }
    }
    Ok(())
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
