//! Witness-only synthesis: a ConstraintSystem that computes the assignment
//! and nothing else. `enforce` calls none of its closures, namespaces cost
//! nothing, and it reports itself as a witness generator, so gadgets with a
//! witness fast path (neptune's Poseidon among them) take it.

use bellpepper_core::{
    Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable,
};
use blstrs::Scalar;
use ff::Field;
use rayon::prelude::*;

use crate::cs::SizeHint;
use crate::flat_cs::witness_generator;
use crate::huge_pages::vec_with_capacity;

/// One proof's assignment, as bellperson orders it: `inputs[0]` is ONE.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Witness {
    pub inputs: Vec<Scalar>,
    pub aux: Vec<Scalar>,
}

impl Witness {
    /// An empty assignment with room for `hint`.
    pub fn with_capacity(hint: SizeHint) -> Self {
        Self {
            inputs: vec_with_capacity(hint.inputs),
            aux: vec_with_capacity(hint.aux),
        }
    }

    /// The public inputs a verifier takes (without ONE).
    pub fn public_inputs(&self) -> &[Scalar] {
        self.inputs.get(1..).unwrap_or(&[])
    }

    /// Host bytes held by this assignment (32 per variable).
    pub fn bytes(&self) -> usize {
        32 * (self.inputs.len() + self.aux.len())
    }
}

/// From this many new elements on, `grow` zeroes them on the rayon pool
/// (a partition's pieces written in place reserve gigabytes at once; one
/// thread would fault and zero them alone).
const PARALLEL_ZEROING: usize = 1 << 20;

/// `n` more zeroed elements at the end of `v`, lent.
fn grow(v: &mut Vec<Scalar>, n: usize) -> &mut [Scalar] {
    let at = v.len();
    if n < PARALLEL_ZEROING {
        v.resize(at + n, Scalar::ZERO);
    } else {
        v.reserve(n);
        v.spare_capacity_mut()[..n]
            .par_chunks_mut(1 << 16)
            .for_each(|c| c.fill(std::mem::MaybeUninit::new(Scalar::ZERO)));
        // SAFETY: `reserve` made room for `n` more elements and the loop
        // above initialized the first `n` of the spare capacity, so the
        // elements up to `at + n` are initialized `Scalar`s (plain data).
        unsafe { v.set_len(at + n) };
    }
    &mut v[at..]
}

impl ConstraintSystem<Scalar> for Witness {
    type Root = Self;

    fn new() -> Self {
        Self::default()
    }

    fn alloc<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.aux.push(f()?);
        Ok(Variable::new_unchecked(Index::Aux(self.aux.len() - 1)))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.inputs.push(f()?);
        Ok(Variable::new_unchecked(Index::Input(self.inputs.len() - 1)))
    }

    witness_generator!();

    fn extend_inputs(&mut self, new_inputs: &[Scalar]) {
        self.inputs.extend_from_slice(new_inputs);
    }

    fn extend_aux(&mut self, new_aux: &[Scalar]) {
        self.aux.extend_from_slice(new_aux);
    }

    fn allocate_empty(&mut self, aux_n: usize, inputs_n: usize) -> (&mut [Scalar], &mut [Scalar]) {
        (grow(&mut self.aux, aux_n), grow(&mut self.inputs, inputs_n))
    }

    fn allocate_empty_inputs(&mut self, n: usize) -> &mut [Scalar] {
        grow(&mut self.inputs, n)
    }

    fn allocate_empty_aux(&mut self, n: usize) -> &mut [Scalar] {
        grow(&mut self.aux, n)
    }

    fn inputs_slice(&self) -> &[Scalar] {
        &self.inputs
    }

    fn aux_slice(&self) -> &[Scalar] {
        &self.aux
    }
}

/// The assignment of `circuit` without its constraints, sized by `hint`
/// (see `ProvingKey::size_hint`). Equal to the assignment a full synthesis
/// computes.
pub fn synthesize_witness<C: Circuit<Scalar>>(
    circuit: C,
    hint: SizeHint,
) -> Result<Witness, SynthesisError> {
    let mut cs = Witness::with_capacity(hint);
    cs.alloc_input(|| "one", || Ok(Scalar::ONE))?;
    circuit.synthesize(&mut cs)?;
    Ok(cs)
}
