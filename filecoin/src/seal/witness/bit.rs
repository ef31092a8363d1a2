//! One bit of a gadget's witness as bellpepper's `Boolean` holds it: a
//! constant, or an allocated bit seen as is or negated. Its operations
//! allocate what bellpepper-core's `Boolean` operations allocate, in their
//! order and with their values, into [`AuxBits`]; they build no linear
//! combination (a witness generator never reads one).

use bellpepper_core::{ConstraintSystem, SynthesisError};
use bellperson::gadgets::boolean::Boolean;
use blstrs::Scalar;
use ff::Field;

/// A `Boolean`: `Const` is `Boolean::Constant`; `Var` an allocated bit,
/// `value` the boolean's value and `neg` whether it is seen negated
/// (`Boolean::Not`), so the allocated variable holds `value ^ neg`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Bit {
    Const(bool),
    Var { value: bool, neg: bool },
}

impl Bit {
    /// A gadget's `Boolean` as a bit; its value must be known.
    pub(crate) fn of(b: &Boolean) -> Result<Self, SynthesisError> {
        Ok(match b {
            Boolean::Constant(v) => Bit::Const(*v),
            Boolean::Is(a) => Bit::Var {
                value: a.get_value().ok_or(SynthesisError::AssignmentMissing)?,
                neg: false,
            },
            Boolean::Not(a) => Bit::Var {
                value: !a.get_value().ok_or(SynthesisError::AssignmentMissing)?,
                neg: true,
            },
        })
    }

    /// A freshly allocated bit (`Boolean::Is`).
    pub(crate) fn is(value: bool) -> Self {
        Bit::Var { value, neg: false }
    }

    pub(crate) fn value(self) -> bool {
        match self {
            Bit::Const(v) | Bit::Var { value: v, .. } => v,
        }
    }

    /// What the allocated variable holds (its value before a negation).
    fn allocated(self) -> bool {
        match self {
            Bit::Const(v) => v,
            Bit::Var { value, neg } => value ^ neg,
        }
    }

    pub(crate) fn not(self) -> Self {
        match self {
            Bit::Const(v) => Bit::Const(!v),
            Bit::Var { value, neg } => Bit::Var {
                value: !value,
                neg: !neg,
            },
        }
    }

    /// `Boolean::xor`: one bit allocated when both are variables (the xor
    /// of the allocated values), seen negated when exactly one was.
    pub(crate) fn xor(self, other: Self, aux: &mut AuxBits) -> Self {
        match (self, other) {
            (Bit::Const(false), x) | (x, Bit::Const(false)) => x,
            (Bit::Const(true), x) | (x, Bit::Const(true)) => x.not(),
            (Bit::Var { value: a, neg: na }, Bit::Var { value: b, neg: nb }) => {
                aux.push(self.allocated() ^ other.allocated());
                Bit::Var {
                    value: a ^ b,
                    neg: na ^ nb,
                }
            }
        }
    }

    /// `Boolean::and`: one bit allocated when both are variables.
    pub(crate) fn and(self, other: Self, aux: &mut AuxBits) -> Self {
        match (self, other) {
            (Bit::Const(false), _) | (_, Bit::Const(false)) => Bit::Const(false),
            (Bit::Const(true), x) | (x, Bit::Const(true)) => x,
            (a, b) => {
                let v = a.value() & b.value();
                aux.push(v);
                Bit::is(v)
            }
        }
    }

    /// `Boolean::sha256_ch`: `(a and b) xor ((not a) and c)`.
    pub(crate) fn ch(a: Self, b: Self, c: Self, aux: &mut AuxBits) -> Self {
        let v = (a.value() & b.value()) ^ (!a.value() & c.value());
        match (a, b, c) {
            (Bit::Const(_), Bit::Const(_), Bit::Const(_)) => Bit::Const(v),
            (Bit::Const(false), _, c) => c,
            (a, Bit::Const(false), c) => a.not().and(c, aux),
            (a, b, Bit::Const(false)) => a.and(b, aux),
            (a, b, Bit::Const(true)) => a.and(b.not(), aux).not(),
            (a, Bit::Const(true), c) => a.not().and(c.not(), aux).not(),
            // `a` constant true, or all variables: the general case.
            _ => {
                aux.push(v);
                Bit::is(v)
            }
        }
    }

    /// `Boolean::sha256_maj`: `(a and b) xor (a and c) xor (b and c)`; the
    /// general case allocates the result, then `b and c`.
    pub(crate) fn maj(a: Self, b: Self, c: Self, aux: &mut AuxBits) -> Self {
        let v = (a.value() & b.value()) ^ (a.value() & c.value()) ^ (b.value() & c.value());
        match (a, b, c) {
            (Bit::Const(_), Bit::Const(_), Bit::Const(_)) => Bit::Const(v),
            (Bit::Const(false), b, c) => b.and(c, aux),
            (a, Bit::Const(false), c) => a.and(c, aux),
            (a, b, Bit::Const(false)) => a.and(b, aux),
            (a, b, Bit::Const(true)) => a.not().and(b.not(), aux).not(),
            (a, Bit::Const(true), c) => a.not().and(c.not(), aux).not(),
            (Bit::Const(true), b, c) => b.not().and(c.not(), aux).not(),
            (_, b, c) => {
                aux.push(v);
                b.and(c, aux);
                Bit::is(v)
            }
        }
    }
}

/// The bits a gadget allocates, in order, until they are handed to the
/// constraint system in one piece.
#[derive(Default)]
pub(crate) struct AuxBits {
    bits: Vec<bool>,
}

impl AuxBits {
    pub(crate) fn push(&mut self, value: bool) {
        self.bits.push(value);
    }

    /// Allocates the bits held (0 or 1 each) in `cs`'s aux, in order, and
    /// empties the buffer. `cs` must be a witness generator: the bits get
    /// no variable and no constraint.
    pub(crate) fn flush<CS: ConstraintSystem<Scalar>>(&mut self, cs: &mut CS) {
        if self.bits.is_empty() {
            return;
        }
        let out = cs.allocate_empty_aux(self.bits.len());
        for (slot, &bit) in out.iter_mut().zip(&self.bits) {
            *slot = if bit { Scalar::ONE } else { Scalar::ZERO };
        }
        self.bits.clear();
    }
}
