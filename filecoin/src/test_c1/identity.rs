//! Who and what a test C1's sector is, drawn from its `--seed`: prover
//! id, sector id, ticket and challenge seed.

use crate::fixture::seeded::{field_bytes, sector_number, stream};

/// Who and what the fixture's sector is, drawn from the seed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Identity {
    pub prover_id: [u8; 32],
    pub sector_id: u64,
    pub ticket: [u8; 32],
    /// The interactive PoRep challenge seed (on chain, the randomness drawn
    /// after the pre-commit; here the fixture's own choice).
    pub seed: [u8; 32],
}

impl Identity {
    /// The same seed gives the same identity: the seed's ChaCha20 stream,
    /// 32-byte values as field elements (as lotus draws tickets).
    pub fn from_seed(seed: u64) -> Self {
        let mut rng = stream(seed);
        let prover_id = field_bytes(&mut rng);
        let sector_id = sector_number(&mut rng);
        let ticket = field_bytes(&mut rng);
        let seed = field_bytes(&mut rng);
        Self {
            prover_id,
            sector_id,
            ticket,
            seed,
        }
    }
}
