//! Shapes: a circuit's A, B and C, recorded once and held by the core, so
//! that a proof needs only a witness (see `witness.rs`): the core evaluates
//! a, b, c from it on the device and checks every row.
//!
//! A shape is recorded from a structure-only synthesis ([`ShapeData::record`],
//! which needs no witness values, as at params generation) or alongside a
//! full synthesis ([`crate::synthesize_recording`]). Rows are laid out as
//! bellperson lays out its constraints: the circuit's, then one
//! `input_i * 0 = 0` per input.

use std::collections::HashMap;

use crate::core_api;
use bellpepper_core::{
    Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable,
};
use blstrs::Scalar;
use ff::Field;

use crate::convert::{fr_slice, limbs};
use crate::cs::{frame, ONE_LIMBS};
use crate::error::{Error, Result};
use crate::flat_cs::flat_namespaces;

pub use core_api::{ShapeEntry, ShapeInfo};

/// One matrix in CSR form over the columns [inputs..., aux...].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Matrix {
    /// One offset per row, plus one.
    pub row_ptr: Vec<u64>,
    pub entries: Vec<ShapeEntry>,
}

impl Matrix {
    fn new(rows: usize) -> Self {
        let mut row_ptr = Vec::with_capacity(rows + 1);
        row_ptr.push(0);
        Self {
            row_ptr,
            entries: Vec::new(),
        }
    }

    fn parts(&self) -> core_api::MatrixParts<'_> {
        core_api::MatrixParts {
            row_ptr: &self.row_ptr,
            entries: &self.entries,
        }
    }
}

/// A circuit's constraints in host memory: what a shape file holds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ShapeData {
    pub num_inputs: u64,
    pub num_aux: u64,
    pub a: Matrix,
    pub b: Matrix,
    pub c: Matrix,
    /// Coefficients other than +1 and -1: entry code k >= 2 is `coeffs[k - 2]`.
    pub coeffs: Vec<Scalar>,
}

impl ShapeData {
    pub fn num_constraints(&self) -> usize {
        self.a.row_ptr.len().saturating_sub(1)
    }

    /// Records `circuit`'s constraints without its witness (value closures
    /// are never called), in bellperson's layout.
    pub fn record<C: Circuit<Scalar>>(circuit: C) -> Result<Self> {
        let mut cs = ShapeCs::default();
        frame(&mut cs, circuit, |cs| cs.inputs)?;
        cs.recorder.finish(cs.inputs, cs.aux)
    }
}

/// `circuit`'s constraints after input ONE, without bellperson's input
/// constraints at the end, in the recorder's marked columns, with the
/// counts of inputs (ONE included) and aux.
pub(crate) fn record_unframed<C: Circuit<Scalar>>(
    circuit: C,
) -> Result<(ShapeRecorder, usize, usize)> {
    let mut cs = ShapeCs::default();
    cs.alloc_input(|| "one", || Ok(Scalar::ONE))?;
    circuit.synthesize(&mut cs)?;
    Ok((cs.recorder, cs.inputs, cs.aux))
}

/// A shape held by the core, ready to prove from witnesses.
pub struct Shape {
    core: core_api::Shape,
    info: ShapeInfo,
}

impl Shape {
    /// Hands `data` to the core, which copies and validates it.
    pub fn new(data: &ShapeData) -> Result<Self> {
        let core = core_api::Shape::new(&core_api::ShapeParts {
            num_inputs: data.num_inputs,
            num_aux: data.num_aux,
            a: data.a.parts(),
            b: data.b.parts(),
            c: data.c.parts(),
            coeffs: fr_slice(&data.coeffs),
        })?;
        let info = core.info()?;
        Ok(Self { core, info })
    }

    /// Sizes, nonzeros, densities and the device footprint.
    pub fn info(&self) -> &ShapeInfo {
        &self.info
    }

    pub fn num_constraints(&self) -> usize {
        self.info.num_constraints as usize
    }

    pub fn num_inputs(&self) -> usize {
        self.info.num_inputs as usize
    }

    pub fn num_aux(&self) -> usize {
        self.info.num_aux as usize
    }

    pub(crate) fn core(&self) -> &core_api::Shape {
        &self.core
    }
}

impl std::fmt::Debug for Shape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shape").field("info", &self.info).finish()
    }
}

/// The coefficients other than 0, +1 and -1, each given a code once.
#[derive(Debug)]
pub(crate) struct CoeffTable {
    pub(crate) coeffs: Vec<Scalar>,
    codes: HashMap<[u64; 4], u32>,
    minus_one: [u64; 4],
}

impl CoeffTable {
    pub(crate) fn new() -> Self {
        Self {
            coeffs: Vec::new(),
            codes: HashMap::new(),
            minus_one: *limbs(&-Scalar::ONE),
        }
    }

    /// The entry code of `coeff`; `None` for zero (left out).
    pub(crate) fn code(&mut self, coeff: &Scalar) -> Option<u32> {
        let l = limbs(coeff);
        if *l == [0; 4] {
            return None;
        }
        if *l == ONE_LIMBS {
            return Some(core_api::COEFF_ONE);
        }
        if *l == self.minus_one {
            return Some(core_api::COEFF_MINUS_ONE);
        }
        let next = self.coeffs.len() as u32 + 2;
        let code = *self.codes.entry(*l).or_insert(next);
        if code == next {
            self.coeffs.push(*coeff);
        }
        Some(code)
    }
}

/// Input columns are marked with this bit while the input count is still
/// open; `finish` moves them to the front.
pub(crate) const INPUT_BIT: u32 = 1 << 31;

/// Builds the three matrices one constraint at a time.
#[derive(Debug)]
pub(crate) struct ShapeRecorder {
    pub(crate) a: Matrix,
    pub(crate) b: Matrix,
    pub(crate) c: Matrix,
    pub(crate) table: CoeffTable,
    pub(crate) too_wide: bool,
}

impl Default for ShapeRecorder {
    fn default() -> Self {
        Self {
            a: Matrix::new(0),
            b: Matrix::new(0),
            c: Matrix::new(0),
            table: CoeffTable::new(),
            too_wide: false,
        }
    }
}

fn push_row(
    m: &mut Matrix,
    table: &mut CoeffTable,
    too_wide: &mut bool,
    lc: &LinearCombination<Scalar>,
) {
    let vars = lc
        .iter_inputs()
        .map(|(&i, c)| (i, INPUT_BIT, c))
        .chain(lc.iter_aux().map(|(&i, c)| (i, 0, c)));
    for (i, mark, coeff) in vars {
        if let Some(code) = table.code(coeff) {
            *too_wide |= i >= INPUT_BIT as usize;
            m.entries.push(ShapeEntry {
                col: i as u32 | mark,
                coeff: code,
            });
        }
    }
    m.row_ptr.push(m.entries.len() as u64);
}

impl ShapeRecorder {
    /// Appends one row to each matrix: `a`, `b`, `c` as (column, code)
    /// entries in the recorder's marked columns, with codes of `table`.
    pub(crate) fn push_rows(&mut self, rows: [&[ShapeEntry]; 3], table: &CoeffTable) {
        for (m, row) in [&mut self.a, &mut self.b, &mut self.c]
            .into_iter()
            .zip(rows)
        {
            for e in row {
                let coeff = if e.coeff >= 2 {
                    // Codes from another table: the coefficient's code here,
                    // given in the order a sequential recording meets it.
                    match self.table.code(&table.coeffs[e.coeff as usize - 2]) {
                        Some(c) => c,
                        None => continue,
                    }
                } else {
                    e.coeff
                };
                m.entries.push(ShapeEntry { col: e.col, coeff });
            }
            m.row_ptr.push(m.entries.len() as u64);
        }
    }

    pub(crate) fn constraint(
        &mut self,
        a: &LinearCombination<Scalar>,
        b: &LinearCombination<Scalar>,
        c: &LinearCombination<Scalar>,
    ) {
        push_row(&mut self.a, &mut self.table, &mut self.too_wide, a);
        push_row(&mut self.b, &mut self.table, &mut self.too_wide, b);
        push_row(&mut self.c, &mut self.table, &mut self.too_wide, c);
    }

    /// The matrices over [inputs..., aux...] once the counts are known.
    pub(crate) fn finish(self, inputs: usize, aux: usize) -> Result<ShapeData> {
        if self.too_wide || inputs + aux >= INPUT_BIT as usize {
            return Err(Error::Invalid(format!(
                "{inputs} inputs and {aux} aux variables: a shape holds fewer than 2^31"
            )));
        }
        let ni = inputs as u32;
        let fix = |mut m: Matrix| {
            for e in &mut m.entries {
                e.col = if e.col & INPUT_BIT != 0 {
                    e.col & !INPUT_BIT
                } else {
                    e.col + ni
                };
            }
            m
        };
        Ok(ShapeData {
            num_inputs: inputs as u64,
            num_aux: aux as u64,
            a: fix(self.a),
            b: fix(self.b),
            c: fix(self.c),
            coeffs: self.table.coeffs,
        })
    }
}

/// Structure-only synthesis: counts variables, records constraints.
#[derive(Default)]
struct ShapeCs {
    inputs: usize,
    aux: usize,
    recorder: ShapeRecorder,
}

impl ConstraintSystem<Scalar> for ShapeCs {
    type Root = Self;

    fn new() -> Self {
        Self::default()
    }

    fn alloc<F, A, AR>(&mut self, _: A, _: F) -> std::result::Result<Variable, SynthesisError>
    where
        F: FnOnce() -> std::result::Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.aux += 1;
        Ok(Variable::new_unchecked(Index::Aux(self.aux - 1)))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, _: F) -> std::result::Result<Variable, SynthesisError>
    where
        F: FnOnce() -> std::result::Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.inputs += 1;
        Ok(Variable::new_unchecked(Index::Input(self.inputs - 1)))
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
    }

    flat_namespaces!();
}
