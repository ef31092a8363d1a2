//! Who and what a test PoSt proves, drawn from its `--seed`: the prover
//! id, the challenge randomness, and each sector's number and stand-in
//! stream.

use std::collections::BTreeMap;

use rand::RngCore;

use crate::fixture::seeded::{field_bytes, sector_number, stream, StandIns};

/// Where a test PoSt's stand-ins are drawn (apart from a test C1's of the
/// same seed).
const STAND_INS: &str = "cuda-prover test-post stand-in";

/// One sector of the fixture: its number and the source of its replica
/// tree's nodes and comm_c.
#[derive(Debug, Clone, Copy)]
pub struct SeededSector {
    pub sector_id: u64,
    pub stand_ins: StandIns,
}

/// The prover, the randomness and the sectors of a test PoSt.
#[derive(Debug, Clone)]
pub struct PostIdentity {
    pub prover_id: [u8; 32],
    /// The PoSt challenge randomness (on chain, drawn from the beacon after
    /// the sectors were committed; here the fixture's own choice).
    pub randomness: [u8; 32],
    /// `count` sectors with distinct numbers, in ascending order (the
    /// order filecoin-proofs' Window PoSt takes its replicas in).
    pub sectors: Vec<SeededSector>,
}

impl PostIdentity {
    /// The same seed and count give the same identity: the seed's
    /// ChaCha20 stream gives the prover id, the randomness, then a number
    /// and a stand-in seed per sector (a number drawn again is skipped).
    /// `count` is at most 1,000,000, the numbers there are.
    pub fn from_seed(seed: u64, count: usize) -> Self {
        let mut rng = stream(seed);
        let prover_id = field_bytes(&mut rng);
        let randomness = field_bytes(&mut rng);
        let mut sectors = BTreeMap::new();
        while sectors.len() < count {
            let sector_id = sector_number(&mut rng);
            let sector_seed = rng.next_u64();
            sectors.entry(sector_id).or_insert(sector_seed);
        }
        Self {
            prover_id,
            randomness,
            sectors: sectors
                .into_iter()
                .map(|(sector_id, s)| SeededSector {
                    sector_id,
                    stand_ins: StandIns::new(STAND_INS, s),
                })
                .collect(),
        }
    }
}
