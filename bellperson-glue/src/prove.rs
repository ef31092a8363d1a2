//! Proving entry points: each takes where it runs (a `Placement`: the
//! device and an optional device mutex) and the blinding factors (given or
//! drawn from an RNG).

use std::borrow::Borrow;

use crate::core_api;
use bellpepper_core::Circuit;
use bellperson::groth16::Proof;
use blstrs::{Bls12, Scalar};
use cuda_prover_device::Placement;
use ff::Field;
use rand_core::RngCore;
use rayon::prelude::*;

use crate::convert::{fr, fr_slice, to_g1, to_g2};
use crate::cs::{synthesize, Synthesized};
use crate::error::{Error, Result};
use crate::key::ProvingKey;
use crate::shape::Shape;
use crate::witness::Witness;

/// Groth16 blinding factors of one proof.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Blinding {
    pub r: Scalar,
    pub s: Scalar,
}

impl Blinding {
    pub fn random<R: RngCore>(rng: &mut R) -> Self {
        Self {
            r: Scalar::random(&mut *rng),
            s: Scalar::random(&mut *rng),
        }
    }

    pub fn random_vec<R: RngCore>(rng: &mut R, n: usize) -> Vec<Self> {
        (0..n).map(|_| Self::random(rng)).collect()
    }
}

/// A proof with the device that made it and the time per phase.
#[derive(Debug, Clone)]
pub struct ProofOutput {
    pub proof: Proof<Bls12>,
    pub device: u32,
    pub timings: core_api::Timings,
}

/// Proofs whose device part is done.
pub struct PendingProofs {
    inner: core_api::Pending,
}

impl PendingProofs {
    pub fn len(&self) -> usize {
        self.inner.len()
    }

    pub fn is_empty(&self) -> bool {
        self.inner.is_empty()
    }

    /// The device that ran each circuit.
    pub fn devices(&self) -> Vec<u32> {
        self.inner.devices()
    }

    /// The host epilogue.
    pub fn finish(self) -> Result<Vec<ProofOutput>> {
        self.inner
            .finish()?
            .into_iter()
            .map(|p| {
                let bad = || Error::Invalid("the core returned a proof point off the curve".into());
                Ok(ProofOutput {
                    proof: Proof {
                        a: to_g1(&p.a).ok_or_else(bad)?,
                        b: to_g2(&p.b).ok_or_else(bad)?,
                        c: to_g1(&p.c).ok_or_else(bad)?,
                    },
                    device: p.device,
                    timings: p.timings,
                })
            })
            .collect()
    }
}

fn check_lengths(circuits: usize, blinding: usize, tags: usize) -> Result<()> {
    if circuits != blinding {
        return Err(Error::Invalid(format!(
            "{circuits} circuits but {blinding} blinding pairs"
        )));
    }
    if tags != 0 && tags != circuits {
        return Err(Error::Invalid(format!(
            "{circuits} circuits but {tags} tags"
        )));
    }
    Ok(())
}

/// Runs the device part of every synthesized circuit and returns once it is
/// done. `tags` label circuits (partition numbers) for errors and routing;
/// pass an empty slice for none.
pub fn prove_start<S: Borrow<Synthesized>>(
    ctx: &cuda_prover_device::Context,
    key: &ProvingKey,
    circuits: &[S],
    blinding: &[Blinding],
    tags: &[i64],
    place: &Placement<'_>,
) -> Result<PendingProofs> {
    check_lengths(circuits.len(), blinding.len(), tags.len())?;
    let raw = circuits
        .iter()
        .zip(blinding)
        .enumerate()
        .map(|(i, (c, bl))| {
            let c = c.borrow();
            core_api::Circuit::new(core_api::CircuitParts {
                a: fr_slice(&c.a),
                b: fr_slice(&c.b),
                c: fr_slice(&c.c),
                inputs: fr_slice(&c.inputs),
                aux: fr_slice(&c.aux),
                a_aux_density: c.a_aux_density.words(),
                b_input_density: c.b_input_density.words(),
                b_aux_density: c.b_aux_density.words(),
                r: fr(&bl.r),
                s: fr(&bl.s),
                tag: tags.get(i).copied(),
            })
        })
        .collect::<cuda_prover_device::Result<Vec<_>>>()?;
    let inner = key.core().prove_start(ctx, &raw, place)?;
    Ok(PendingProofs { inner })
}

/// Runs the device part of every witness against `shape`: the core
/// evaluates a, b, c from the witness, checks every row (an unsatisfied
/// witness fails with the row), then proves. `tags` as in [`prove_start`].
pub fn prove_start_witness<W: Borrow<Witness>>(
    ctx: &cuda_prover_device::Context,
    key: &ProvingKey,
    shape: &Shape,
    witnesses: &[W],
    blinding: &[Blinding],
    tags: &[i64],
    place: &Placement<'_>,
) -> Result<PendingProofs> {
    check_lengths(witnesses.len(), blinding.len(), tags.len())?;
    let raw: Vec<core_api::Witness<'_>> = witnesses
        .iter()
        .zip(blinding)
        .enumerate()
        .map(|(i, (w, bl))| {
            let w = w.borrow();
            core_api::Witness::new(
                fr_slice(&w.inputs),
                fr_slice(&w.aux),
                fr(&bl.r),
                fr(&bl.s),
                tags.get(i).copied(),
            )
        })
        .collect();
    let inner = key
        .core()
        .prove_start_witness(ctx, shape.core(), &raw, place)?;
    Ok(PendingProofs { inner })
}

/// Device part and epilogue for witnesses of a shape.
pub fn prove_from_witnesses(
    ctx: &cuda_prover_device::Context,
    key: &ProvingKey,
    shape: &Shape,
    witnesses: &[Witness],
    blinding: &[Blinding],
    place: &Placement<'_>,
) -> Result<Vec<ProofOutput>> {
    prove_start_witness(ctx, key, shape, witnesses, blinding, &[], place)?.finish()
}

/// Device part and epilogue for already synthesized circuits.
pub fn prove_from_assignments(
    ctx: &cuda_prover_device::Context,
    key: &ProvingKey,
    circuits: &[Synthesized],
    blinding: &[Blinding],
    place: &Placement<'_>,
) -> Result<Vec<ProofOutput>> {
    prove_start(ctx, key, circuits, blinding, &[], place)?.finish()
}

/// Like bellperson's `create_proof_batch`: synthesizes the circuits in
/// parallel, then proves them with the given blinding factors.
pub fn create_proof_batch<C>(
    ctx: &cuda_prover_device::Context,
    circuits: Vec<C>,
    key: &ProvingKey,
    blinding: &[Blinding],
    place: &Placement<'_>,
) -> Result<Vec<ProofOutput>>
where
    C: Circuit<Scalar> + Send,
{
    let synthesized = circuits
        .into_par_iter()
        .map(synthesize)
        .collect::<std::result::Result<Vec<_>, _>>()?;
    prove_from_assignments(ctx, key, &synthesized, blinding, place)
}

/// Like bellperson's `create_random_proof_batch`.
pub fn create_random_proof_batch<C, R>(
    ctx: &cuda_prover_device::Context,
    circuits: Vec<C>,
    key: &ProvingKey,
    rng: &mut R,
    place: &Placement<'_>,
) -> Result<Vec<ProofOutput>>
where
    C: Circuit<Scalar> + Send,
    R: RngCore,
{
    let blinding = Blinding::random_vec(rng, circuits.len());
    create_proof_batch(ctx, circuits, key, &blinding, place)
}
