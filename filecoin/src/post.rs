//! Winning and Window PoSt from vanilla proofs: filecoin-proofs'
//! `generate_winning_post_with_vanilla` / `generate_window_post_with_vanilla`,
//! with every partition proved as an engine partition and the bytes checked
//! by `verify_winning_post` / `verify_window_post` before they are returned.
//!
//! The vanilla proofs come from filecoin-proofs itself
//! (`generate_fallback_sector_challenges`, `generate_single_vanilla_proof`),
//! as a storage provider's PoSt worker gets them.

use std::collections::BTreeMap;
use std::time::Instant;

use filecoin_hashers::{Domain, Hasher};
use filecoin_proofs::parameters::{window_post_setup_params, winning_post_setup_params};
use filecoin_proofs::{
    as_safe_commitment, get_num_partition_for_fallback_post, partition_vanilla_proofs,
    verify_window_post, verify_winning_post, ChallengeSeed, FallbackPoStSectorProof,
    MerkleTreeTrait, PoStConfig, PoStType, ProverId, PublicReplicaInfo,
};
use storage_proofs_core::compound_proof::{self, CompoundProof};
use storage_proofs_core::proof::ProofScheme;
use storage_proofs_post::fallback::{self, FallbackPoSt, FallbackPoStCompound, PublicSector};

use crate::error::{FilecoinError, Result};
use crate::prover::FilecoinProver;
use crate::vanilla_check::{vanilla_accepted, vanilla_verdict};
use crate::JobTimes;

/// A PoSt proof (filecoin-proofs' `SnarkProof` bytes), already accepted by
/// filecoin-proofs' verifier, and where its time went.
pub struct PostProof {
    pub proof: Vec<u8>,
    pub times: JobTimes,
}

/// A PoSt's public parameters and inputs over a set of vanilla proofs, and
/// the proofs laid out in partitions as filecoin-proofs proves them, after
/// storage-proofs' vanilla verifier accepted every partition.
pub(crate) struct CheckedVanilla<'a, Tree: 'static + MerkleTreeTrait> {
    pub public_params: compound_proof::PublicParams<'a, FallbackPoSt<'a, Tree>>,
    pub public_inputs: fallback::PublicInputs<<Tree::Hasher as Hasher>::Domain>,
    pub partitioned: Vec<fallback::Proof<Tree::Proof>>,
}

fn post_name(post_config: &PoStConfig) -> &'static str {
    match post_config.typ {
        PoStType::Winning => "winning PoSt",
        PoStType::Window => "window PoSt",
    }
}

/// Checks Winning or Window PoSt vanilla proofs (after `post_config.typ`)
/// as filecoin-proofs' `generate_*_post_with_vanilla` does before it
/// proves: the sector count, the randomness and prover id as field
/// elements, the partitioning and storage-proofs' vanilla verifier of
/// every partition (of a Winning PoSt, every challenge's opening, as
/// `verify_winning_post`'s public inputs name them). Rejected or malformed
/// proofs are `FilecoinError::VanillaProofs`.
pub(crate) fn check_vanilla<'a, Tree: 'static + MerkleTreeTrait>(
    post_config: &PoStConfig,
    randomness: &ChallengeSeed,
    prover_id: ProverId,
    vanilla_proofs: &[FallbackPoStSectorProof<Tree>],
) -> Result<CheckedVanilla<'a, Tree>> {
    let kind = post_name(post_config);
    if vanilla_proofs.is_empty() {
        return Err(FilecoinError::Input(format!("{kind}: no vanilla proofs")));
    }
    if post_config.typ == PoStType::Winning && vanilla_proofs.len() != post_config.sector_count {
        return Err(FilecoinError::Input(format!(
            "winning PoSt proves {} sector(s), got vanilla proofs of {}",
            post_config.sector_count,
            vanilla_proofs.len()
        )));
    }
    let bad = |what: &str, e: anyhow::Error| FilecoinError::Input(format!("{what}: {e:#}"));
    let randomness_safe: <Tree::Hasher as Hasher>::Domain =
        as_safe_commitment(randomness, "randomness").map_err(|e| bad("randomness", e))?;
    let prover_id_safe: <Tree::Hasher as Hasher>::Domain =
        as_safe_commitment(&prover_id, "prover_id").map_err(|e| bad("prover id", e))?;

    let partitions = get_num_partition_for_fallback_post(post_config, vanilla_proofs.len());
    let vanilla_params = match post_config.typ {
        PoStType::Winning => winning_post_setup_params(post_config)
            .map_err(|e| FilecoinError::proofs("setup params", e))?,
        PoStType::Window => window_post_setup_params(post_config),
    };
    let setup = compound_proof::SetupParams {
        vanilla_params,
        partitions: (partitions > 1).then_some(partitions),
        priority: false,
    };
    let public_params: compound_proof::PublicParams<'_, FallbackPoSt<'_, Tree>> =
        FallbackPoStCompound::setup(&setup).map_err(|e| FilecoinError::proofs("setup", e))?;

    let sectors: Vec<PublicSector<_>> = vanilla_proofs
        .iter()
        .map(|p| PublicSector {
            id: p.sector_id,
            comm_r: p.comm_r,
        })
        .collect();
    let public_inputs = fallback::PublicInputs {
        randomness: randomness_safe,
        prover_id: prover_id_safe,
        sectors,
        k: None,
    };
    let partitioned = vanilla_verdict(|| {
        partition_vanilla_proofs(
            post_config,
            &public_params.vanilla_params,
            &public_inputs,
            partitions,
            vanilla_proofs,
        )
    })?;
    // filecoin-proofs lays a Winning PoSt out as one proof per challenge
    // and checks them against its one public sector, which the verifier
    // pairs with the first opening only; `verify_winning_post` names the
    // sector once per challenge (the public params' sector count), so
    // that every opening is checked. So does this check.
    let every_opening = match post_config.typ {
        PoStType::Winning => fallback::PublicInputs {
            sectors: (0..public_params.vanilla_params.sector_count)
                .flat_map(|_| public_inputs.sectors.iter().cloned())
                .collect(),
            ..public_inputs.clone()
        },
        PoStType::Window => public_inputs.clone(),
    };
    vanilla_accepted(
        "filecoin-proofs",
        &format!("the {kind} vanilla proofs"),
        || {
            FallbackPoSt::<Tree>::verify_all_partitions(
                &public_params.vanilla_params,
                &every_opening,
                &partitioned,
            )
        },
    )?;
    Ok(CheckedVanilla {
        public_params,
        public_inputs,
        partitioned,
    })
}

/// PoSt from vanilla proofs, Winning or Window after `post_config.typ`.
pub fn generate_post_with_vanilla<Tree: 'static + MerkleTreeTrait>(
    prover: &FilecoinProver,
    post_config: &PoStConfig,
    randomness: &ChallengeSeed,
    prover_id: ProverId,
    vanilla_proofs: Vec<FallbackPoStSectorProof<Tree>>,
) -> Result<PostProof> {
    let t_checks = Instant::now();
    let kind = post_name(post_config);
    let CheckedVanilla {
        public_params,
        public_inputs,
        partitioned,
    } = check_vanilla(post_config, randomness, prover_id, &vanilla_proofs)?;
    let checks = t_checks.elapsed();

    let t_circuits = Instant::now();
    let circuits = partitioned
        .iter()
        .enumerate()
        .map(|(k, proof)| {
            FallbackPoStCompound::<Tree>::circuit(
                &public_inputs,
                Default::default(),
                proof,
                &public_params.vanilla_params,
                Some(k),
            )
            .map_err(|e| FilecoinError::proofs("building the partition circuit", e))
        })
        .collect::<Result<Vec<_>>>()?;
    let build = t_circuits.elapsed();

    let params = post_config
        .get_cache_params_path::<Tree>()
        .map_err(|e| FilecoinError::proofs("parameter path", e))?;
    let proved = prover.prove(kind, circuits, &params)?;
    let mut bytes = Vec::with_capacity(192 * proved.proofs.len());
    for p in &proved.proofs {
        p.write(&mut bytes)
            .map_err(|e| FilecoinError::io("writing a proof", e))?;
    }

    let t_verify = Instant::now();
    let ok = match post_config.typ {
        PoStType::Winning => {
            let replicas = vanilla_proofs
                .iter()
                .map(|p| Ok((p.sector_id, public_replica(&p.comm_r)?)))
                .collect::<Result<Vec<_>>>()?;
            verify_winning_post::<Tree>(post_config, randomness, &replicas, prover_id, &bytes)
        }
        PoStType::Window => {
            let replicas = vanilla_proofs
                .iter()
                .map(|p| Ok((p.sector_id, public_replica(&p.comm_r)?)))
                .collect::<Result<BTreeMap<_, _>>>()?;
            verify_window_post::<Tree>(post_config, randomness, &replicas, prover_id, &bytes)
        }
    }
    .map_err(|e| FilecoinError::proofs("PoSt verifier", e))?;
    if !ok {
        return Err(FilecoinError::Rejected(kind));
    }
    Ok(PostProof {
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

fn public_replica<D: Domain>(comm_r: &D) -> Result<PublicReplicaInfo> {
    let mut c = [0u8; 32];
    c.copy_from_slice(&comm_r.into_bytes());
    PublicReplicaInfo::new(c).map_err(|e| FilecoinError::Input(format!("comm_r: {e:#}")))
}

/// One window PoSt partition from the vanilla proofs of its sectors, as
/// filecoin-proofs' `generate_single_window_post_with_vanilla` makes it
/// (what a storage provider's per-partition PoSt worker returns): the
/// partition's 192-byte proof, checked before it is returned by
/// filecoin-proofs' compound verifier over the same public inputs, with
/// the verifying key from the parameter cache.
pub fn generate_window_post_partition_with_vanilla<Tree: 'static + MerkleTreeTrait>(
    prover: &FilecoinProver,
    post_config: &PoStConfig,
    randomness: &ChallengeSeed,
    prover_id: ProverId,
    vanilla_proofs: Vec<FallbackPoStSectorProof<Tree>>,
    partition_index: usize,
) -> Result<PostProof> {
    use filecoin_proofs::single_partition_vanilla_proofs;
    use storage_proofs_core::multi_proof::MultiProof;

    let t_checks = Instant::now();
    if post_config.typ != PoStType::Window {
        return Err(FilecoinError::Input(
            "a window PoSt partition needs a window PoSt configuration".into(),
        ));
    }
    if vanilla_proofs.is_empty() {
        return Err(FilecoinError::Input(
            "window PoSt partition: no vanilla proofs".into(),
        ));
    }
    if vanilla_proofs.len() > post_config.sector_count {
        return Err(FilecoinError::Input(format!(
            "window PoSt partition: vanilla proofs of {} sectors, a partition holds at most {}",
            vanilla_proofs.len(),
            post_config.sector_count
        )));
    }
    let bad = |what: &str, e: anyhow::Error| FilecoinError::Input(format!("{what}: {e:#}"));
    let randomness_safe: <Tree::Hasher as Hasher>::Domain =
        as_safe_commitment(randomness, "randomness").map_err(|e| bad("randomness", e))?;
    let prover_id_safe: <Tree::Hasher as Hasher>::Domain =
        as_safe_commitment(&prover_id, "prover_id").map_err(|e| bad("prover id", e))?;
    let setup = compound_proof::SetupParams {
        vanilla_params: window_post_setup_params(post_config),
        partitions: None,
        priority: false,
    };
    let public_params: compound_proof::PublicParams<'_, FallbackPoSt<'_, Tree>> =
        FallbackPoStCompound::setup(&setup).map_err(|e| FilecoinError::proofs("setup", e))?;
    let public_inputs = fallback::PublicInputs {
        randomness: randomness_safe,
        prover_id: prover_id_safe,
        sectors: vanilla_proofs
            .iter()
            .map(|p| PublicSector {
                id: p.sector_id,
                comm_r: p.comm_r,
            })
            .collect(),
        k: Some(partition_index),
    };
    let partition = vanilla_verdict(|| {
        single_partition_vanilla_proofs(
            post_config,
            &public_params.vanilla_params,
            &public_inputs,
            &vanilla_proofs,
        )
    })?;
    let partitioned = vec![partition];
    vanilla_accepted(
        "filecoin-proofs",
        "the window PoSt partition's vanilla proofs",
        || {
            FallbackPoSt::<Tree>::verify_all_partitions(
                &public_params.vanilla_params,
                &public_inputs,
                &partitioned,
            )
        },
    )?;
    let checks = t_checks.elapsed();

    let t_circuits = Instant::now();
    // As filecoin-proofs proves it: the partition is the only one of the
    // public inputs' sectors (circuit index 0).
    let circuit = FallbackPoStCompound::<Tree>::circuit(
        &public_inputs,
        Default::default(),
        &partitioned[0],
        &public_params.vanilla_params,
        Some(0),
    )
    .map_err(|e| FilecoinError::proofs("building the partition circuit", e))?;
    let build = t_circuits.elapsed();

    let params = post_config
        .get_cache_params_path::<Tree>()
        .map_err(|e| FilecoinError::proofs("parameter path", e))?;
    let proved = prover.prove("window PoSt partition", vec![circuit], &params)?;
    let mut bytes = Vec::with_capacity(192);
    for p in &proved.proofs {
        p.write(&mut bytes)
            .map_err(|e| FilecoinError::io("writing a proof", e))?;
    }

    let t_verify = Instant::now();
    let vk =
        <FallbackPoStCompound<Tree> as CompoundProof<_, _>>::verifying_key::<rand::rngs::OsRng>(
            None,
            &public_params.vanilla_params,
        )
        .map_err(|e| FilecoinError::proofs("window PoSt verifying key", e))?;
    let pvk = bellperson::groth16::prepare_verifying_key(&vk);
    let multi = MultiProof::new_from_bytes(None, &bytes, &pvk)
        .map_err(|e| FilecoinError::proofs("reading the partition proof", e))?;
    let ok = FallbackPoStCompound::<Tree>::verify(
        &public_params,
        &public_inputs,
        &multi,
        &fallback::ChallengeRequirements {
            minimum_challenge_count: post_config.challenge_count * post_config.sector_count,
        },
    )
    .map_err(|e| FilecoinError::proofs("window PoSt partition verifier", e))?;
    if !ok {
        return Err(FilecoinError::Rejected("window PoSt partition"));
    }
    Ok(PostProof {
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
