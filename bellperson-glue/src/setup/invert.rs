//! Batch inversion (Montgomery's trick): n inverses for one inversion and
//! three multiplications each, used by the Lagrange evaluation and by the
//! affine additions of the fixed-base multiplication.

use ff::Field;

/// Replaces every element of `v` by its inverse. Every element must be
/// non-zero (callers guarantee it); `scratch` is reused between calls.
pub(crate) fn batch_invert<F: Field>(v: &mut [F], scratch: &mut Vec<F>) {
    if v.is_empty() {
        return;
    }
    scratch.clear();
    let mut acc = F::ONE;
    for x in v.iter() {
        scratch.push(acc);
        acc *= x;
    }
    // The product of non-zero elements of a field is non-zero.
    let mut inv = acc.invert().unwrap_or(F::ZERO);
    for (x, before) in v.iter_mut().zip(scratch.iter()).rev() {
        let next = inv * *x;
        *x = inv * before;
        inv = next;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use blstrs::Fp;
    use rand_chacha::ChaCha20Rng;
    use rand_core::SeedableRng;

    #[test]
    fn inverts_every_element() {
        let mut rng = ChaCha20Rng::seed_from_u64(7);
        let orig: Vec<Fp> = (0..33).map(|_| Fp::random(&mut rng)).collect();
        let mut v = orig.clone();
        batch_invert(&mut v, &mut Vec::new());
        for (a, b) in orig.iter().zip(&v) {
            assert_eq!(*a * b, Fp::ONE);
        }
    }
}
