//! Vanilla proofs as bytes, the form a storage provider's workers pass
//! them around in: filecoin-proofs-api's bincode encodings (one
//! `FallbackPoStSectorProof` per challenged sector from
//! `generate_single_vanilla_proof`, one update `PartitionProof` per
//! partition from `generate_partition_proofs`). They are decoded for the
//! sector size's tree shape and proved through the engine with
//! [`generate_post_with_vanilla`], [`generate_window_post_partition_with_vanilla`]
//! and [`generate_empty_sector_update_proof_with_vanilla`], whose proofs
//! pass filecoin-proofs' verifiers before they are returned; PoSt vanilla
//! proofs are also checked alone ([`verify_post_vanilla`]).

use std::path::Path;

use bincode::Options;
use filecoin_proofs::{FallbackPoStSectorProof, MerkleTreeTrait, TreeRHasher};
use serde::de::DeserializeOwned;
use serde::Serialize;
use storage_proofs_update::PartitionProof;

use crate::config::{post_config, PostKind, RegisteredSeal, SealVersion};
use crate::error::{FilecoinError, Result};
use crate::post::{
    check_vanilla, generate_post_with_vanilla, generate_window_post_partition_with_vanilla,
    PostProof,
};
use crate::post_input::PostInput;
use crate::prover::FilecoinProver;
use crate::sealing::{post_vanilla, snap_encode, SealedSector, UpdatedSector};
use crate::update::{generate_empty_sector_update_proof_with_vanilla, UpdateProof};
use crate::{with_sector_shape, SectorSize};

/// Which PoSt a set of vanilla proofs is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PostJob {
    /// Winning PoSt (its one partition).
    Winning,
    /// Window PoSt, every partition of the sectors given.
    Window,
    /// One window PoSt partition: the vanilla proofs of its sectors.
    WindowPartition(usize),
}

impl PostJob {
    pub fn kind(self) -> PostKind {
        match self {
            PostJob::Winning => PostKind::Winning,
            PostJob::Window | PostJob::WindowPartition(_) => PostKind::Window,
        }
    }
}

/// bincode 1's default encoding (what `bincode::serialize` writes), with
/// the input's length as the limit of what decoding may read, and no
/// trailing bytes.
fn decode<T: DeserializeOwned>(bytes: &[u8], what: &str, i: usize) -> Result<T> {
    bincode::DefaultOptions::new()
        .with_fixint_encoding()
        .with_limit(bytes.len() as u64)
        .deserialize(bytes)
        .map_err(|e| FilecoinError::Input(format!("{what} {i} ({} bytes): {e}", bytes.len())))
}

pub(crate) fn encode<T: Serialize>(v: &T) -> Result<Vec<u8>> {
    bincode::serialize(v).map_err(|e| FilecoinError::Input(format!("encoding: {e}")))
}

fn post_proofs<Tree: 'static + MerkleTreeTrait>(
    vanilla: &[Vec<u8>],
) -> Result<Vec<FallbackPoStSectorProof<Tree>>> {
    if vanilla.is_empty() {
        return Err(FilecoinError::Input("no PoSt vanilla proofs".into()));
    }
    vanilla
        .iter()
        .enumerate()
        .map(|(i, b)| decode(b, "PoSt vanilla proof", i))
        .collect()
}

fn check_post_inner<Tree: 'static + MerkleTreeTrait>(
    size: SectorSize,
    job: PostJob,
    vanilla: &[Vec<u8>],
) -> Result<()> {
    let config = post_config(size, job.kind())?;
    let proofs = post_proofs::<Tree>(vanilla)?;
    let most = match job {
        PostJob::Winning => config.sector_count,
        PostJob::WindowPartition(_) => config.sector_count,
        PostJob::Window => usize::MAX,
    };
    if job == PostJob::Winning && proofs.len() != config.sector_count {
        return Err(FilecoinError::Input(format!(
            "winning PoSt proves {} sector(s), got vanilla proofs of {}",
            config.sector_count,
            proofs.len()
        )));
    }
    if proofs.len() > most {
        return Err(FilecoinError::Input(format!(
            "vanilla proofs of {} sectors; a {size} window PoSt partition holds at most {most}",
            proofs.len()
        )));
    }
    let challenges = config.challenge_count;
    for (i, p) in proofs.iter().enumerate() {
        let n = p
            .vanilla_proof
            .sectors
            .iter()
            .map(|s| s.inclusion_proofs.len())
            .sum::<usize>();
        if n != challenges {
            return Err(FilecoinError::Input(format!(
                "PoSt vanilla proof {i} (sector {}) answers {n} challenges, not {challenges}",
                p.sector_id
            )));
        }
    }
    Ok(())
}

/// Decodes PoSt vanilla proofs for a sector size and checks their count
/// and shape (what can be told without the key): the error is the
/// client's.
pub fn check_post_vanilla(size: SectorSize, job: PostJob, vanilla: &[Vec<u8>]) -> Result<()> {
    with_sector_shape!(size, check_post_inner, size, job, vanilla)
}

fn verify_post_inner<Tree: 'static + MerkleTreeTrait>(input: &PostInput) -> Result<()> {
    let config = post_config(input.size, input.kind)?;
    let proofs = post_proofs::<Tree>(&input.vanilla_proofs)?;
    check_vanilla::<Tree>(&config, &input.randomness, input.prover_id, &proofs).map(|_| ())
}

/// Decodes a PoSt input's vanilla proofs for its sector size and checks
/// them as filecoin-proofs does before proving a Winning or Window PoSt
/// over them (every sector given, in order): storage-proofs' vanilla
/// verifier for the randomness, every challenge's opening. Rejected proofs
/// are `FilecoinError::VanillaProofs`.
pub fn verify_post_vanilla(input: &PostInput) -> Result<()> {
    with_sector_shape!(input.size, verify_post_inner, input)
}

fn post_sectors_inner<Tree: 'static + MerkleTreeTrait>(
    vanilla: &[Vec<u8>],
) -> Result<Vec<(u64, [u8; 32])>> {
    Ok(post_proofs::<Tree>(vanilla)?
        .iter()
        .map(|p| {
            let mut comm_r = [0u8; 32];
            comm_r.copy_from_slice(AsRef::<[u8]>::as_ref(&p.comm_r));
            (u64::from(p.sector_id), comm_r)
        })
        .collect())
}

/// The sector id and comm_r each PoSt vanilla proof (bytes, for a sector
/// size) names, in order.
pub fn post_vanilla_sectors(size: SectorSize, vanilla: &[Vec<u8>]) -> Result<Vec<(u64, [u8; 32])>> {
    with_sector_shape!(size, post_sectors_inner, vanilla)
}

fn prove_post_inner<Tree: 'static + MerkleTreeTrait>(
    prover: &FilecoinProver,
    size: SectorSize,
    job: PostJob,
    randomness: [u8; 32],
    prover_id: [u8; 32],
    vanilla: &[Vec<u8>],
) -> Result<PostProof> {
    let config = post_config(size, job.kind())?;
    let proofs = post_proofs::<Tree>(vanilla)?;
    match job {
        PostJob::WindowPartition(k) => generate_window_post_partition_with_vanilla::<Tree>(
            prover,
            &config,
            &randomness,
            prover_id,
            proofs,
            k,
        ),
        _ => generate_post_with_vanilla::<Tree>(prover, &config, &randomness, prover_id, proofs),
    }
}

/// A PoSt proof from vanilla proofs as bytes.
pub fn prove_post_bytes(
    prover: &FilecoinProver,
    size: SectorSize,
    job: PostJob,
    randomness: [u8; 32],
    prover_id: [u8; 32],
    vanilla: &[Vec<u8>],
) -> Result<PostProof> {
    with_sector_shape!(
        size,
        prove_post_inner,
        prover,
        size,
        job,
        randomness,
        prover_id,
        vanilla
    )
}

fn snap_proofs<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    size: SectorSize,
    vanilla: &[Vec<u8>],
) -> Result<Vec<PartitionProof<Tree>>> {
    let config = RegisteredSeal::new(size, SealVersion::V1_1).porep_config()?;
    let partitions = usize::from(
        filecoin_proofs::SectorUpdateConfig::from_porep_config(&config).update_partitions,
    );
    if vanilla.len() != partitions {
        return Err(FilecoinError::Input(format!(
            "{} SnapDeals vanilla proofs; a {size} update has {partitions} partitions",
            vanilla.len()
        )));
    }
    vanilla
        .iter()
        .enumerate()
        .map(|(i, b)| decode(b, "SnapDeals vanilla proof", i))
        .collect()
}

fn check_snap_inner<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    size: SectorSize,
    vanilla: &[Vec<u8>],
) -> Result<()> {
    crate::update::update_public_params(size.bytes())?;
    snap_proofs::<Tree>(size, vanilla).map(|_| ())
}

/// Decodes SnapDeals vanilla proofs for a sector size and checks their
/// count: the error is the client's.
pub fn check_snap_vanilla(size: SectorSize, vanilla: &[Vec<u8>]) -> Result<()> {
    with_sector_shape!(size, check_snap_inner, size, vanilla)
}

fn prove_snap_inner<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    prover: &FilecoinProver,
    size: SectorSize,
    vanilla: &[Vec<u8>],
    comms: [[u8; 32]; 3],
) -> Result<UpdateProof> {
    let config = RegisteredSeal::new(size, SealVersion::V1_1).porep_config()?;
    let proofs = snap_proofs::<Tree>(size, vanilla)?;
    generate_empty_sector_update_proof_with_vanilla::<Tree>(
        prover, &config, proofs, comms[0], comms[1], comms[2],
    )
}

/// A SnapDeals proof from vanilla proofs as bytes and the three
/// commitments: `[comm_r_old, comm_r_new, comm_d_new]`.
pub fn prove_snap_bytes(
    prover: &FilecoinProver,
    size: SectorSize,
    vanilla: &[Vec<u8>],
    comms: [[u8; 32]; 3],
) -> Result<UpdateProof> {
    with_sector_shape!(size, prove_snap_inner, prover, size, vanilla, comms)
}

fn post_vanilla_bytes_inner<Tree: 'static + MerkleTreeTrait>(
    sector: &SealedSector,
    kind: PostKind,
    randomness: [u8; 32],
) -> Result<Vec<u8>> {
    encode(&post_vanilla::<Tree>(sector, kind, randomness)?)
}

/// The PoSt vanilla proof of a sealed sector as bytes (a storage
/// provider's PoSt worker's output).
pub fn post_vanilla_bytes_for(
    sector: &SealedSector,
    kind: PostKind,
    randomness: [u8; 32],
) -> Result<Vec<u8>> {
    with_sector_shape!(
        sector.registered.size,
        post_vanilla_bytes_inner,
        sector,
        kind,
        randomness
    )
}

fn snap_vanilla_bytes_inner<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    sector: &SealedSector,
    work_dir: &Path,
    seed: u64,
) -> Result<(UpdatedSector, Vec<Vec<u8>>)> {
    let (updated, proofs) = snap_encode::<Tree>(sector, work_dir, seed)?;
    let bytes = proofs.iter().map(encode).collect::<Result<Vec<_>>>()?;
    Ok((updated, bytes))
}

/// Encodes data drawn from `seed` into `sector` (SnapDeals) and returns the
/// updated sector with its vanilla partition proofs as bytes.
pub fn snap_vanilla_bytes_for(
    sector: &SealedSector,
    work_dir: &Path,
    seed: u64,
) -> Result<(UpdatedSector, Vec<Vec<u8>>)> {
    with_sector_shape!(
        sector.registered.size,
        snap_vanilla_bytes_inner,
        sector,
        work_dir,
        seed
    )
}
