//! Polynomial helpers of the verifier (and the tests): the round
//! polynomial from its values at 0..=d, eq(r, s), and a multilinear
//! extension's value at a point. Points list the top index bit first.

use p3_field::{Field, PrimeCharacteristicRing};
use rayon::prelude::*;

use crate::Ext;

/// g(x) for the polynomial of degree < evals.len() with g(i) = evals[i].
pub fn interpolate(evals: &[Ext], x: Ext) -> Ext {
    let n = evals.len();
    let mut acc = Ext::ZERO;
    for (i, &yi) in evals.iter().enumerate() {
        let mut num = Ext::ONE;
        let mut den = Ext::ONE;
        for j in 0..n {
            if j != i {
                num *= x - Ext::from_u32(j as u32);
                den *= Ext::from_u32(i as u32) - Ext::from_u32(j as u32);
            }
        }
        acc += yi * num * den.inverse();
    }
    acc
}

/// prod_k (r_k s_k + (1 - r_k)(1 - s_k)).
pub fn eq_eval(r: &[Ext], s: &[Ext]) -> Ext {
    r.iter().zip(s).fold(Ext::ONE, |acc, (&a, &b)| {
        acc * (a * b + (Ext::ONE - a) * (Ext::ONE - b))
    })
}

/// log2 of the entries one task of [`mle_eval`] and [`mle_eval_drawn`]
/// folds on its own.
pub const MLE_CHUNK_LOG: usize = 14;

/// The multilinear extension of `values` (2^point.len() entries, index bit
/// point.len() - 1 first) at `point`. Large tables are split into chunks of
/// 2^14 consecutive entries (a fixed value of the top variables), each
/// chunk folded over the low variables on its own thread, then the chunks'
/// values over the top variables: the same value as folding one variable
/// at a time, since field sums are exact.
pub fn mle_eval(values: &[Ext], point: &[Ext]) -> Ext {
    assert_eq!(
        values.len(),
        1usize << point.len(),
        "mle_eval: table and point sizes differ"
    );
    if point.len() <= MLE_CHUNK_LOG {
        return fold_all(values, point);
    }
    let (top, low) = point.split_at(point.len() - MLE_CHUNK_LOG);
    let chunks: Vec<Ext> = values
        .par_chunks(1 << MLE_CHUNK_LOG)
        .map(|c| fold_all(c, low))
        .collect();
    fold_all(&chunks, top)
}

/// [`mle_eval`] of a table that is never held whole: `draw(c, out)` writes
/// chunk c (entries c * len .. (c + 1) * len, len = out.len() = 2^min(14,
/// point.len())) into `out`, and each chunk is folded as soon as it is
/// drawn, on every core.
pub fn mle_eval_drawn<F>(point: &[Ext], draw: F) -> Ext
where
    F: Fn(usize, &mut [Ext]) + Sync,
{
    let low_vars = point.len().min(MLE_CHUNK_LOG);
    let (top, low) = point.split_at(point.len() - low_vars);
    let chunks: Vec<Ext> = (0..1usize << top.len())
        .into_par_iter()
        .map_init(
            || vec![Ext::ZERO; 1 << low_vars],
            |buf, c| {
                draw(c, buf);
                fold_all(buf, low)
            },
        )
        .collect();
    fold_all(&chunks, top)
}

// Binds the variables of `point` one after the other (the top one first).
fn fold_all(values: &[Ext], point: &[Ext]) -> Ext {
    let Some((&r, rest)) = point.split_first() else {
        return values[0];
    };
    let half = values.len() / 2;
    let (lo, hi) = values.split_at(half);
    let mut v: Vec<Ext> = lo.iter().zip(hi).map(|(&a, &b)| a + r * (b - a)).collect();
    for &r in rest {
        let half = v.len() / 2;
        let (lo, hi) = v.split_at_mut(half);
        for (a, &b) in lo.iter_mut().zip(hi.iter()) {
            *a += r * (b - *a);
        }
        v.truncate(half);
    }
    v[0]
}
