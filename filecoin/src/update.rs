//! SnapDeals (empty-sector-update) proofs from vanilla proofs:
//! filecoin-proofs' `generate_empty_sector_update_proof_with_vanilla`, with
//! every partition proved as an engine partition and the bytes checked by
//! `verify_empty_sector_update_proof` before they are returned.

use std::path::PathBuf;
use std::time::Instant;

use filecoin_hashers::{Domain, Hasher};
use filecoin_proofs::{
    verify_empty_sector_update_proof, Commitment, DefaultPieceDomain, MerkleTreeTrait, PoRepConfig,
    SectorUpdateConfig, TreeRHasher,
};
use storage_proofs_core::compound_proof::{self, CompoundProof};
use storage_proofs_core::parameter_cache::{parameter_cache_params_path, CacheableParameters};
use storage_proofs_core::proof::ProofScheme;
use storage_proofs_update::constants::ALLOWED_SECTOR_SIZES;
use storage_proofs_update::{
    EmptySectorUpdate, EmptySectorUpdateCircuit, EmptySectorUpdateCompound, PartitionProof,
    PublicInputs, PublicParams, SetupParams,
};

use crate::error::{FilecoinError, Result};
use crate::prover::FilecoinProver;
use crate::vanilla_check::vanilla_accepted;
use crate::JobTimes;

/// A SnapDeals proof (filecoin-proofs' `EmptySectorUpdateProof` bytes),
/// already accepted by filecoin-proofs' verifier.
pub struct UpdateProof {
    pub proof: Vec<u8>,
    pub times: JobTimes,
}

/// The update circuit's public parameters, or an error for a size the
/// update proofs do not have.
pub fn update_public_params(sector_bytes: u64) -> Result<PublicParams> {
    let nodes = (sector_bytes / 32) as usize;
    if !ALLOWED_SECTOR_SIZES.contains(&nodes) {
        return Err(FilecoinError::SectorSize(format!(
            "SnapDeals proofs have no {sector_bytes}-byte sector size"
        )));
    }
    Ok(PublicParams::from_sector_size(sector_bytes))
}

/// The parameter-cache identifier of the update circuit of a size.
pub fn update_cache_identifier<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    public_params: &PublicParams,
) -> String {
    <EmptySectorUpdateCompound<Tree> as CacheableParameters<
        EmptySectorUpdateCircuit<Tree>,
        PublicParams,
    >>::cache_identifier(public_params)
}

/// The params file of the update circuit of a size.
pub fn update_params_path<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    public_params: &PublicParams,
) -> PathBuf {
    parameter_cache_params_path(&update_cache_identifier::<Tree>(public_params))
}

fn domain<D: Domain>(bytes: &Commitment, what: &str) -> Result<D> {
    D::try_from_bytes(bytes).map_err(|e| FilecoinError::Input(format!("{what}: {e:#}")))
}

/// SnapDeals proof of `vanilla_proofs` (one per update partition).
pub fn generate_empty_sector_update_proof_with_vanilla<
    Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>,
>(
    prover: &FilecoinProver,
    porep_config: &PoRepConfig,
    vanilla_proofs: Vec<PartitionProof<Tree>>,
    comm_r_old: Commitment,
    comm_r_new: Commitment,
    comm_d_new: Commitment,
) -> Result<UpdateProof> {
    let t_checks = Instant::now();
    let config = SectorUpdateConfig::from_porep_config(porep_config);
    let partitions = usize::from(config.update_partitions);
    if vanilla_proofs.len() != partitions {
        return Err(FilecoinError::Input(format!(
            "{} SnapDeals vanilla proofs for {partitions} partitions",
            vanilla_proofs.len()
        )));
    }
    let public_inputs = PublicInputs {
        k: partitions,
        comm_r_old: domain::<<TreeRHasher as Hasher>::Domain>(&comm_r_old, "comm_r_old")?,
        comm_d_new: domain::<DefaultPieceDomain>(&comm_d_new, "comm_d_new")?,
        comm_r_new: domain::<<TreeRHasher as Hasher>::Domain>(&comm_r_new, "comm_r_new")?,
        h: config.h,
    };
    let sector_bytes = u64::from(config.sector_size);
    let public_params = update_public_params(sector_bytes)?;
    let setup = compound_proof::SetupParams {
        vanilla_params: SetupParams { sector_bytes },
        partitions: Some(partitions),
        priority: false,
    };
    let compound = EmptySectorUpdateCompound::<Tree>::setup(&setup)
        .map_err(|e| FilecoinError::proofs("setup", e))?;
    vanilla_accepted("filecoin-proofs", "the SnapDeals vanilla proofs", || {
        EmptySectorUpdate::<Tree>::verify_all_partitions(
            &compound.vanilla_params,
            &public_inputs,
            &vanilla_proofs,
        )
    })?;
    let checks = t_checks.elapsed();

    let t_circuits = Instant::now();
    let circuits = vanilla_proofs
        .iter()
        .enumerate()
        .map(|(k, proof)| {
            EmptySectorUpdateCompound::<Tree>::circuit(
                &public_inputs,
                (),
                proof,
                &compound.vanilla_params,
                Some(k),
            )
            .map_err(|e| FilecoinError::proofs("building the partition circuit", e))
        })
        .collect::<Result<Vec<_>>>()?;
    let build = t_circuits.elapsed();

    let params = update_params_path::<Tree>(&public_params);
    let proved = prover.prove("snapdeals", circuits, &params)?;
    let mut bytes = Vec::with_capacity(192 * partitions);
    for p in &proved.proofs {
        p.write(&mut bytes)
            .map_err(|e| FilecoinError::io("writing a proof", e))?;
    }
    let t_verify = Instant::now();
    let ok = verify_empty_sector_update_proof::<Tree>(
        porep_config,
        &bytes,
        comm_r_old,
        comm_r_new,
        comm_d_new,
    )
    .map_err(|e| FilecoinError::proofs("SnapDeals verifier", e))?;
    if !ok {
        return Err(FilecoinError::Rejected("SnapDeals"));
    }
    Ok(UpdateProof {
        proof: bytes,
        times: JobTimes {
            checks,
            circuits: build,
            key_load: proved.key_load,
            verify: t_verify.elapsed(),
            report: proved.report,
        },
    })
}
