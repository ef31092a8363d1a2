//! blstrs types and the core's types share their memory layout (blst's
//! Montgomery-form structs); these casts rely on it, and the tests check it.

use crate::core_api;
use blstrs::{G1Affine, G2Affine, Scalar};

const _: () = assert!(std::mem::size_of::<Scalar>() == std::mem::size_of::<core_api::Fr>());
const _: () = assert!(std::mem::size_of::<G1Affine>() == std::mem::size_of::<core_api::G1Affine>());
const _: () = assert!(std::mem::size_of::<G2Affine>() == std::mem::size_of::<core_api::G2Affine>());
const _: () = assert!(std::mem::align_of::<Scalar>() == std::mem::align_of::<core_api::Fr>());
const _: () =
    assert!(std::mem::align_of::<G1Affine>() == std::mem::align_of::<core_api::G1Affine>());
const _: () =
    assert!(std::mem::align_of::<G2Affine>() == std::mem::align_of::<core_api::G2Affine>());

pub(crate) fn fr_slice(s: &[Scalar]) -> &[core_api::Fr] {
    // SAFETY: Scalar is repr(transparent) over blst_fr, which is cp_fr.
    unsafe { std::slice::from_raw_parts(s.as_ptr() as *const core_api::Fr, s.len()) }
}

/// The Montgomery limbs of a scalar (equal scalars have equal limbs).
#[inline]
pub(crate) fn limbs(s: &Scalar) -> &[u64; 4] {
    // SAFETY: Scalar is repr(transparent) over blst_fr { l: [u64; 4] }.
    unsafe { &*(s as *const Scalar as *const [u64; 4]) }
}

pub(crate) fn fr(s: &Scalar) -> core_api::Fr {
    fr_slice(std::slice::from_ref(s))[0]
}

pub(crate) fn g1_slice(s: &[G1Affine]) -> &[core_api::G1Affine] {
    // SAFETY: G1Affine is repr(transparent) over blst_p1_affine.
    unsafe { std::slice::from_raw_parts(s.as_ptr() as *const core_api::G1Affine, s.len()) }
}

pub(crate) fn g2_slice(s: &[G2Affine]) -> &[core_api::G2Affine] {
    // SAFETY: G2Affine is repr(transparent) over blst_p2_affine.
    unsafe { std::slice::from_raw_parts(s.as_ptr() as *const core_api::G2Affine, s.len()) }
}

pub(crate) fn g1(p: &G1Affine) -> core_api::G1Affine {
    g1_slice(std::slice::from_ref(p))[0]
}

pub(crate) fn g2(p: &G2Affine) -> core_api::G2Affine {
    g2_slice(std::slice::from_ref(p))[0]
}

/// A point from the core. The core only returns points it computed with
/// blst, so they are valid; the check costs little next to a proof and
/// turns a broken invariant into an error rather than a bad proof.
pub(crate) fn to_g1(p: &core_api::G1Affine) -> Option<G1Affine> {
    // SAFETY: same layout; validity checked below.
    let q: G1Affine = unsafe { std::mem::transmute_copy(p) };
    bool::from(q.is_on_curve()).then_some(q)
}

pub(crate) fn to_g2(p: &core_api::G2Affine) -> Option<G2Affine> {
    let q: G2Affine = unsafe { std::mem::transmute_copy(p) };
    bool::from(q.is_on_curve()).then_some(q)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ff::Field;
    use group::prime::PrimeCurveAffine;

    #[test]
    fn layouts_match_blst() {
        // Montgomery form of 1 is R mod r.
        let one = fr(&Scalar::ONE);
        assert_eq!(
            one.l,
            [
                0x00000001fffffffe,
                0x5884b7fa00034802,
                0x998c4fefecbc4ff5,
                0x1824b159acc5056f
            ]
        );
        let g = G1Affine::generator();
        let back = to_g1(&g1(&g)).unwrap();
        assert_eq!(back, g);
        let h = G2Affine::generator();
        assert_eq!(to_g2(&g2(&h)).unwrap(), h);
    }
}
