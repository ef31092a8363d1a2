//! The field types (Plonky3's BabyBear and its degree-4 extension) and the
//! conversions to and from the core's [`Bb4`] (canonical coefficients, or
//! the Montgomery words an [`Ext`] already is).

use p3_baby_bear::BabyBear;
use p3_field::extension::BinomialExtensionField;
use p3_field::{BasedVectorSpace, PrimeCharacteristicRing, PrimeField32};
use rand::Rng;

use crate::Bb4;

/// BabyBear.
pub type Felt = BabyBear;
/// Its degree-4 extension, `X^4 = 11`.
pub type Ext = BinomialExtensionField<BabyBear, 4>;

// Plonky3's 0.4 line stores BabyBear as its Montgomery word (R = 2^32,
// below p; `MontyField31` is `repr(transparent)` over a u32 and a
// PhantomData) and the extension as `[BabyBear; 4]`
// (`BinomialExtensionField` is `repr(transparent)`): an `Ext` is four
// Montgomery words, the core's `CP_BB4_MONTGOMERY`. `tests/field.rs` checks
// the words against the canonical coefficients.
const _: () = assert!(std::mem::size_of::<Ext>() == std::mem::size_of::<Bb4>());
const _: () = assert!(std::mem::align_of::<Ext>() == std::mem::align_of::<Bb4>());

/// The Montgomery words of `v` ([`crate::Bb4Form::Montgomery`]), without a
/// copy: what the core takes for a tower's input.
pub fn montgomery_words(v: &[Ext]) -> &[Bb4] {
    // SAFETY: Ext has the size and alignment of [u32; 4] (asserted above)
    // and is, through two repr(transparent) layers, four u32 words; every
    // bit pattern is a valid u32, the slice is only read, and the returned
    // borrow keeps `v` alive and unchanged.
    unsafe { std::slice::from_raw_parts(v.as_ptr().cast::<Bb4>(), v.len()) }
}

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
