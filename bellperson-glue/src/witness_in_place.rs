//! Witness pieces written in place.
//!
//! [`synthesize_pieces`] gives every piece (a challenge of a partition, say)
//! a witness of its own and copies it into the caller's assignment: the
//! pieces' pages are faulted in, then the assignment's, and one thread
//! copies each piece. At a 32 GiB PoRep partition (130 M aux, 18 pieces)
//! those page faults and the copy were about a fifth of the witness's CPU
//! time. When every piece allocates as many aux after the prefix (the same
//! gadgets over other values, as a partition's challenges do), the pieces'
//! ranges of the assignment are known once one piece has been seen: each
//! piece then writes its aux straight into its range, on the rayon pool,
//! and nothing is copied or held twice.
//!
//! [`synthesize_pieces_in_place`] learns that size from a first call (the
//! pieces synthesized as [`synthesize_pieces`] does, their sizes compared)
//! and keeps it in the caller's `OnceLock` for the next (the next partition
//! of the same proof). A piece that then allocates another number of aux,
//! or whose prefix differs, is an error naming it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

use bellpepper_core::{
    Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable,
};
use blstrs::Scalar;
use cuda_prover_device::panic_message;
use ff::Field;
use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::flat_cs::witness_generator;
use crate::witness_pieces::{context, own_witness, prefix_differs, synthesize_pieces_sized};
use crate::Witness;

/// [`synthesize_pieces`](crate::synthesize_pieces) into `cs`, with the
/// pieces written in place once `learned` holds their size (the aux count
/// of one piece after the prefix). Empty, the pieces are synthesized each
/// into a witness of its own and appended; if they all have one size (and
/// it is not zero) it is kept in `learned`. Set, the pieces must have that
/// size. Errors and the state of `cs` after one are as for
/// `synthesize_pieces`.
pub fn synthesize_pieces_in_place<CS, P, C>(
    cs: &mut CS,
    prefix: P,
    pieces: Vec<C>,
    learned: &OnceLock<usize>,
) -> Result<()>
where
    CS: ConstraintSystem<Scalar>,
    P: Circuit<Scalar> + Send,
    C: Circuit<Scalar> + Send,
{
    match learned.get() {
        Some(&size) if !pieces.is_empty() && cs.is_witness_generator() => {
            in_place(cs, prefix, pieces, size)
        }
        _ => {
            let sizes = synthesize_pieces_sized(cs, prefix, pieces)?;
            if let Some(&first) = sizes.first() {
                if first > 0 && sizes.iter().all(|&s| s == first) {
                    let _ = learned.set(first);
                }
            }
            Ok(())
        }
    }
}

/// What became of one piece.
enum Outcome {
    /// Its inputs after the prefix (its aux are in place).
    Done(Vec<Scalar>),
    Failed(Error),
    /// Not started: an earlier failure stopped the rest.
    Skipped,
}

fn in_place<CS, P, C>(cs: &mut CS, prefix: P, pieces: Vec<C>, size: usize) -> Result<()>
where
    CS: ConstraintSystem<Scalar>,
    P: Circuit<Scalar> + Send,
    C: Circuit<Scalar> + Send,
{
    let head = own_witness(prefix).map_err(|e| context("the prefix", e))?;
    cs.extend_inputs(&head.inputs[1..]);
    cs.extend_aux(&head.aux);
    let total = size.checked_mul(pieces.len()).ok_or_else(|| {
        Error::Invalid(format!(
            "{} pieces of {size} aux do not fit an assignment",
            pieces.len()
        ))
    })?;
    let region = cs.allocate_empty_aux(total);
    let stop = AtomicBool::new(false);
    let outcomes: Vec<Outcome> = pieces
        .into_par_iter()
        .zip(region.par_chunks_mut(size))
        .enumerate()
        .map(|(i, (circuit, out))| {
            if stop.load(Ordering::Relaxed) {
                return Outcome::Skipped;
            }
            match write_piece(circuit, &head, out) {
                Ok(inputs) => Outcome::Done(inputs),
                Err(e) => {
                    stop.store(true, Ordering::Relaxed);
                    Outcome::Failed(context(&format!("piece {i}"), e))
                }
            }
        })
        .collect();
    let mut inputs = Vec::with_capacity(outcomes.len());
    for o in outcomes {
        match o {
            Outcome::Done(v) => inputs.push(v),
            Outcome::Failed(e) => return Err(e),
            Outcome::Skipped => {}
        }
    }
    for v in inputs {
        cs.extend_inputs(&v);
    }
    Ok(())
}

/// Synthesizes one piece into `out` (its aux after the prefix), checking
/// its prefix against `head`; its inputs after the prefix come back.
fn write_piece<C: Circuit<Scalar>>(
    circuit: C,
    head: &Witness,
    out: &mut [Scalar],
) -> Result<Vec<Scalar>> {
    let want = out.len();
    let mut cs = InPlace {
        head_aux: head.aux.len(),
        head_inputs: head.inputs.len(),
        pre_aux: Vec::with_capacity(head.aux.len()),
        pre_inputs: Vec::with_capacity(head.inputs.len()),
        out,
        written: 0,
        inputs: Vec::new(),
        spill: Vec::new(),
        overflow: false,
    };
    let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        cs.alloc_input(|| "one", || Ok(Scalar::ONE))?;
        circuit.synthesize(&mut cs)
    }));
    if cs.overflow {
        return Err(Error::Invalid(format!(
            "allocates more than the {want} aux after the prefix that the pieces before it did"
        )));
    }
    match run {
        Ok(r) => r?,
        Err(p) => {
            return Err(Error::Invalid(format!(
                "the circuit panicked: {}",
                panic_message(&*p)
            )))
        }
    }
    if let Some(why) = prefix_differs(head, &cs.pre_inputs, &cs.pre_aux) {
        return Err(Error::Invalid(why));
    }
    if cs.written != want {
        return Err(Error::Invalid(format!(
            "allocates {} aux after the prefix, not the {want} that the pieces before it did",
            cs.written
        )));
    }
    Ok(cs.inputs)
}

/// A piece's constraint system: its prefix's values kept (to be compared
/// with the prefix's), its aux after the prefix written into `out`, its
/// inputs after the prefix kept. Past `out`'s end allocations go to
/// `spill` and `overflow` is set (the piece is then an error).
struct InPlace<'a> {
    head_aux: usize,
    head_inputs: usize,
    pre_aux: Vec<Scalar>,
    pre_inputs: Vec<Scalar>,
    out: &'a mut [Scalar],
    written: usize,
    inputs: Vec<Scalar>,
    spill: Vec<Scalar>,
    overflow: bool,
}

/// Where a run of aux went.
#[derive(Clone, Copy)]
enum AuxPlace {
    /// `pre_aux[at..]`: still the prefix.
    Prefix(usize),
    /// `out[at..]`: the piece's range.
    Out(usize),
    /// `spill`: past the range's end.
    Spill,
}

/// Where a run of inputs went.
#[derive(Clone, Copy)]
enum InputPlace {
    Prefix(usize),
    Own(usize),
}

impl InPlace<'_> {
    /// Reserves `n` more aux, zeroed: in the prefix while it lasts, then in
    /// `out`. An allocation across the prefix's end is a piece that does
    /// not start with its prefix (a panic, caught as an error).
    fn reserve_aux(&mut self, n: usize) -> AuxPlace {
        let at = self.pre_aux.len();
        if at < self.head_aux {
            assert!(
                at + n <= self.head_aux,
                "an allocation of {n} aux crosses the prefix's end ({at} of {})",
                self.head_aux
            );
            self.pre_aux.resize(at + n, Scalar::ZERO);
            return AuxPlace::Prefix(at);
        }
        if self.written + n > self.out.len() {
            self.overflow = true;
            self.spill.clear();
            self.spill.resize(n, Scalar::ZERO);
            return AuxPlace::Spill;
        }
        let at = self.written;
        self.out[at..at + n].fill(Scalar::ZERO);
        self.written += n;
        AuxPlace::Out(at)
    }

    /// Reserves `n` more inputs, zeroed (the prefix's first).
    fn reserve_inputs(&mut self, n: usize) -> InputPlace {
        let at = self.pre_inputs.len();
        if at < self.head_inputs {
            assert!(
                at + n <= self.head_inputs,
                "an allocation of {n} inputs crosses the prefix's end ({at} of {})",
                self.head_inputs
            );
            self.pre_inputs.resize(at + n, Scalar::ZERO);
            return InputPlace::Prefix(at);
        }
        let at = self.inputs.len();
        self.inputs.resize(at + n, Scalar::ZERO);
        InputPlace::Own(at)
    }

    /// The `n` aux at `place`, and the `m` inputs at `inputs`.
    fn lend(
        &mut self,
        place: AuxPlace,
        n: usize,
        inputs: InputPlace,
        m: usize,
    ) -> (&mut [Scalar], &mut [Scalar]) {
        let InPlace {
            pre_aux,
            pre_inputs,
            out,
            inputs: own_inputs,
            spill,
            ..
        } = self;
        let aux: &mut [Scalar] = match place {
            AuxPlace::Prefix(at) => &mut pre_aux[at..at + n],
            AuxPlace::Out(at) => &mut out[at..at + n],
            AuxPlace::Spill => &mut spill[..],
        };
        let inputs: &mut [Scalar] = match inputs {
            InputPlace::Prefix(at) => &mut pre_inputs[at..at + m],
            InputPlace::Own(at) => &mut own_inputs[at..at + m],
        };
        (aux, inputs)
    }

    fn aux_room(&mut self, n: usize) -> &mut [Scalar] {
        let place = self.reserve_aux(n);
        let inputs = InputPlace::Own(self.inputs.len());
        self.lend(place, n, inputs, 0).0
    }

    fn input_room(&mut self, n: usize) -> &mut [Scalar] {
        let place = self.reserve_inputs(n);
        self.lend(AuxPlace::Spill, 0, place, n).1
    }

    /// The index the next aux would have in the piece's own witness.
    fn aux_index(&self) -> usize {
        self.pre_aux.len() + self.written
    }
}

impl ConstraintSystem<Scalar> for InPlace<'_> {
    type Root = Self;

    fn new() -> Self {
        unreachable!("a piece's constraint system is made by write_piece")
    }

    fn alloc<F, A, AR>(&mut self, _: A, f: F) -> std::result::Result<Variable, SynthesisError>
    where
        F: FnOnce() -> std::result::Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        let v = f()?;
        // The common case first: one value into the piece's range.
        if self.pre_aux.len() == self.head_aux {
            if let Some(slot) = self.out.get_mut(self.written) {
                *slot = v;
                self.written += 1;
                return Ok(Variable::new_unchecked(Index::Aux(
                    self.head_aux + self.written - 1,
                )));
            }
        }
        let index = self.aux_index();
        self.aux_room(1)[0] = v;
        if self.overflow {
            // Stop the piece: it is an error whatever follows.
            return Err(SynthesisError::Unsatisfiable);
        }
        Ok(Variable::new_unchecked(Index::Aux(index)))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, f: F) -> std::result::Result<Variable, SynthesisError>
    where
        F: FnOnce() -> std::result::Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        let v = f()?;
        let index = self.pre_inputs.len() + self.inputs.len();
        self.input_room(1)[0] = v;
        Ok(Variable::new_unchecked(Index::Input(index)))
    }

    witness_generator!();

    fn extend_inputs(&mut self, new_inputs: &[Scalar]) {
        self.input_room(new_inputs.len())
            .copy_from_slice(new_inputs);
    }

    fn extend_aux(&mut self, new_aux: &[Scalar]) {
        self.aux_room(new_aux.len()).copy_from_slice(new_aux);
    }

    fn allocate_empty(&mut self, aux_n: usize, inputs_n: usize) -> (&mut [Scalar], &mut [Scalar]) {
        let aux = self.reserve_aux(aux_n);
        let inputs = self.reserve_inputs(inputs_n);
        self.lend(aux, aux_n, inputs, inputs_n)
    }

    fn allocate_empty_inputs(&mut self, n: usize) -> &mut [Scalar] {
        self.input_room(n)
    }

    fn allocate_empty_aux(&mut self, n: usize) -> &mut [Scalar] {
        self.aux_room(n)
    }

    fn inputs_slice(&self) -> &[Scalar] {
        panic!("a piece written in place cannot lend its inputs as one slice")
    }

    fn aux_slice(&self) -> &[Scalar] {
        panic!("a piece written in place cannot lend its aux as one slice")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cs::SizeHint;
    use crate::synthesize_witness;

    /// A prefix (input `x`, aux `x^2`), then per piece i: `len` aux squared
    /// in a chain from `x^2 + i`, written through `allocate_empty` when
    /// `bulk` (as neptune's Poseidon witness does), and an input (the last).
    struct Toy {
        x: u64,
        pieces: Vec<(u64, usize)>,
        bulk: bool,
        prefix_x: Option<u64>,
    }

    impl Circuit<Scalar> for Toy {
        fn synthesize<CS: ConstraintSystem<Scalar>>(
            self,
            cs: &mut CS,
        ) -> std::result::Result<(), SynthesisError> {
            let x = Scalar::from(self.prefix_x.unwrap_or(self.x));
            cs.alloc_input(|| "x", || Ok(x))?;
            cs.alloc(|| "x2", || Ok(x.square()))?;
            for (i, len) in self.pieces {
                let mut v = Scalar::from(self.x).square() + Scalar::from(i);
                let mut chain = Vec::with_capacity(len);
                for _ in 0..len {
                    v = v.square() + Scalar::ONE;
                    chain.push(v);
                }
                if self.bulk {
                    let (aux, inputs) = cs.allocate_empty(len, 1);
                    aux.copy_from_slice(&chain);
                    inputs[0] = v;
                } else {
                    for c in chain {
                        cs.alloc(|| "step", || Ok(c))?;
                    }
                    cs.alloc_input(|| "out", || Ok(v))?;
                }
            }
            Ok(())
        }
    }

    fn toy(x: u64, pieces: &[(u64, usize)], bulk: bool) -> Toy {
        Toy {
            x,
            pieces: pieces.to_vec(),
            bulk,
            prefix_x: None,
        }
    }

    fn split(x: u64, pieces: &[(u64, usize)], bulk: bool) -> (Toy, Vec<Toy>) {
        let parts = pieces.iter().map(|p| toy(x, &[*p], bulk)).collect();
        (toy(x, &[], bulk), parts)
    }

    /// `synthesize_pieces_in_place` into a fresh witness (ONE first).
    fn in_place_witness(
        prefix: Toy,
        parts: Vec<Toy>,
        learned: &OnceLock<usize>,
    ) -> Result<Witness> {
        let mut cs = Witness::with_capacity(SizeHint::default());
        cs.alloc_input(|| "one", || Ok(Scalar::ONE)).unwrap();
        synthesize_pieces_in_place(&mut cs, prefix, parts, learned)?;
        Ok(cs)
    }

    #[test]
    fn the_size_is_learned_then_pieces_are_written_in_place() {
        for bulk in [false, true] {
            let pieces: Vec<(u64, usize)> = (0..40).map(|i| (i, 30_000)).collect();
            let seq = synthesize_witness(toy(7, &pieces, bulk), SizeHint::default()).unwrap();
            let learned = OnceLock::new();
            let (prefix, parts) = split(7, &pieces, bulk);
            let first = in_place_witness(prefix, parts, &learned).unwrap();
            assert_eq!(first, seq, "bulk {bulk}: the first call");
            assert_eq!(learned.get(), Some(&30_000), "bulk {bulk}");
            // Set: the pieces are written in place, the same assignment.
            let (prefix, parts) = split(7, &pieces, bulk);
            let second = in_place_witness(prefix, parts, &learned).unwrap();
            assert_eq!(second, seq, "bulk {bulk}: in place");
        }
    }

    #[test]
    fn unequal_pieces_teach_nothing() {
        let pieces = [(0, 3), (1, 4)];
        let learned = OnceLock::new();
        let (prefix, parts) = split(3, &pieces, false);
        let w = in_place_witness(prefix, parts, &learned).unwrap();
        assert_eq!(
            w,
            synthesize_witness(toy(3, &pieces, false), SizeHint::default()).unwrap()
        );
        assert_eq!(learned.get(), None);
    }

    #[test]
    fn a_piece_of_another_size_or_prefix_is_named() {
        let learned = OnceLock::from(5);
        for (pieces, bulk, why) in [
            (
                vec![(0, 5), (1, 6), (2, 5)],
                false,
                "piece 1: allocates more than the 5 aux",
            ),
            (
                vec![(0, 5), (1, 5), (2, 4)],
                false,
                "piece 2: allocates 4 aux after the prefix, not the 5",
            ),
            (
                vec![(0, 5), (1, 9)],
                true,
                "piece 1: allocates more than the 5 aux",
            ),
        ] {
            let (prefix, parts) = split(3, &pieces, bulk);
            let e = in_place_witness(prefix, parts, &learned).unwrap_err();
            assert!(e.to_string().contains(why), "{e}");
        }
        let (prefix, mut parts) = split(3, &[(0, 5), (1, 5)], false);
        parts[1].prefix_x = Some(4);
        let e = in_place_witness(prefix, parts, &learned).unwrap_err();
        assert!(
            e.to_string()
                .contains("piece 1: its leading inputs differ from the prefix's"),
            "{e}"
        );
    }

    #[test]
    fn a_panicking_piece_is_an_error() {
        struct Panics;
        impl Circuit<Scalar> for Panics {
            fn synthesize<CS: ConstraintSystem<Scalar>>(
                self,
                _: &mut CS,
            ) -> std::result::Result<(), SynthesisError> {
                panic!("this piece panics")
            }
        }
        struct Prefix;
        impl Circuit<Scalar> for Prefix {
            fn synthesize<CS: ConstraintSystem<Scalar>>(
                self,
                _: &mut CS,
            ) -> std::result::Result<(), SynthesisError> {
                Ok(())
            }
        }
        let mut cs = Witness::with_capacity(SizeHint::default());
        let e =
            synthesize_pieces_in_place(&mut cs, Prefix, vec![Panics, Panics], &OnceLock::from(3))
                .unwrap_err();
        assert!(e.to_string().contains("this piece panics"), "{e}");
    }
}
