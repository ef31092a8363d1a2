//! Fixed-base multiplication: a generator times many scalars, which is
//! what every point of a key is.
//!
//! A table holds `d * 2^(16k) * G` for the 16 windows `k` and the digits
//! `d = 1..=2^15`; a scalar is cut into 16 signed digits, so a product is at
//! most 16 additions of table points. The additions are affine and made for
//! a batch of scalars at once, so that one inversion serves the whole batch
//! (about six field multiplications an addition instead of eleven or more in
//! projective coordinates). Doublings and opposite points are handled where
//! a partial sum meets them; the result is the exact point, the same for
//! any batch size and thread count.

use blstrs::{Fp, Fp2, G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use ff::{Field, PrimeField};
use group::prime::PrimeCurveAffine;
use group::{Curve, Group};
use rayon::prelude::*;

use super::invert::batch_invert;

/// Bits of a window.
const WINDOW_BITS: usize = 16;
/// Windows of a scalar: 16 signed 16-bit digits cover any scalar below
/// 2^255 (the group order is below it), with no carry out of the last.
const WINDOWS: usize = 16;
/// Table points per window: the digits 1..=2^15.
const HALF: usize = 1 << (WINDOW_BITS - 1);
/// Scalars whose additions share one inversion.
const BATCH: usize = 1024;

/// A curve group whose generator is multiplied: G1 or G2 of BLS12-381.
pub(crate) trait FixedBaseGroup {
    type Base: Field;
    type Affine: PrimeCurveAffine + Send + Sync;
    type Projective: Group<Scalar = Scalar> + Curve<AffineRepr = Self::Affine> + Send + Sync;
    /// Bytes of one uncompressed point.
    const UNCOMPRESSED: usize;
    fn xy(p: &Self::Affine) -> (Self::Base, Self::Base);
    fn from_xy(x: Self::Base, y: Self::Base) -> Self::Affine;
    fn write_uncompressed(p: &Self::Affine, out: &mut [u8]);
}

pub(crate) struct G1;
pub(crate) struct G2;

impl FixedBaseGroup for G1 {
    type Base = Fp;
    type Affine = G1Affine;
    type Projective = G1Projective;
    const UNCOMPRESSED: usize = 96;
    fn xy(p: &G1Affine) -> (Fp, Fp) {
        (p.x(), p.y())
    }
    fn from_xy(x: Fp, y: Fp) -> G1Affine {
        G1Affine::from_raw_unchecked(x, y, false)
    }
    fn write_uncompressed(p: &G1Affine, out: &mut [u8]) {
        out.copy_from_slice(&p.to_uncompressed());
    }
}

impl FixedBaseGroup for G2 {
    type Base = Fp2;
    type Affine = G2Affine;
    type Projective = G2Projective;
    const UNCOMPRESSED: usize = 192;
    fn xy(p: &G2Affine) -> (Fp2, Fp2) {
        (p.x(), p.y())
    }
    fn from_xy(x: Fp2, y: Fp2) -> G2Affine {
        G2Affine::from_raw_unchecked(x, y, false)
    }
    fn write_uncompressed(p: &G2Affine, out: &mut [u8]) {
        out.copy_from_slice(&p.to_uncompressed());
    }
}

/// The precomputed multiples of one group's generator.
pub(crate) struct FixedBase<G: FixedBaseGroup> {
    /// `(x, y)` of `(j + 1) * 2^(16k) * G` at `k * HALF + j`.
    table: Vec<(G::Base, G::Base)>,
}

/// Below this many points a key section's products are plain scalar
/// multiplications: the table (16 * 2^15 points) costs about what 1,800
/// plain products cost.
pub(crate) const TABLE_FROM_POINTS: usize = 1 << 12;

impl<G: FixedBaseGroup> FixedBase<G> {
    /// The table when `points` products are to come and it pays
    /// ([`TABLE_FROM_POINTS`]), else none: plain multiplications, the same
    /// points.
    pub(crate) fn for_points(points: usize) -> Self {
        if points >= TABLE_FROM_POINTS {
            Self::new()
        } else {
            Self { table: Vec::new() }
        }
    }

    /// Builds the table (16 * 2^15 points) on every core.
    pub(crate) fn new() -> Self {
        let windows: Vec<Vec<(G::Base, G::Base)>> = (0..WINDOWS)
            .into_par_iter()
            .map(|k| {
                let mut base = G::Projective::generator();
                for _ in 0..k * WINDOW_BITS {
                    base = base.double();
                }
                let mut multiples = Vec::with_capacity(HALF);
                let mut p = base;
                for _ in 0..HALF {
                    multiples.push(p);
                    p += base;
                }
                let mut affine = vec![G::Affine::identity(); HALF];
                G::Projective::batch_normalize(&multiples, &mut affine);
                affine.iter().map(G::xy).collect()
            })
            .collect();
        Self {
            table: windows.into_iter().flatten().collect(),
        }
    }

    /// Writes `scalar_i * G` uncompressed into `out` (`UNCOMPRESSED` bytes
    /// each), on every core.
    pub(crate) fn mul_into(&self, scalars: &[Scalar], out: &mut [u8]) {
        assert_eq!(out.len(), scalars.len() * G::UNCOMPRESSED);
        scalars
            .par_chunks(BATCH)
            .zip(out.par_chunks_mut(BATCH * G::UNCOMPRESSED))
            .for_each(|(s, o)| self.mul_batch(s, o));
    }

    /// `scalar * G` as an affine point (for a few points).
    #[cfg(test)]
    pub(crate) fn mul_one(&self, scalar: &Scalar) -> G::Affine {
        let mut acc = Accumulators::<G>::new(1);
        acc.run(self, &[digits(scalar)]);
        acc.point(0)
    }

    fn mul_batch(&self, scalars: &[Scalar], out: &mut [u8]) {
        if self.table.is_empty() {
            let products: Vec<G::Projective> = scalars
                .iter()
                .map(|s| G::Projective::generator() * s)
                .collect();
            let mut affine = vec![G::Affine::identity(); products.len()];
            G::Projective::batch_normalize(&products, &mut affine);
            for (p, o) in affine.iter().zip(out.chunks_exact_mut(G::UNCOMPRESSED)) {
                G::write_uncompressed(p, o);
            }
            return;
        }
        let d: Vec<[i32; WINDOWS]> = scalars.iter().map(digits).collect();
        let mut acc = Accumulators::<G>::new(scalars.len());
        acc.run(self, &d);
        for (i, o) in out.chunks_exact_mut(G::UNCOMPRESSED).enumerate() {
            G::write_uncompressed(&acc.point(i), o);
        }
    }

    fn entry(&self, window: usize, digit: i32) -> (G::Base, G::Base) {
        let (x, y) = self.table[window * HALF + digit.unsigned_abs() as usize - 1];
        if digit < 0 {
            (x, -y)
        } else {
            (x, y)
        }
    }
}

/// The signed digits of a scalar: `sum d_k 2^(16k)`, each in (-2^15, 2^15].
fn digits(s: &Scalar) -> [i32; WINDOWS] {
    let repr = s.to_repr();
    let bytes = repr.as_ref();
    let mut out = [0i32; WINDOWS];
    let mut carry = 0i32;
    for (k, d) in out.iter_mut().enumerate() {
        let raw = i32::from(u16::from_le_bytes([bytes[2 * k], bytes[2 * k + 1]])) + carry;
        if raw > HALF as i32 {
            *d = raw - (1 << WINDOW_BITS);
            carry = 1;
        } else {
            *d = raw;
            carry = 0;
        }
    }
    // A canonical scalar is below 2^255, so the last digit took the carry.
    debug_assert_eq!(carry, 0);
    out
}

/// The partial sums of one batch, affine, `None` for the identity.
struct Accumulators<G: FixedBaseGroup> {
    sums: Vec<Option<(G::Base, G::Base)>>,
}

/// One pending affine addition: `sums[index] + (x2, y2)` with the slope
/// `num / den`.
struct Pending<F> {
    index: usize,
    x2: F,
    num: F,
}

impl<G: FixedBaseGroup> Accumulators<G> {
    fn new(n: usize) -> Self {
        Self {
            sums: vec![None; n],
        }
    }

    fn run(&mut self, table: &FixedBase<G>, digits: &[[i32; WINDOWS]]) {
        let mut pending: Vec<Pending<G::Base>> = Vec::with_capacity(digits.len());
        let mut dens: Vec<G::Base> = Vec::with_capacity(digits.len());
        let mut scratch = Vec::with_capacity(digits.len());
        for k in 0..WINDOWS {
            pending.clear();
            dens.clear();
            for (i, d) in digits.iter().enumerate() {
                if d[k] == 0 {
                    continue;
                }
                let (x2, y2) = table.entry(k, d[k]);
                match self.sums[i] {
                    None => self.sums[i] = Some((x2, y2)),
                    Some((x1, y1)) if x1 == x2 => {
                        if y1 == y2 {
                            // Doubling: slope 3x^2 / 2y (y is never 0 in a
                            // group of odd order).
                            let xx = x1.square();
                            pending.push(Pending {
                                index: i,
                                x2,
                                num: xx.double() + xx,
                            });
                            dens.push(y1.double());
                        } else {
                            self.sums[i] = None;
                        }
                    }
                    Some((x1, y1)) => {
                        pending.push(Pending {
                            index: i,
                            x2,
                            num: y2 - y1,
                        });
                        dens.push(x2 - x1);
                    }
                }
            }
            batch_invert(&mut dens, &mut scratch);
            for (p, inv) in pending.iter().zip(&dens) {
                // Only additions with a partial sum present were queued.
                if let Some((x1, y1)) = self.sums[p.index] {
                    let lambda = p.num * inv;
                    let x3 = lambda.square() - x1 - p.x2;
                    let y3 = lambda * (x1 - x3) - y1;
                    self.sums[p.index] = Some((x3, y3));
                }
            }
        }
    }

    fn point(&self, i: usize) -> G::Affine {
        match self.sums[i] {
            Some((x, y)) => G::from_xy(x, y),
            None => G::Affine::identity(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_chacha::ChaCha20Rng;
    use rand_core::SeedableRng;

    fn check<G: FixedBaseGroup>()
    where
        G::Affine: PartialEq + std::fmt::Debug,
        G::Projective: std::ops::Mul<Scalar, Output = G::Projective>,
    {
        for fb in [FixedBase::<G>::new(), FixedBase::<G>::for_points(1)] {
            let mut rng = ChaCha20Rng::seed_from_u64(3);
            let mut scalars: Vec<Scalar> = (0..2100).map(|_| Scalar::random(&mut rng)).collect();
            // Edge cases: zero, one, minus one, small values, a digit of 2^15
            // exactly, and the order minus small values.
            scalars.extend([
                Scalar::ZERO,
                Scalar::ONE,
                -Scalar::ONE,
                Scalar::from(2u64),
                Scalar::from(1u64 << 15),
                Scalar::from((1u64 << 15) + 1),
                Scalar::from(1u64 << 16),
                Scalar::from(u64::MAX),
                -Scalar::from(1u64 << 16),
            ]);
            let mut out = vec![0u8; scalars.len() * G::UNCOMPRESSED];
            fb.mul_into(&scalars, &mut out);
            for (s, o) in scalars.iter().zip(out.chunks_exact(G::UNCOMPRESSED)) {
                let expect = (G::Projective::generator() * *s).to_affine();
                let mut e = vec![0u8; G::UNCOMPRESSED];
                G::write_uncompressed(&expect, &mut e);
                assert_eq!(o, &e[..], "scalar {s:?}");
                if !fb.table.is_empty() {
                    assert_eq!(fb.mul_one(s), expect);
                }
            }
        }
    }

    #[test]
    fn g1_matches_scalar_multiplication() {
        check::<G1>();
    }

    #[test]
    fn g2_matches_scalar_multiplication() {
        check::<G2>();
    }

    #[test]
    fn digits_recompose() {
        let mut rng = ChaCha20Rng::seed_from_u64(5);
        for _ in 0..200 {
            let s = Scalar::random(&mut rng);
            let d = digits(&s);
            let mut acc = Scalar::ZERO;
            let base = Scalar::from(1u64 << WINDOW_BITS);
            for &dk in d.iter().rev() {
                acc *= base;
                let m = Scalar::from(u64::from(dk.unsigned_abs()));
                acc += if dk < 0 { -m } else { m };
            }
            assert_eq!(acc, s);
        }
    }
}
