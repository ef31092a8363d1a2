//! Sealing a small sector of seeded random data with filecoin-proofs (add
//! piece, PC1, PC2, C1): the input of the demo, the tests and the bench.
//! C1's output is what C2 starts from, and the sealed replica is what PoSt
//! proves and what SnapDeals updates; the SNARKs go through the engine.

use std::fs::{self, File};
use std::io::Cursor;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use filecoin_proofs::{
    add_piece, encode_into, generate_fallback_sector_challenges, generate_partition_proofs,
    generate_single_vanilla_proof, seal_commit_phase1, seal_pre_commit_phase1,
    seal_pre_commit_phase2, verify_seal, MerkleTreeTrait, PaddedBytesAmount, PoRepConfig,
    PrivateReplicaInfo, SectorUpdateConfig, TreeRHasher, UnpaddedBytesAmount,
};
use rand::RngCore;
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;
use storage_proofs_core::sector::SectorId;

use crate::config::{post_config, PostKind, RegisteredSeal};
use crate::error::{FilecoinError, Result};
use crate::post::{generate_post_with_vanilla, PostProof};
use crate::prover::FilecoinProver;
use crate::update::{generate_empty_sector_update_proof_with_vanilla, UpdateProof};
use crate::with_sector_shape;

/// A sealed sector and its commit-phase-1 output.
#[derive(Debug, Clone)]
pub struct SealedSector {
    pub registered: RegisteredSeal,
    pub prover_id: [u8; 32],
    pub sector_id: u64,
    pub ticket: [u8; 32],
    pub seed: [u8; 32],
    pub comm_r: [u8; 32],
    pub comm_d: [u8; 32],
    pub replica: PathBuf,
    pub cache: PathBuf,
    /// filecoin-proofs' `SealCommitPhase1Output` as serde JSON.
    pub c1_json: Vec<u8>,
    pub times: SealTimes,
}

#[derive(Debug, Clone, Copy)]
pub struct SealTimes {
    pub add_piece: Duration,
    pub pc1: Duration,
    pub pc2: Duration,
    pub c1: Duration,
}

/// A 32-byte value that is a valid field element (top byte cleared), the
/// way lotus draws tickets and seeds.
fn field_bytes(rng: &mut ChaCha20Rng) -> [u8; 32] {
    let mut b = [0u8; 32];
    rng.fill_bytes(&mut b);
    b[31] &= 0x3f;
    b
}

/// Seals one sector of `registered`'s size filled with data drawn from
/// `seed`, in `work_dir` (created; files `staged`, `sealed`, `cache/`).
/// The prover id, sector id, ticket and challenge seed come from `seed` too.
pub fn seal_test_sector(
    registered: RegisteredSeal,
    work_dir: &Path,
    seed: u64,
) -> Result<SealedSector> {
    seal_test_sector_for(registered, work_dir, seed, None)
}

/// [`seal_test_sector`] with the given prover id (a miner's, for
/// instance) instead of one drawn from `seed`; the rest is drawn as there.
pub fn seal_test_sector_for(
    registered: RegisteredSeal,
    work_dir: &Path,
    seed: u64,
    prover_id: Option<[u8; 32]>,
) -> Result<SealedSector> {
    let config = registered.porep_config()?;
    with_sector_shape!(
        registered.size,
        seal_inner,
        registered,
        &config,
        work_dir,
        seed,
        prover_id
    )
}

fn seal_inner<Tree: 'static + MerkleTreeTrait>(
    registered: RegisteredSeal,
    config: &PoRepConfig,
    work_dir: &Path,
    seed: u64,
    given_prover_id: Option<[u8; 32]>,
) -> Result<SealedSector> {
    let e = |what: &'static str| move |e: anyhow::Error| FilecoinError::proofs(what, e);
    let cache = work_dir.join("cache");
    fs::create_dir_all(&cache)
        .map_err(|e| FilecoinError::io(format!("creating {}", cache.display()), e))?;
    let staged = work_dir.join("staged");
    let replica = work_dir.join("sealed");

    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let drawn_prover_id = field_bytes(&mut rng);
    let prover_id = given_prover_id.unwrap_or(drawn_prover_id);
    let sector_id = 1 + (rng.next_u32() as u64 % 1000);
    let ticket = field_bytes(&mut rng);
    let challenge_seed = field_bytes(&mut rng);
    let unpadded = UnpaddedBytesAmount::from(PaddedBytesAmount(registered.size.bytes()));
    let mut data = vec![0u8; u64::from(unpadded) as usize];
    rng.fill_bytes(&mut data);

    let t = Instant::now();
    let staged_file = File::create(&staged)
        .map_err(|e| FilecoinError::io(format!("creating {}", staged.display()), e))?;
    let (piece, _) =
        add_piece(Cursor::new(&data), staged_file, unpadded, &[]).map_err(e("add piece"))?;
    let pieces = [piece];
    File::create(&replica)
        .map_err(|e| FilecoinError::io(format!("creating {}", replica.display()), e))?;
    let add_piece_t = t.elapsed();

    let t = Instant::now();
    let pc1 = seal_pre_commit_phase1::<_, _, _, Tree>(
        config,
        &cache,
        &staged,
        &replica,
        prover_id,
        SectorId::from(sector_id),
        ticket,
        &pieces,
    )
    .map_err(e("pre-commit phase 1"))?;
    let pc1_t = t.elapsed();
    let t = Instant::now();
    let pre =
        seal_pre_commit_phase2(config, pc1, &cache, &replica).map_err(e("pre-commit phase 2"))?;
    let pc2_t = t.elapsed();
    let t = Instant::now();
    let c1 = seal_commit_phase1::<_, Tree>(
        config,
        &cache,
        &replica,
        prover_id,
        SectorId::from(sector_id),
        ticket,
        challenge_seed,
        pre.clone(),
        &pieces,
    )
    .map_err(e("commit phase 1"))?;
    let c1_t = t.elapsed();
    let c1_json = serde_json::to_vec(&c1)
        .map_err(|e| FilecoinError::Input(format!("serializing the C1 output: {e}")))?;
    Ok(SealedSector {
        registered,
        prover_id,
        sector_id,
        ticket,
        seed: challenge_seed,
        comm_r: pre.comm_r,
        comm_d: pre.comm_d,
        replica,
        cache,
        c1_json,
        times: SealTimes {
            add_piece: add_piece_t,
            pc1: pc1_t,
            pc2: pc2_t,
            c1: c1_t,
        },
    })
}

/// Whether filecoin-proofs' `verify_seal` accepts `proof` (a C2 proof:
/// 192 bytes per partition) for this sector; an error where `verify_seal`
/// cannot run (a proof of the wrong length, for one).
pub fn verify_commit(sector: &SealedSector, proof: &[u8]) -> Result<bool> {
    with_sector_shape!(sector.registered.size, verify_commit_inner, sector, proof)
}

fn verify_commit_inner<Tree: 'static + MerkleTreeTrait>(
    sector: &SealedSector,
    proof: &[u8],
) -> Result<bool> {
    verify_seal::<Tree>(
        &sector.registered.porep_config()?,
        sector.comm_r,
        sector.comm_d,
        sector.prover_id,
        SectorId::from(sector.sector_id),
        sector.ticket,
        sector.seed,
        proof,
    )
    .map_err(|e| FilecoinError::proofs("verify_seal", e))
}

/// Winning or Window PoSt over one sealed sector: filecoin-proofs makes
/// the challenges and vanilla proofs from the replica, the engine the SNARK.
pub fn prove_post_for(
    prover: &FilecoinProver,
    sector: &SealedSector,
    kind: PostKind,
    randomness: [u8; 32],
) -> Result<PostProof> {
    with_sector_shape!(
        sector.registered.size,
        post_inner,
        prover,
        sector,
        kind,
        randomness
    )
}

pub(crate) fn post_vanilla<Tree: 'static + MerkleTreeTrait>(
    sector: &SealedSector,
    kind: PostKind,
    randomness: [u8; 32],
) -> Result<filecoin_proofs::FallbackPoStSectorProof<Tree>> {
    let e = |what: &'static str| move |e: anyhow::Error| FilecoinError::proofs(what, e);
    let config = post_config(sector.registered.size, kind)?;
    let id = SectorId::from(sector.sector_id);
    let replica = PrivateReplicaInfo::<Tree>::new(
        sector.replica.clone(),
        sector.comm_r,
        sector.cache.clone(),
    )
    .map_err(e("replica"))?;
    let challenges =
        generate_fallback_sector_challenges::<Tree>(&config, &randomness, &[id], sector.prover_id)
            .map_err(e("PoSt challenges"))?;
    let mine = challenges
        .get(&id)
        .ok_or_else(|| FilecoinError::Proofs("no PoSt challenges for the sector".into()))?;
    generate_single_vanilla_proof::<Tree>(&config, id, &replica, mine)
        .map_err(e("PoSt vanilla proof"))
}

fn post_inner<Tree: 'static + MerkleTreeTrait>(
    prover: &FilecoinProver,
    sector: &SealedSector,
    kind: PostKind,
    randomness: [u8; 32],
) -> Result<PostProof> {
    let config = post_config(sector.registered.size, kind)?;
    let vanilla = post_vanilla::<Tree>(sector, kind, randomness)?;
    generate_post_with_vanilla::<Tree>(
        prover,
        &config,
        &randomness,
        sector.prover_id,
        vec![vanilla],
    )
}

/// A sector updated with SnapDeals (new data encoded into a sealed one).
#[derive(Debug, Clone)]
pub struct UpdatedSector {
    pub comm_r_new: [u8; 32],
    pub comm_d_new: [u8; 32],
    pub replica: PathBuf,
    pub cache: PathBuf,
}

/// Encodes data drawn from `seed` into `sector` (its replica is the sector
/// key) with filecoin-proofs, makes the vanilla partition proofs, and
/// proves them through the engine.
pub fn prove_snap_for(
    prover: &FilecoinProver,
    sector: &SealedSector,
    work_dir: &Path,
    seed: u64,
) -> Result<(UpdatedSector, UpdateProof)> {
    with_sector_shape!(
        sector.registered.size,
        snap_inner,
        prover,
        sector,
        work_dir,
        seed
    )
}

pub(crate) fn snap_encode<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    sector: &SealedSector,
    work_dir: &Path,
    seed: u64,
) -> Result<(
    UpdatedSector,
    Vec<storage_proofs_update::PartitionProof<Tree>>,
)> {
    let e = |what: &'static str| move |e: anyhow::Error| FilecoinError::proofs(what, e);
    let config = sector.registered.porep_config()?;
    let update_config = SectorUpdateConfig::from_porep_config(&config);
    let cache = work_dir.join("update-cache");
    fs::create_dir_all(&cache)
        .map_err(|e| FilecoinError::io(format!("creating {}", cache.display()), e))?;
    let staged = work_dir.join("update-staged");
    let replica = work_dir.join("update-replica");

    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let unpadded = UnpaddedBytesAmount::from(PaddedBytesAmount(sector.registered.size.bytes()));
    let mut data = vec![0u8; u64::from(unpadded) as usize];
    rng.fill_bytes(&mut data);
    let staged_file = File::create(&staged)
        .map_err(|e| FilecoinError::io(format!("creating {}", staged.display()), e))?;
    let (piece, _) =
        add_piece(Cursor::new(&data), staged_file, unpadded, &[]).map_err(e("add piece"))?;
    // filecoin-proofs encodes into a file of the sector key's size.
    File::create(&replica)
        .and_then(|f| f.set_len(sector.registered.size.bytes()))
        .map_err(|e| FilecoinError::io(format!("creating {}", replica.display()), e))?;
    let encoded = encode_into::<Tree>(
        &update_config,
        &replica,
        &cache,
        &sector.replica,
        &sector.cache,
        &staged,
        &[piece],
    )
    .map_err(e("encoding the update"))?;
    let vanilla = generate_partition_proofs::<Tree>(
        update_config,
        sector.comm_r,
        encoded.comm_r_new,
        encoded.comm_d_new,
        &sector.replica,
        &sector.cache,
        &replica,
        &cache,
    )
    .map_err(e("SnapDeals vanilla proofs"))?;
    Ok((
        UpdatedSector {
            comm_r_new: encoded.comm_r_new,
            comm_d_new: encoded.comm_d_new,
            replica,
            cache,
        },
        vanilla,
    ))
}

fn snap_inner<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    prover: &FilecoinProver,
    sector: &SealedSector,
    work_dir: &Path,
    seed: u64,
) -> Result<(UpdatedSector, UpdateProof)> {
    let config = sector.registered.porep_config()?;
    let (updated, vanilla) = snap_encode::<Tree>(sector, work_dir, seed)?;
    let proof = generate_empty_sector_update_proof_with_vanilla::<Tree>(
        prover,
        &config,
        vanilla,
        sector.comm_r,
        updated.comm_r_new,
        updated.comm_d_new,
    )?;
    Ok((updated, proof))
}
