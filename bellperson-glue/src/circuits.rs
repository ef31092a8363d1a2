//! Built-in circuits for the CLI, tests and benchmarks.
//!
//! - `chain`: `x_{i+1} = x_i^2 + 7` repeated, the last value public. Dense:
//!   every witness value is a random-looking field element, in A and B.
//! - `bits`: 64-bit values, each decomposed into 63 booleans (`b * b = b`)
//!   and one packing constraint, the first value public. Most witness values
//!   are 0 or 1 and the packed values appear only in C: the shape of
//!   storage-proof circuits.
//!
//! Both are sized by `log_constraints`: the constraint count (with
//! bellperson's input constraints) fits a domain of `2^log_constraints`.

use bellpepper_core::{Circuit, ConstraintSystem, SynthesisError};
use bellperson::groth16::{generate_random_parameters, Parameters};
use blstrs::{Bls12, Scalar};
use ff::Field;
use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};

/// Which built-in circuit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    Chain,
    Bits,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Chain => "chain",
            Kind::Bits => "bits",
        }
    }
}

impl std::str::FromStr for Kind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "chain" => Ok(Kind::Chain),
            "bits" => Ok(Kind::Bits),
            other => Err(format!(
                "unknown circuit '{other}' (expected chain or bits)"
            )),
        }
    }
}

/// Smallest and largest supported `log_constraints`.
pub const MIN_LOG: u32 = 7;
pub const MAX_LOG: u32 = 26;

/// One instance of a built-in circuit; `seed` picks the witness.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BuiltIn {
    pub kind: Kind,
    pub log_constraints: u32,
    pub seed: u64,
}

impl BuiltIn {
    pub fn new(kind: Kind, log_constraints: u32, seed: u64) -> Result<Self, String> {
        if !(MIN_LOG..=MAX_LOG).contains(&log_constraints) {
            return Err(format!(
                "log_constraints {log_constraints} is outside {MIN_LOG}..={MAX_LOG}"
            ));
        }
        Ok(Self {
            kind,
            log_constraints,
            seed,
        })
    }

    fn chain_steps(&self) -> usize {
        // steps constraints plus the two input constraints (ONE and y).
        (1usize << self.log_constraints) - 2
    }

    fn bits_values(&self) -> usize {
        // 64 constraints per value plus the two input constraints.
        ((1usize << self.log_constraints) - 2) / 64
    }

    /// The public input (without ONE), computed without synthesis.
    pub fn public_input(&self) -> Scalar {
        let mut rng = ChaCha8Rng::seed_from_u64(self.seed);
        match self.kind {
            Kind::Chain => {
                let mut x = Scalar::random(&mut rng);
                let seven = Scalar::from(7u64);
                for _ in 0..self.chain_steps() {
                    x = x.square() + seven;
                }
                x
            }
            Kind::Bits => Scalar::from(rng.next_u64() >> 1),
        }
    }

    /// Random bellperson parameters for this circuit's shape.
    pub fn generate_params<R: RngCore>(
        &self,
        rng: &mut R,
    ) -> Result<Parameters<Bls12>, SynthesisError> {
        generate_random_parameters::<Bls12, _, _>(*self, rng)
    }
}

impl Circuit<Scalar> for BuiltIn {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let mut rng = ChaCha8Rng::seed_from_u64(self.seed);
        match self.kind {
            Kind::Chain => synthesize_chain(cs, self.chain_steps(), Scalar::random(&mut rng)),
            Kind::Bits => {
                let values: Vec<u64> = (0..self.bits_values())
                    .map(|_| rng.next_u64() >> 1)
                    .collect();
                synthesize_bits(cs, &values)
            }
        }
    }
}

fn synthesize_chain<CS: ConstraintSystem<Scalar>>(
    cs: &mut CS,
    steps: usize,
    x0: Scalar,
) -> Result<(), SynthesisError> {
    // One pass: each value is allocated as it is computed and constrained
    // against the one before, so no copy of the chain is kept (witness-only
    // synthesis is then the squarings and the assignment's own writes).
    // Variables and constraints come in the same order as allocating all
    // values first and enforcing afterwards: aux x_0..x_{steps-1}, input y,
    // constraint i between x_i and x_{i+1}.
    let seven = Scalar::from(7u64);
    let mut value = x0;
    let mut x = cs.alloc(|| "x", || Ok(value))?;
    for i in 0..steps {
        value = value.square() + seven;
        let next = if i + 1 == steps {
            cs.alloc_input(|| "y", || Ok(value))?
        } else {
            cs.alloc(|| "x", || Ok(value))?
        };
        cs.enforce(
            || "x^2 + 7",
            |lc| lc + x,
            |lc| lc + x,
            |lc| lc + next - (seven, CS::one()),
        );
        x = next;
    }
    Ok(())
}

fn synthesize_bits<CS: ConstraintSystem<Scalar>>(
    cs: &mut CS,
    values: &[u64],
) -> Result<(), SynthesisError> {
    let mut coeffs = Vec::with_capacity(63);
    let mut p = Scalar::ONE;
    for _ in 0..63 {
        coeffs.push(p);
        p = p.double();
    }
    for (k, &v) in values.iter().enumerate() {
        let value = Scalar::from(v);
        let packed = if k == 0 {
            cs.alloc_input(|| "value", || Ok(value))?
        } else {
            cs.alloc(|| "value", || Ok(value))?
        };
        let mut bits = Vec::with_capacity(63);
        for j in 0..63 {
            let bit = if (v >> j) & 1 == 1 {
                Scalar::ONE
            } else {
                Scalar::ZERO
            };
            let b = cs.alloc(|| "bit", || Ok(bit))?;
            cs.enforce(|| "boolean", |lc| lc + b, |lc| lc + b, |lc| lc + b);
            bits.push(b);
        }
        cs.enforce(
            || "pack",
            |mut lc| {
                for (b, c) in bits.iter().zip(&coeffs) {
                    lc = lc + (*c, *b);
                }
                lc
            },
            |lc| lc + CS::one(),
            |lc| lc + packed,
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{synthesize_recording, SizeHint};

    /// The chain as first written: every value, then every variable, then
    /// the constraints. Keys and shape files made from it must keep working.
    struct TwoPass {
        steps: usize,
        x0: Scalar,
    }

    impl Circuit<Scalar> for TwoPass {
        fn synthesize<CS: ConstraintSystem<Scalar>>(
            self,
            cs: &mut CS,
        ) -> Result<(), SynthesisError> {
            let seven = Scalar::from(7u64);
            let mut values = vec![self.x0];
            for i in 0..self.steps {
                values.push(values[i].square() + seven);
            }
            let mut vars = Vec::new();
            for v in &values[..self.steps] {
                let v = *v;
                vars.push(cs.alloc(|| "x", || Ok(v))?);
            }
            let y = values[self.steps];
            vars.push(cs.alloc_input(|| "y", || Ok(y))?);
            for i in 0..self.steps {
                let (x, next) = (vars[i], vars[i + 1]);
                cs.enforce(
                    || "x^2 + 7",
                    |lc| lc + x,
                    |lc| lc + x,
                    |lc| lc + next - (seven, CS::one()),
                );
            }
            Ok(())
        }
    }

    #[test]
    fn chain_in_one_pass_keeps_the_shape_and_assignment_of_two_passes() {
        for (log, seed) in [(MIN_LOG, 3u64), (10, 5)] {
            let circuit = BuiltIn::new(Kind::Chain, log, seed).unwrap();
            let x0 = Scalar::random(&mut ChaCha8Rng::seed_from_u64(seed));
            let (one, one_shape) = synthesize_recording(circuit, SizeHint::default()).unwrap();
            let (two, two_shape) = synthesize_recording(
                TwoPass {
                    steps: circuit.chain_steps(),
                    x0,
                },
                SizeHint::default(),
            )
            .unwrap();
            assert_eq!(one_shape, two_shape, "2^{log}: constraints differ");
            assert_eq!(one_shape.num_constraints(), 1 << log);
            assert_eq!((&one.inputs, &one.aux), (&two.inputs, &two.aux));
            assert_eq!((&one.a, &one.b, &one.c), (&two.a, &two.b, &two.c));
            assert_eq!(one.public_inputs(), [circuit.public_input()]);
        }
    }
}
