//! TEST keys made from a circuit's shape in seconds, in bellperson's params
//! format.
//!
//! A TEST key is a Groth16 key whose toxic waste comes from a seed
//! ([`toxic`]): anyone with the seed can forge proofs, so it is for tests,
//! benchmarks and fixtures only, never for a network. It is the key
//! bellperson's `generate_parameters` would make for the same alpha, beta,
//! gamma, delta and tau with the standard generators: the QAP at tau
//! ([`qap`]: a closed-form Lagrange basis, no FFT), then every point by
//! fixed-base multiplication ([`fixed_base`]) on every core. The same seed
//! and shape give the same bytes on any machine and any thread count.
//!
//! The file is written as it is computed, a section at a time in chunks of
//! [`CHUNK_POINTS`]: host memory holds the shape, three scalars a column and
//! one chunk, never the key.

mod fixed_base;
mod invert;
mod qap;
mod toxic;

use std::io::Write;
use std::time::{Duration, Instant};

use bellperson::groth16::VerifyingKey;
use blstrs::{Bls12, G1Affine, G1Projective, G2Projective, Scalar};
use ff::Field;
use group::{Curve, Group};
use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::shape::ShapeData;
use fixed_base::{FixedBase, FixedBaseGroup, G1, G2};
use qap::Domain;
use toxic::Toxic;

/// Points computed and written at a time.
pub const CHUNK_POINTS: usize = 1 << 18;

/// What [`write_test_key`] made, with the time of each step.
#[derive(Debug, Clone, Default)]
pub struct TestKeyReport {
    pub num_constraints: u64,
    pub log_domain: u32,
    /// Points of each section: ic, h, l, a, b_g1, b_g2.
    pub ic: u64,
    pub h: u64,
    pub l: u64,
    pub a: u64,
    pub b_g1: u64,
    pub b_g2: u64,
    /// Bytes written.
    pub bytes: u64,
    /// (step, time) in order: evaluation, tables, each section.
    pub times: Vec<(&'static str, Duration)>,
}

/// Counts the bytes passing to the writer.
struct Counted<'a, W: Write + ?Sized> {
    inner: &'a mut W,
    bytes: u64,
}

impl<W: Write + ?Sized> Counted<'_, W> {
    fn put(&mut self, b: &[u8]) -> Result<()> {
        self.inner
            .write_all(b)
            .map_err(|e| Error::Invalid(format!("writing the key: {e}")))?;
        self.bytes += b.len() as u64;
        Ok(())
    }

    fn count(&mut self, n: usize, what: &str) -> Result<()> {
        let n = u32::try_from(n).map_err(|_| {
            Error::Invalid(format!(
                "{n} points in the key's {what} section: the params format holds at most 2^32 - 1"
            ))
        })?;
        self.put(&n.to_be_bytes())
    }
}

/// Writes one section's points: `fill(start, buf)` gives the scalars of
/// points `start..start + buf.len()`.
fn write_section<G: FixedBaseGroup, W: Write + ?Sized>(
    out: &mut Counted<'_, W>,
    table: &FixedBase<G>,
    count: usize,
    what: &str,
    fill: impl Fn(usize, &mut [Scalar]) + Sync,
) -> Result<()> {
    out.count(count, what)?;
    let mut scalars = vec![Scalar::ZERO; CHUNK_POINTS.min(count)];
    let mut bytes = vec![0u8; scalars.len() * G::UNCOMPRESSED];
    let mut start = 0;
    while start < count {
        let n = CHUNK_POINTS.min(count - start);
        fill(start, &mut scalars[..n]);
        table.mul_into(&scalars[..n], &mut bytes[..n * G::UNCOMPRESSED]);
        out.put(&bytes[..n * G::UNCOMPRESSED])?;
        start += n;
    }
    Ok(())
}

/// `tau^i * coeff` for `i = start..start + buf.len()`, on every core.
fn fill_powers(tau: &Scalar, coeff: &Scalar, start: usize, buf: &mut [Scalar]) {
    const PIECE: usize = 4096;
    buf.par_chunks_mut(PIECE)
        .enumerate()
        .for_each(|(n, piece)| {
            let mut p = tau.pow_vartime([(start + n * PIECE) as u64]) * coeff;
            for s in piece {
                *s = p;
                p *= tau;
            }
        });
}

/// Writes the TEST key of `shape` for `seed` to `out` in bellperson's
/// params format and returns its verifying key. `progress` hears one line
/// per step.
pub fn write_test_key<W: Write + ?Sized>(
    shape: &ShapeData,
    seed: [u8; 32],
    out: &mut W,
    progress: &mut dyn FnMut(&str),
) -> Result<(VerifyingKey<Bls12>, TestKeyReport)> {
    let rows = shape.num_constraints();
    let domain = Domain::for_rows(rows)?;
    let toxic = Toxic::from_seed(seed, &domain);
    let mut report = TestKeyReport {
        num_constraints: rows as u64,
        log_domain: domain.log_size,
        ..Default::default()
    };
    let mut step = Instant::now();
    let mut lap = |report: &mut TestKeyReport, what: &'static str| {
        report.times.push((what, step.elapsed()));
        step = Instant::now();
    };

    let lagrange = domain.lagrange_at(&toxic.tau, rows);
    let cols = qap::evaluate(shape, &lagrange)?;
    drop(lagrange);
    let ni = shape.num_inputs as usize;
    // ext_i = (beta a_i + alpha b_i + c_i) / gamma for inputs, / delta for aux.
    let inv = |x: &Scalar| Option::<Scalar>::from(x.invert()).unwrap_or(Scalar::ZERO);
    let (gamma_inv, delta_inv) = (inv(&toxic.gamma), inv(&toxic.delta));
    let ext: Vec<Scalar> = (0..cols.a.len())
        .into_par_iter()
        .map(|i| {
            let e = toxic.beta * cols.a[i] + toxic.alpha * cols.b[i] + cols.c[i];
            e * if i < ni { gamma_inv } else { delta_inv }
        })
        .collect();
    if let Some(i) = ext[ni..].iter().position(|e| bool::from(e.is_zero())) {
        return Err(Error::Invalid(format!(
            "aux variable {i} is in no constraint (bellperson: UnconstrainedVariable)"
        )));
    }
    let nonzero = |v: &[Scalar]| -> Vec<u32> {
        (0..v.len() as u32)
            .filter(|&i| !bool::from(v[i as usize].is_zero()))
            .collect()
    };
    let a_cols = nonzero(&cols.a);
    let b_cols = nonzero(&cols.b);
    progress(&format!(
        "{rows} constraints, domain 2^{}, {} inputs, {} aux: QAP at tau evaluated",
        domain.log_size, ni, shape.num_aux
    ));
    lap(&mut report, "evaluation");

    let g1 = FixedBase::<G1>::new();
    lap(&mut report, "g1 table");
    let g1_gen = G1Projective::generator();
    let g2_gen = G2Projective::generator();
    let ic_bytes = {
        let mut b = vec![0u8; ni * G1::UNCOMPRESSED];
        g1.mul_into(&ext[..ni], &mut b);
        b
    };
    let vk = VerifyingKey::<Bls12> {
        alpha_g1: (g1_gen * toxic.alpha).to_affine(),
        beta_g1: (g1_gen * toxic.beta).to_affine(),
        beta_g2: (g2_gen * toxic.beta).to_affine(),
        gamma_g2: (g2_gen * toxic.gamma).to_affine(),
        delta_g1: (g1_gen * toxic.delta).to_affine(),
        delta_g2: (g2_gen * toxic.delta).to_affine(),
        ic: ic_bytes
            .chunks_exact(G1::UNCOMPRESSED)
            .map(|c| {
                let b: &[u8; 96] = c.try_into().expect("96 bytes");
                Option::<G1Affine>::from(G1Affine::from_uncompressed_unchecked(b))
                    .ok_or_else(|| Error::Invalid("an ic point did not decode".into()))
            })
            .collect::<Result<_>>()?,
    };

    let mut w = Counted {
        inner: out,
        bytes: 0,
    };
    let mut vk_bytes = Vec::new();
    vk.write(&mut vk_bytes)
        .map_err(|e| Error::Invalid(format!("encoding the verifying key: {e}")))?;
    w.put(&vk_bytes)?;

    let h_count = domain.size() - 1;
    let h_coeff = domain.vanishing_at(&toxic.tau) * delta_inv;
    write_section(&mut w, &g1, h_count, "h", |start, buf| {
        fill_powers(&toxic.tau, &h_coeff, start, buf)
    })?;
    progress(&format!("h: {h_count} points"));
    lap(&mut report, "h");

    let l_count = ext.len() - ni;
    write_section(&mut w, &g1, l_count, "l", |start, buf| {
        buf.copy_from_slice(&ext[ni + start..ni + start + buf.len()])
    })?;
    progress(&format!("l: {l_count} points"));
    lap(&mut report, "l");

    let pick = |v: &[Scalar], idx: &[u32], start: usize, buf: &mut [Scalar]| {
        for (s, &i) in buf.iter_mut().zip(&idx[start..]) {
            *s = v[i as usize];
        }
    };
    write_section(&mut w, &g1, a_cols.len(), "a", |start, buf| {
        pick(&cols.a, &a_cols, start, buf)
    })?;
    progress(&format!("a: {} points", a_cols.len()));
    lap(&mut report, "a");
    write_section(&mut w, &g1, b_cols.len(), "b_g1", |start, buf| {
        pick(&cols.b, &b_cols, start, buf)
    })?;
    progress(&format!("b_g1: {} points", b_cols.len()));
    lap(&mut report, "b_g1");
    drop(g1);
    let g2 = FixedBase::<G2>::new();
    write_section(&mut w, &g2, b_cols.len(), "b_g2", |start, buf| {
        pick(&cols.b, &b_cols, start, buf)
    })?;
    progress(&format!("b_g2: {} points", b_cols.len()));
    lap(&mut report, "b_g2");

    report.ic = ni as u64;
    report.h = h_count as u64;
    report.l = l_count as u64;
    report.a = a_cols.len() as u64;
    report.b_g1 = b_cols.len() as u64;
    report.b_g2 = b_cols.len() as u64;
    report.bytes = w.bytes;
    Ok((vk, report))
}

#[cfg(test)]
mod tests;
