//! The circuit's QAP at tau: the Lagrange basis of bellperson's evaluation
//! domain evaluated at tau, then every column's `a(tau)`, `b(tau)` and
//! `c(tau)` from the shape's matrices.
//!
//! The domain is bellperson's: the smallest power of two `m` holding every
//! row, with `omega = ROOT_OF_UNITY^(2^(S - log m))`. Its Lagrange basis at
//! tau has the closed form `L_j(tau) = omega^j (tau^m - 1) / (m (tau - omega^j))`,
//! which equals the inverse FFT of tau's powers that bellperson computes.

use blstrs::Scalar;
use ff::{Field, PrimeField};
use rayon::prelude::*;

use super::invert::batch_invert;
use crate::core_api::{COEFF_MINUS_ONE, COEFF_ONE};
use crate::error::{Error, Result};
use crate::shape::{Matrix, ShapeData};

/// The evaluation domain of a circuit of `rows` constraints (its input
/// rows included).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Domain {
    pub(crate) log_size: u32,
    pub(crate) omega: Scalar,
}

impl Domain {
    pub(crate) fn for_rows(rows: usize) -> Result<Self> {
        let log_size = rows.max(1).next_power_of_two().trailing_zeros();
        if log_size >= Scalar::S {
            return Err(Error::Invalid(format!(
                "{rows} constraints need a domain of 2^{log_size}; BLS12-381 has roots of unity up to 2^{}",
                Scalar::S - 1
            )));
        }
        let mut omega = Scalar::ROOT_OF_UNITY;
        for _ in log_size..Scalar::S {
            omega = omega.square();
        }
        Ok(Self { log_size, omega })
    }

    pub(crate) fn size(&self) -> usize {
        1usize << self.log_size
    }

    /// `tau^m - 1`: zero exactly when tau is a point of the domain.
    pub(crate) fn vanishing_at(&self, tau: &Scalar) -> Scalar {
        tau.pow_vartime([self.size() as u64]) - Scalar::ONE
    }

    /// `L_j(tau)` for the first `rows` points (the others multiply no
    /// matrix entry). `tau` must not be a point of the domain.
    pub(crate) fn lagrange_at(&self, tau: &Scalar, rows: usize) -> Vec<Scalar> {
        let m_inv = Scalar::from(self.size() as u64)
            .invert()
            .unwrap_or(Scalar::ZERO);
        let c = self.vanishing_at(tau) * m_inv;
        let mut out = vec![Scalar::ZERO; rows];
        const CHUNK: usize = 1 << 14;
        out.par_chunks_mut(CHUNK)
            .enumerate()
            .for_each_init(Vec::new, |scratch, (n, chunk)| {
                let mut w = self.omega.pow_vartime([(n * CHUNK) as u64]);
                let mut powers = Vec::with_capacity(chunk.len());
                for d in chunk.iter_mut() {
                    powers.push(w);
                    *d = *tau - w;
                    w *= self.omega;
                }
                batch_invert(chunk, scratch);
                for (d, w) in chunk.iter_mut().zip(&powers) {
                    *d *= *w * c;
                }
            });
        out
    }
}

/// Every column's value at tau in one matrix, columns [inputs..., aux...].
fn column_values(m: &Matrix, coeffs: &[Scalar], lagrange: &[Scalar], cols: usize) -> Vec<Scalar> {
    let mut v = vec![Scalar::ZERO; cols];
    for (row, l) in m.row_ptr.windows(2).zip(lagrange) {
        for e in &m.entries[row[0] as usize..row[1] as usize] {
            let t = &mut v[e.col as usize];
            match e.coeff {
                COEFF_ONE => *t += l,
                COEFF_MINUS_ONE => *t -= l,
                k => *t += coeffs[k as usize - 2] * l,
            }
        }
    }
    v
}

/// `a(tau)`, `b(tau)`, `c(tau)` of every column.
pub(crate) struct ColumnValues {
    pub(crate) a: Vec<Scalar>,
    pub(crate) b: Vec<Scalar>,
    pub(crate) c: Vec<Scalar>,
}

/// Evaluates the shape's columns at tau, one matrix per thread.
pub(crate) fn evaluate(shape: &ShapeData, lagrange: &[Scalar]) -> Result<ColumnValues> {
    let cols = (shape.num_inputs + shape.num_aux) as usize;
    let check = |m: &Matrix, name: &str| -> Result<()> {
        let bad_col = m.entries.iter().any(|e| e.col as usize >= cols);
        let bad_code = m
            .entries
            .iter()
            .any(|e| e.coeff >= 2 && e.coeff as usize - 2 >= shape.coeffs.len());
        let bad_rows = m.row_ptr.len() != lagrange.len() + 1
            || m.row_ptr.last().copied() != Some(m.entries.len() as u64)
            || m.row_ptr.windows(2).any(|w| w[0] > w[1]);
        if bad_col || bad_code || bad_rows {
            return Err(Error::Invalid(format!(
                "the shape's {name} matrix is inconsistent (a column, coefficient or row offset out of range)"
            )));
        }
        Ok(())
    };
    check(&shape.a, "A")?;
    check(&shape.b, "B")?;
    check(&shape.c, "C")?;
    let k = &shape.coeffs;
    let (a, (b, c)) = rayon::join(
        || column_values(&shape.a, k, lagrange, cols),
        || {
            rayon::join(
                || column_values(&shape.b, k, lagrange, cols),
                || column_values(&shape.c, k, lagrange, cols),
            )
        },
    );
    Ok(ColumnValues { a, b, c })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_chacha::ChaCha20Rng;
    use rand_core::SeedableRng;

    /// The closed form equals the inverse FFT of tau's powers, computed here
    /// naively: `L_j(tau) = (1/m) sum_i tau^i omega^(-ij)`.
    #[test]
    fn lagrange_matches_the_inverse_transform() {
        let d = Domain::for_rows(13).unwrap();
        assert_eq!(d.size(), 16);
        let tau = Scalar::random(ChaCha20Rng::seed_from_u64(1));
        let l = d.lagrange_at(&tau, 16);
        let m_inv = Scalar::from(16u64).invert().unwrap();
        let omega_inv = d.omega.invert().unwrap();
        for (j, lj) in l.iter().enumerate() {
            let mut sum = Scalar::ZERO;
            for i in 0..16u64 {
                sum += tau.pow_vartime([i]) * omega_inv.pow_vartime([i * j as u64]);
            }
            assert_eq!(*lj, sum * m_inv, "L_{j}");
        }
        assert_eq!(d.omega.pow_vartime([16]), Scalar::ONE);
        assert_ne!(d.omega.pow_vartime([8]), Scalar::ONE);
    }
}
