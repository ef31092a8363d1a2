//! Fiat-Shamir: Plonky3's duplex challenger over Poseidon2 (width 16, rate
//! 8) on BabyBear. Prover and verifier feed it the same messages in the same
//! order; challenges are extension elements.

use p3_baby_bear::{default_babybear_poseidon2_16, Poseidon2BabyBear};
use p3_challenger::{CanObserve, DuplexChallenger, FieldChallenger};
use p3_field::PrimeCharacteristicRing;

use crate::{Ext, Felt, TowerKind};

type Challenger = DuplexChallenger<Felt, Poseidon2BabyBear<16>, 16, 8>;

/// One proof's transcript.
pub struct Transcript {
    ch: Challenger,
}

/// "GKR-TOWER" as field elements: a domain separator.
const LABEL: [u32; 9] = [71, 75, 82, 45, 84, 79, 87, 69, 82];

impl Transcript {
    /// A transcript bound to the statement's shape: kind and size.
    pub fn new(kind: TowerKind, log_size: u32) -> Self {
        let mut ch = Challenger::new(default_babybear_poseidon2_16());
        for c in LABEL {
            ch.observe(Felt::from_u32(c));
        }
        ch.observe(Felt::from_u32(match kind {
            TowerKind::Product => 0,
            TowerKind::Fraction => 1,
        }));
        ch.observe(Felt::from_u32(log_size));
        Self { ch }
    }

    pub fn observe(&mut self, x: Ext) {
        self.ch.observe_algebra_element(x);
    }

    pub fn observe_all(&mut self, xs: &[Ext]) {
        for &x in xs {
            self.observe(x);
        }
    }

    pub fn challenge(&mut self) -> Ext {
        self.ch.sample_algebra_element::<Ext>()
    }
}
