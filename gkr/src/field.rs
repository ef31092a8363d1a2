//! The field types (Plonky3's BabyBear and its degree-4 extension) and the
//! conversions to and from the core's [`Bb4`] (canonical coefficients).

use p3_baby_bear::BabyBear;
use p3_field::extension::BinomialExtensionField;
use p3_field::{BasedVectorSpace, PrimeCharacteristicRing, PrimeField32};
use rand::Rng;

use crate::Bb4;

/// BabyBear.
pub type Felt = BabyBear;
/// Its degree-4 extension, `X^4 = 11`.
pub type Ext = BinomialExtensionField<BabyBear, 4>;

pub fn to_bb4(x: &Ext) -> Bb4 {
    let c: &[Felt] = BasedVectorSpace::<Felt>::as_basis_coefficients_slice(x);
    [
        c[0].as_canonical_u32(),
        c[1].as_canonical_u32(),
        c[2].as_canonical_u32(),
        c[3].as_canonical_u32(),
    ]
}

/// Canonical coefficients (reduced mod p when not).
pub fn from_bb4(v: &Bb4) -> Ext {
    Ext::from_basis_coefficients_fn(|i| Felt::from_u32(v[i]))
}

/// A uniformly random extension element.
pub fn random_ext(rng: &mut impl Rng) -> Ext {
    Ext::from_basis_coefficients_fn(|_| Felt::from_u32(rng.gen_range(0..Felt::ORDER_U32)))
}

/// A random nonzero extension element (denominators).
pub fn random_nonzero_ext(rng: &mut impl Rng) -> Ext {
    loop {
        let x = random_ext(rng);
        if x != Ext::ZERO {
            return x;
        }
    }
}
