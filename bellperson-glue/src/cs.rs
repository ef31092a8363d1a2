//! Synthesis: any bellpepper circuit into what the core proves, with exactly
//! bellperson 0.27's conventions (input ONE first; one `input_i * 0 = 0`
//! constraint per input after `synthesize`; density counted for every
//! variable that appears with a non-zero coefficient).

use bellpepper_core::{
    Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable,
};
use blstrs::Scalar;
use ff::Field;

use crate::convert::limbs;
use crate::flat_cs::flat_namespaces;
use crate::huge_pages::vec_with_capacity;
use crate::shape::{ShapeData, ShapeRecorder};

/// A bitmap with one bit per variable: bit i of word i / 64.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Density {
    words: Vec<u64>,
    len: usize,
}

impl Density {
    fn push(&mut self) {
        if self.len.is_multiple_of(64) {
            self.words.push(0);
        }
        self.len += 1;
    }

    #[inline]
    fn set(&mut self, i: usize) {
        self.words[i / 64] |= 1 << (i % 64);
    }

    pub fn get(&self, i: usize) -> bool {
        i < self.len && self.words[i / 64] >> (i % 64) & 1 == 1
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Number of set bits.
    pub fn count(&self) -> usize {
        self.words.iter().map(|w| w.count_ones() as usize).sum()
    }

    pub fn words(&self) -> &[u64] {
        &self.words
    }
}

/// A synthesized circuit: what one proof needs besides the proving key.
#[derive(Debug, Clone, Default)]
pub struct Synthesized {
    /// Evaluations of the A, B, C linear combinations, one per constraint.
    pub a: Vec<Scalar>,
    pub b: Vec<Scalar>,
    pub c: Vec<Scalar>,
    /// Input assignment; `inputs[0]` is ONE.
    pub inputs: Vec<Scalar>,
    pub aux: Vec<Scalar>,
    pub a_aux_density: Density,
    pub b_input_density: Density,
    pub b_aux_density: Density,
}

/// Expected sizes of a synthesis, to allocate once instead of growing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SizeHint {
    pub constraints: usize,
    pub inputs: usize,
    pub aux: usize,
}

impl Density {
    fn with_capacity(bits: usize) -> Self {
        Self {
            words: Vec::with_capacity(bits.div_ceil(64)),
            len: 0,
        }
    }
}

impl Synthesized {
    /// An empty assignment with room for `hint`.
    pub fn with_capacity(hint: SizeHint) -> Self {
        Self {
            a: vec_with_capacity(hint.constraints),
            b: vec_with_capacity(hint.constraints),
            c: vec_with_capacity(hint.constraints),
            inputs: vec_with_capacity(hint.inputs),
            aux: vec_with_capacity(hint.aux),
            a_aux_density: Density::with_capacity(hint.aux),
            b_input_density: Density::with_capacity(hint.inputs),
            b_aux_density: Density::with_capacity(hint.aux),
        }
    }

    pub fn num_constraints(&self) -> usize {
        self.a.len()
    }

    /// The public inputs a verifier takes (without ONE).
    pub fn public_inputs(&self) -> &[Scalar] {
        &self.inputs[1..]
    }

    /// This assignment's sizes, to pre-size the next one of the same shape.
    pub fn size_hint(&self) -> SizeHint {
        SizeHint {
            constraints: self.a.len(),
            inputs: self.inputs.len(),
            aux: self.aux.len(),
        }
    }

    /// Host bytes held by this assignment.
    pub fn bytes(&self) -> usize {
        32 * (3 * self.a.len() + self.inputs.len() + self.aux.len())
    }
}

/// Montgomery form of 1 (R mod r).
pub(crate) const ONE_LIMBS: [u64; 4] = [
    0x00000001fffffffe,
    0x5884b7fa00034802,
    0x998c4fefecbc4ff5,
    0x1824b159acc5056f,
];

// Coefficients are circuit constants, not secrets: plain limb comparisons
// instead of the constant-time ones, which cost several percent of
// synthesis.
#[inline]
fn is_zero(c: &Scalar) -> bool {
    *limbs(c) == [0; 4]
}

#[inline]
fn is_one(c: &Scalar) -> bool {
    *limbs(c) == ONE_LIMBS
}

#[inline]
fn eval(
    lc: &LinearCombination<Scalar>,
    inputs: &[Scalar],
    aux: &[Scalar],
    mut input_density: Option<&mut Density>,
    mut aux_density: Option<&mut Density>,
) -> Scalar {
    let mut acc = Scalar::ZERO;
    for (&i, coeff) in lc.iter_inputs() {
        if is_zero(coeff) {
            continue;
        }
        acc += if is_one(coeff) {
            inputs[i]
        } else {
            inputs[i] * coeff
        };
        if let Some(d) = input_density.as_deref_mut() {
            d.set(i);
        }
    }
    for (&i, coeff) in lc.iter_aux() {
        if is_zero(coeff) {
            continue;
        }
        acc += if is_one(coeff) {
            aux[i]
        } else {
            aux[i] * coeff
        };
        if let Some(d) = aux_density.as_deref_mut() {
            d.set(i);
        }
    }
    acc
}

impl Synthesized {
    /// Evaluates one constraint and marks the densities.
    #[inline]
    fn push_constraint(
        &mut self,
        a: &LinearCombination<Scalar>,
        b: &LinearCombination<Scalar>,
        c: &LinearCombination<Scalar>,
    ) {
        // Inputs have full density in A (the input_i * 0 = 0 constraints), so
        // only aux density is tracked for A; C has no query of its own.
        let av = eval(
            a,
            &self.inputs,
            &self.aux,
            None,
            Some(&mut self.a_aux_density),
        );
        let bv = eval(
            b,
            &self.inputs,
            &self.aux,
            Some(&mut self.b_input_density),
            Some(&mut self.b_aux_density),
        );
        let cv = eval(c, &self.inputs, &self.aux, None, None);
        self.a.push(av);
        self.b.push(bv);
        self.c.push(cv);
    }
}

impl ConstraintSystem<Scalar> for Synthesized {
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
        self.a_aux_density.push();
        self.b_aux_density.push();
        Ok(Variable::new_unchecked(Index::Aux(self.aux.len() - 1)))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.inputs.push(f()?);
        self.b_input_density.push();
        Ok(Variable::new_unchecked(Index::Input(self.inputs.len() - 1)))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, a: LA, b: LB, c: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LB: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LC: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
    {
        let a = a(LinearCombination::zero());
        let b = b(LinearCombination::zero());
        let c = c(LinearCombination::zero());
        self.push_constraint(&a, &b, &c);
    }

    flat_namespaces!();
}

/// A full synthesis that also records the constraints (for a first proof of
/// a circuit whose shape is not known yet).
struct Recording {
    synth: Synthesized,
    recorder: ShapeRecorder,
}

impl ConstraintSystem<Scalar> for Recording {
    type Root = Self;

    fn alloc<F, A, AR>(&mut self, name: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.synth.alloc(name, f)
    }

    fn alloc_input<F, A, AR>(&mut self, name: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.synth.alloc_input(name, f)
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, a: LA, b: LB, c: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LB: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LC: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
    {
        let a = a(LinearCombination::zero());
        let b = b(LinearCombination::zero());
        let c = c(LinearCombination::zero());
        self.recorder.constraint(&a, &b, &c);
        self.synth.push_constraint(&a, &b, &c);
    }

    flat_namespaces!();
}

/// bellperson's framing of a synthesis: input ONE first, then the circuit,
/// then one `input_i * 0 = 0` constraint per input.
pub(crate) fn frame<CS, C>(
    cs: &mut CS,
    circuit: C,
    num_inputs: fn(&CS) -> usize,
) -> Result<(), SynthesisError>
where
    CS: ConstraintSystem<Scalar>,
    C: Circuit<Scalar>,
{
    cs.alloc_input(|| "one", || Ok(Scalar::ONE))?;
    circuit.synthesize(cs)?;
    for i in 0..num_inputs(cs) {
        cs.enforce(
            || "input constraint",
            |lc| lc + Variable::new_unchecked(Index::Input(i)),
            |lc| lc,
            |lc| lc,
        );
    }
    Ok(())
}

/// [`synthesize_sized`] that also records the circuit's shape.
pub fn synthesize_recording<C: Circuit<Scalar>>(
    circuit: C,
    hint: SizeHint,
) -> crate::Result<(Synthesized, ShapeData)> {
    let mut cs = Recording {
        synth: Synthesized::with_capacity(hint),
        recorder: ShapeRecorder::default(),
    };
    frame(&mut cs, circuit, |cs| cs.synth.inputs.len())?;
    let (inputs, aux) = (cs.synth.inputs.len(), cs.synth.aux.len());
    let shape = cs.recorder.finish(inputs, aux)?;
    Ok((cs.synth, shape))
}

/// Synthesizes `circuit` the way bellperson's prover does.
pub fn synthesize<C: Circuit<Scalar>>(circuit: C) -> Result<Synthesized, SynthesisError> {
    synthesize_sized(circuit, SizeHint::default())
}

/// [`synthesize`] with the sizes known in advance (from the proving key:
/// see `ProvingKey::size_hint`), which saves growing the vectors.
pub fn synthesize_sized<C: Circuit<Scalar>>(
    circuit: C,
    hint: SizeHint,
) -> Result<Synthesized, SynthesisError> {
    let mut cs = Synthesized::with_capacity(hint);
    frame(&mut cs, circuit, |cs| cs.inputs.len())?;
    Ok(cs)
}
