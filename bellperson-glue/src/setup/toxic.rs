//! The toxic waste of a TEST key, drawn from a seed: whoever knows the seed
//! can forge proofs, which is why such a key is for tests only.

use blstrs::Scalar;
use ff::Field;
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;

use super::qap::Domain;

/// alpha, beta, gamma, delta and tau of one key.
pub(crate) struct Toxic {
    pub(crate) alpha: Scalar,
    pub(crate) beta: Scalar,
    pub(crate) gamma: Scalar,
    pub(crate) delta: Scalar,
    pub(crate) tau: Scalar,
}

impl Toxic {
    /// Draws them in this order from ChaCha20 seeded with `seed`, drawing
    /// again any zero value and any tau inside the domain (where the QAP
    /// would vanish): the same seed gives the same key everywhere.
    pub(crate) fn from_seed(seed: [u8; 32], domain: &Domain) -> Self {
        let mut rng = ChaCha20Rng::from_seed(seed);
        let mut nonzero = || loop {
            let s = Scalar::random(&mut rng);
            if !bool::from(s.is_zero()) {
                return s;
            }
        };
        let alpha = nonzero();
        let beta = nonzero();
        let gamma = nonzero();
        let delta = nonzero();
        let tau = loop {
            let t = nonzero();
            if !bool::from(domain.vanishing_at(&t).is_zero()) {
                break t;
            }
        };
        Self {
            alpha,
            beta,
            gamma,
            delta,
            tau,
        }
    }
}
