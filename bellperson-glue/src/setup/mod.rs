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
use blstrs::{Bls12, G1Projective, G2Projective, Scalar};
use ff::Field;
use group::{Curve, Group};
use rayon::prelude::*;

use crate::convert;
use crate::core_api::{self, KeySection};
use crate::error::{Error, Result};
use crate::key::ProvingKey;
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

/// The scalars of a TEST key: everything but its points' multiplications.
struct Plan {
    domain: Domain,
    toxic: Toxic,
    cols: qap::ColumnValues,
    ext: Vec<Scalar>,
    ni: usize,
    a_cols: Vec<u32>,
    b_cols: Vec<u32>,
    h_coeff: Scalar,
    vk: VerifyingKey<Bls12>,
}

/// The sections in the params format's order (after ic).
const SECTIONS: [(&str, KeySection); 5] = [
    ("h", KeySection::H),
    ("l", KeySection::L),
    ("a", KeySection::A),
    ("b_g1", KeySection::BG1),
    ("b_g2", KeySection::BG2),
];

impl Plan {
    fn new(shape: &ShapeData, seed: [u8; 32], progress: &mut dyn FnMut(&str)) -> Result<Self> {
        let rows = shape.num_constraints();
        let domain = Domain::for_rows(rows)?;
        let toxic = Toxic::from_seed(seed, &domain);
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
        let g1_gen = G1Projective::generator();
        let g2_gen = G2Projective::generator();
        let vk = VerifyingKey::<Bls12> {
            alpha_g1: (g1_gen * toxic.alpha).to_affine(),
            beta_g1: (g1_gen * toxic.beta).to_affine(),
            beta_g2: (g2_gen * toxic.beta).to_affine(),
            gamma_g2: (g2_gen * toxic.gamma).to_affine(),
            delta_g1: (g1_gen * toxic.delta).to_affine(),
            delta_g2: (g2_gen * toxic.delta).to_affine(),
            ic: ext[..ni]
                .par_iter()
                .map(|s| (g1_gen * s).to_affine())
                .collect(),
        };
        let h_coeff = domain.vanishing_at(&toxic.tau) * delta_inv;
        Ok(Self {
            domain,
            toxic,
            cols,
            ext,
            ni,
            a_cols,
            b_cols,
            h_coeff,
            vk,
        })
    }

    fn count(&self, s: KeySection) -> usize {
        match s {
            KeySection::H => self.domain.size() - 1,
            KeySection::L => self.ext.len() - self.ni,
            KeySection::A => self.a_cols.len(),
            KeySection::BG1 | KeySection::BG2 => self.b_cols.len(),
        }
    }

    /// The scalars of points `start..start + buf.len()` of section `s`.
    fn fill(&self, s: KeySection, start: usize, buf: &mut [Scalar]) {
        let pick = |v: &[Scalar], idx: &[u32], buf: &mut [Scalar]| {
            for (x, &i) in buf.iter_mut().zip(&idx[start..]) {
                *x = v[i as usize];
            }
        };
        match s {
            KeySection::H => fill_powers(&self.toxic.tau, &self.h_coeff, start, buf),
            KeySection::L => {
                buf.copy_from_slice(&self.ext[self.ni + start..self.ni + start + buf.len()])
            }
            KeySection::A => pick(&self.cols.a, &self.a_cols, buf),
            KeySection::BG1 | KeySection::BG2 => pick(&self.cols.b, &self.b_cols, buf),
        }
    }

    fn report(&self, shape: &ShapeData) -> TestKeyReport {
        TestKeyReport {
            num_constraints: shape.num_constraints() as u64,
            log_domain: self.domain.log_size,
            ic: self.ni as u64,
            h: self.count(KeySection::H) as u64,
            l: self.count(KeySection::L) as u64,
            a: self.count(KeySection::A) as u64,
            b_g1: self.count(KeySection::BG1) as u64,
            b_g2: self.count(KeySection::BG2) as u64,
            ..Default::default()
        }
    }
}

/// Writes the TEST key of `shape` for `seed` to `out` in bellperson's
/// params format and returns its verifying key, every point computed on
/// this host's cores. `progress` hears one line per step.
pub fn write_test_key<W: Write + ?Sized>(
    shape: &ShapeData,
    seed: [u8; 32],
    out: &mut W,
    progress: &mut dyn FnMut(&str),
) -> Result<(VerifyingKey<Bls12>, TestKeyReport)> {
    let mut step = Instant::now();
    let plan = Plan::new(shape, seed, progress)?;
    let mut report = plan.report(shape);
    let mut lap = |report: &mut TestKeyReport, what: &'static str| {
        report.times.push((what, step.elapsed()));
        step = Instant::now();
    };
    lap(&mut report, "evaluation");

    let mut w = Counted {
        inner: out,
        bytes: 0,
    };
    let mut vk_bytes = Vec::new();
    plan.vk
        .write(&mut vk_bytes)
        .map_err(|e| Error::Invalid(format!("encoding the verifying key: {e}")))?;
    w.put(&vk_bytes)?;

    let g1_points: usize = SECTIONS[..4].iter().map(|(_, s)| plan.count(*s)).sum();
    let g1 = FixedBase::<G1>::for_points(g1_points);
    lap(&mut report, "g1 table");
    for (what, s) in &SECTIONS[..4] {
        let count = plan.count(*s);
        write_section(&mut w, &g1, count, what, |start, buf| {
            plan.fill(*s, start, buf)
        })?;
        progress(&format!("{what}: {count} points"));
        lap(&mut report, what);
    }
    drop(g1);
    let count = plan.count(KeySection::BG2);
    let g2 = FixedBase::<G2>::for_points(count);
    write_section(&mut w, &g2, count, "b_g2", |start, buf| {
        plan.fill(KeySection::BG2, start, buf)
    })?;
    progress(&format!("b_g2: {count} points"));
    lap(&mut report, "b_g2");
    report.bytes = w.bytes;
    Ok((plan.vk, report))
}

/// The scalars of section `section` of the TEST key of `shape` for `seed`:
/// point `i` of that section is the section's generator times scalar `i`.
/// For checks that compare a device's points with the host's, scalar by
/// scalar.
pub fn test_key_scalars(
    shape: &ShapeData,
    seed: [u8; 32],
    section: KeySection,
) -> Result<Vec<Scalar>> {
    let plan = Plan::new(shape, seed, &mut |_| {})?;
    let mut v = vec![Scalar::ZERO; plan.count(section)];
    plan.fill(section, 0, &mut v);
    Ok(v)
}

/// Scalars a device multiplies per call of [`make_test_key_on`].
pub const DEVICE_CHUNK_POINTS: usize = 1 << 22;

/// The TEST key of `shape` for `seed` (the same key [`write_test_key`]
/// writes, point for point) with every section's points computed on device
/// `ordinal` of `ctx`, held in memory as a [`ProvingKey`]; with `path`, also
/// written there in bellperson's params format (through `<path>.partial`)
/// with its verified record. The key's points are multiples of the
/// generators, so the key needs no subgroup check. `progress` hears one line
/// per step.
pub fn make_test_key_on(
    shape: &ShapeData,
    seed: [u8; 32],
    ctx: &cuda_prover_device::Context,
    ordinal: u32,
    path: Option<&std::path::Path>,
    progress: &mut dyn FnMut(&str),
) -> Result<(ProvingKey, TestKeyReport)> {
    let mut step = Instant::now();
    let plan = Plan::new(shape, seed, progress)?;
    let mut report = plan.report(shape);
    let mut lap = |report: &mut TestKeyReport, what: &'static str| {
        report.times.push((what, step.elapsed()));
        step = Instant::now();
    };
    lap(&mut report, "evaluation");
    let vk = core_api::KeyVk {
        alpha_g1: convert::g1(&plan.vk.alpha_g1),
        beta_g1: convert::g1(&plan.vk.beta_g1),
        beta_g2: convert::g2(&plan.vk.beta_g2),
        gamma_g2: convert::g2(&plan.vk.gamma_g2),
        delta_g1: convert::g1(&plan.vk.delta_g1),
        delta_g2: convert::g2(&plan.vk.delta_g2),
        ic: plan.vk.ic.iter().map(convert::g1).collect(),
    };
    let lens = core_api::KeyShape {
        ic_len: plan.ni as u64,
        h_len: plan.count(KeySection::H) as u64,
        l_len: plan.count(KeySection::L) as u64,
        a_len: plan.count(KeySection::A) as u64,
        b_g1_len: plan.count(KeySection::BG1) as u64,
        b_g2_len: plan.count(KeySection::BG2) as u64,
    };
    fn core(what: &str) -> impl Fn(cuda_prover_device::Error) -> Error + '_ {
        move |e| Error::Invalid(format!("{what}: {e}"))
    }
    let mut builder = core_api::KeyBuilder::new(&vk, &lens).map_err(core("allocating the key"))?;
    lap(&mut report, "allocation");
    // The next chunk's scalars are drawn on the host while the device
    // multiplies this one.
    let mut bufs = [
        vec![Scalar::ZERO; DEVICE_CHUNK_POINTS],
        vec![Scalar::ZERO; DEVICE_CHUNK_POINTS],
    ];
    for (what, s) in SECTIONS {
        let count = plan.count(s);
        let chunks: Vec<(usize, usize)> = (0..count)
            .step_by(DEVICE_CHUNK_POINTS)
            .map(|b| (b, DEVICE_CHUNK_POINTS.min(count - b)))
            .collect();
        if let Some(&(b, n)) = chunks.first() {
            plan.fill(s, b, &mut bufs[0][..n]);
        }
        for (k, &(b, n)) in chunks.iter().enumerate() {
            let (cur, next) = bufs.split_at_mut(1);
            let (cur, next) = if k % 2 == 0 {
                (&mut cur[0], &mut next[0])
            } else {
                (&mut next[0], &mut cur[0])
            };
            let scalars = convert::fr_slice(&cur[..n]);
            std::thread::scope(|sc| -> Result<()> {
                if let Some(&(nb, nn)) = chunks.get(k + 1) {
                    let plan = &plan;
                    sc.spawn(move || plan.fill(s, nb, &mut next[..nn]));
                }
                builder
                    .fill(ctx, ordinal, s, b as u64, scalars)
                    .map_err(core("computing the key's points"))
            })?;
        }
        progress(&format!("{what}: {count} points"));
        lap(&mut report, what);
    }
    let (key, note) = builder.finish(path).map_err(core("writing the key"))?;
    if let Some(n) = note {
        progress(&format!("note: {n}"));
    }
    if path.is_some() {
        lap(&mut report, "write");
    }
    report.bytes = path
        .and_then(|p| std::fs::metadata(p).ok())
        .map_or(0, |m| m.len());
    Ok((ProvingKey::with_vk(key, plan.vk), report))
}

#[cfg(test)]
mod tests;
