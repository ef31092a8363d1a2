//! Test PoSt inputs: valid Winning or Window PoSt vanilla proofs for
//! sectors of any size (2 KiB to 64 GiB), made in seconds without sealing.
//!
//! **These are test fixtures, like the TEST parameters and `test_c1`, and
//! work only because the fixture picks its own randomness.** On chain the
//! PoSt randomness comes from the beacon after the sectors were committed,
//! so a prover must hold every replica to answer whichever leaves it
//! challenges; that is what makes a PoSt evidence of storage. Here the
//! randomness is drawn first, the challenges follow from filecoin-proofs'
//! own `generate_fallback_sector_challenges` for it (so they are the ones
//! the real prover and verifier derive), and only what they open is
//! computed: each sector's replica tree is a sparse tree of the sector's
//! real shape holding the challenged leaves, every other node a seeded
//! stand-in, and comm_c a stand-in. The vanilla proofs pass
//! storage-proofs' verifier and the PoSt circuit like a sealed sector's,
//! but no replica lies behind comm_r: anyone can make such a PoSt input for
//! a seed of their choosing. Use them to exercise Winning and Window PoSt
//! (a 32 GiB WinningPoSt beside a 32 GiB C2, say) on machines that never
//! sealed.
//!
//! One concept per file: `identity` (prover id, randomness, sectors from
//! the seed), `sector` (one sector's replica tree, comm_r and vanilla
//! proof). The stand-ins and sparse trees are `crate::fixture`'s, shared
//! with `test_c1`; the result is a `crate::post_input::PostInput`, whose
//! JSON file `test-post` writes.

mod identity;
mod sector;

use std::time::{Duration, Instant};

use filecoin_proofs::{generate_fallback_sector_challenges, MerkleTreeTrait, PoStConfig};
use rayon::prelude::*;
use storage_proofs_core::sector::SectorId;

use crate::config::{post_config, PostKind};
use crate::error::{FilecoinError, Result};
use crate::post_input::{PostInput, PostSector};
use crate::sector::SectorSize;
use crate::vanilla::{encode, verify_post_vanilla};
use crate::with_sector_shape;
use identity::PostIdentity;

/// The most sectors one test PoSt holds (three 32 GiB Window PoSt
/// partitions of 2,349 sectors fit).
pub const MAX_SECTORS: usize = 8192;

/// A test PoSt input and what it took to make.
#[derive(Debug, Clone)]
pub struct TestPost {
    /// Kind, size, seed, randomness, prover id, sectors and their vanilla
    /// proofs (filecoin-proofs' `FallbackPoStSectorProof` in bincode).
    pub input: PostInput,
    /// Challenged leaves per sector (66 for Winning, 10 for Window PoSt).
    pub challenges_per_sector: usize,
    /// Building the proofs, then the check of their bytes.
    pub build: Duration,
    pub verify: Duration,
}

/// The test PoSt of `sectors` sectors of `size`, drawn from `seed` (the
/// same seed gives the same bytes). Winning PoSt proves one sector; Window
/// PoSt 1 to [`MAX_SECTORS`], in as many partitions as they fill. Its
/// vanilla proofs, as bytes, have passed the checks filecoin-proofs makes
/// before it proves a PoSt over them (storage-proofs' vanilla verifier of
/// every partition) before it is returned.
pub fn generate_test_post(
    kind: PostKind,
    size: SectorSize,
    seed: u64,
    sectors: usize,
) -> Result<TestPost> {
    let config = post_config(size, kind)?;
    match kind {
        PostKind::Winning if sectors != config.sector_count => {
            return Err(FilecoinError::Input(format!(
                "a winning PoSt proves {} sector(s), not {sectors}",
                config.sector_count
            )))
        }
        PostKind::Window if sectors == 0 || sectors > MAX_SECTORS => {
            return Err(FilecoinError::Input(format!(
                "a test window PoSt holds 1 to {MAX_SECTORS} sectors, not {sectors}"
            )))
        }
        _ => {}
    }
    with_sector_shape!(size, generate_typed, kind, size, &config, seed, sectors)
}

fn generate_typed<Tree: 'static + MerkleTreeTrait>(
    kind: PostKind,
    size: SectorSize,
    config: &PoStConfig,
    seed: u64,
    count: usize,
) -> Result<TestPost> {
    let t_build = Instant::now();
    let identity = PostIdentity::from_seed(seed, count);
    let ids: Vec<SectorId> = identity
        .sectors
        .iter()
        .map(|s| SectorId::from(s.sector_id))
        .collect();
    // filecoin-proofs' own challenges for the randomness, as a PoSt
    // worker asks for them before it reads its replicas.
    let challenges = generate_fallback_sector_challenges::<Tree>(
        config,
        &identity.randomness,
        &ids,
        identity.prover_id,
    )
    .map_err(|e| FilecoinError::proofs("PoSt challenges", e))?;
    let proofs = identity
        .sectors
        .par_iter()
        .map(|s| {
            let mine = challenges
                .get(&SectorId::from(s.sector_id))
                .ok_or_else(|| {
                    crate::fixture::fixture_error(
                        "test PoSt",
                        format!("no challenges for sector {}", s.sector_id),
                    )
                })?;
            let proof = sector::vanilla_proof::<Tree>(size, s, mine)?;
            let mut comm_r = [0u8; 32];
            comm_r.copy_from_slice(AsRef::<[u8]>::as_ref(&proof.comm_r));
            let sector = PostSector {
                sector_id: s.sector_id,
                comm_r,
            };
            Ok((sector, encode(&proof)?))
        })
        .collect::<Result<Vec<_>>>()?;
    let (sectors, vanilla_proofs): (Vec<_>, Vec<_>) = proofs.into_iter().unzip();
    let build = t_build.elapsed();

    let input = PostInput {
        kind,
        size,
        seed: Some(seed),
        randomness: identity.randomness,
        prover_id: identity.prover_id,
        sectors,
        vanilla_proofs,
    };

    // The bytes a caller gets, decoded and checked as a prover checks them.
    let t_verify = Instant::now();
    verify_post_vanilla(&input)?;
    let verify = t_verify.elapsed();
    Ok(TestPost {
        input,
        challenges_per_sector: config.challenge_count,
        build,
        verify,
    })
}
