//! Where a job's blinding factors (r, s of each proof) come from: fresh
//! randomness, or a seed that makes a job's proofs reproducible.

use cuda_prover_pipeline::Blinding;
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;

/// Where the blinding factors of a job come from.
#[derive(Debug, Clone, Copy)]
pub enum BlindingSource {
    /// Fresh randomness from the operating system.
    Random,
    /// Reproducible: partition k uses a generator seeded with (seed, k).
    Seeded(u64),
}

impl BlindingSource {
    pub fn for_partition(&self, k: usize) -> Blinding {
        let mut rng = match self {
            BlindingSource::Random => ChaCha20Rng::from_entropy(),
            BlindingSource::Seeded(seed) => {
                let mut s = [0u8; 32];
                s[..8].copy_from_slice(&seed.to_le_bytes());
                s[8..16].copy_from_slice(&(k as u64).to_le_bytes());
                ChaCha20Rng::from_seed(s)
            }
        };
        Blinding::random(&mut rng)
    }
}
