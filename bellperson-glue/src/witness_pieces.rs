//! Witness-only synthesis of a circuit made of independent pieces, one
//! piece per core.
//!
//! A circuit that allocates a prefix (its commitments, say) and then pieces
//! that read only the prefix (one sub-circuit per challenge, say) can be
//! cut into a prefix circuit and piece circuits, each piece circuit being
//! the prefix followed by that piece alone. Each one is synthesized on its
//! own thread into its own [`Witness`]; every piece's leading part must
//! equal the prefix's witness; the prefix, then each piece without its
//! leading prefix, in piece order, is exactly the assignment one
//! sequential synthesis of the whole circuit gives, and it is copied into
//! the caller's witness-only constraint system in parallel.

use bellpepper_core::{Circuit, ConstraintSystem};
use blstrs::Scalar;
use ff::Field;
use rayon::prelude::*;

use crate::cs::SizeHint;
use crate::error::{Error, Result};
use crate::witness::{synthesize_witness, Witness};

/// Scalars per parallel copy task.
const COPY_CHUNK: usize = 1 << 16;

/// Appends to `cs`, a witness-only constraint system (`is_witness_generator`,
/// with `allocate_empty`: this layer's [`Witness`], bellpepper's
/// `WitnessCS`), the assignment that synthesizing the prefix and then every
/// piece, in order, would append. Each of `pieces` is a circuit that
/// allocates the prefix first (the same values as `prefix`) and then its
/// piece.
///
/// The prefix and the pieces are synthesized on the current rayon pool. A
/// piece whose leading part differs from the prefix (in length or value) is
/// an error, and so is a panic in any of them (with its message); the first
/// error in order (prefix, then pieces) is returned, and `cs` is left as it
/// was.
pub fn synthesize_pieces<CS, P, C>(cs: &mut CS, prefix: P, pieces: Vec<C>) -> Result<()>
where
    CS: ConstraintSystem<Scalar>,
    P: Circuit<Scalar> + Send,
    C: Circuit<Scalar> + Send,
{
    if !cs.is_witness_generator() {
        return Err(Error::Invalid(
            "witness pieces go into a witness-only constraint system".into(),
        ));
    }
    let (head, parts) = rayon::join(
        || own_witness(prefix).map_err(|e| context("the prefix", e)),
        || {
            pieces
                .into_par_iter()
                .enumerate()
                .map(|(i, c)| own_witness(c).map_err(|e| context(&format!("piece {i}"), e)))
                .collect::<Vec<_>>()
        },
    );
    let head = head?;
    let parts = parts.into_iter().collect::<Result<Vec<_>>>()?;
    for (i, part) in parts.iter().enumerate() {
        check_prefix(&head, part, i)?;
    }

    // The prefix's own inputs follow ONE, which `cs` already has.
    let (head_in, head_aux) = (head.inputs.len(), head.aux.len());
    let mut inputs_src: Vec<&[Scalar]> = vec![&head.inputs[1..]];
    let mut aux_src: Vec<&[Scalar]> = vec![&head.aux];
    for part in &parts {
        inputs_src.push(&part.inputs[head_in..]);
        aux_src.push(&part.aux[head_aux..]);
    }
    let inputs_n: usize = inputs_src.iter().map(|s| s.len()).sum();
    let aux_n: usize = aux_src.iter().map(|s| s.len()).sum();
    let (aux, inputs) = cs.allocate_empty(aux_n, inputs_n);
    if aux.len() != aux_n || inputs.len() != inputs_n {
        return Err(Error::Invalid(format!(
            "the constraint system allocated {} aux and {} inputs for {aux_n} and {inputs_n}",
            aux.len(),
            inputs.len()
        )));
    }
    let mut jobs = ranges(inputs, &inputs_src);
    jobs.extend(ranges(aux, &aux_src));
    jobs.into_par_iter().for_each(|(dst, src)| {
        dst.par_chunks_mut(COPY_CHUNK)
            .zip(src.par_chunks(COPY_CHUNK))
            .for_each(|(d, s)| d.copy_from_slice(s));
    });
    Ok(())
}

/// [`synthesize_pieces`] into a fresh [`Witness`] reserved from `hint`
/// (the whole circuit's sizes), starting with ONE as
/// [`synthesize_witness`] does: equal to `synthesize_witness` of the whole
/// circuit.
pub fn synthesize_witness_pieces<P, C>(prefix: P, pieces: Vec<C>, hint: SizeHint) -> Result<Witness>
where
    P: Circuit<Scalar> + Send,
    C: Circuit<Scalar> + Send,
{
    let mut cs = Witness::with_capacity(hint);
    cs.alloc_input(|| "one", || Ok(Scalar::ONE))?;
    synthesize_pieces(&mut cs, prefix, pieces)?;
    Ok(cs)
}

/// One circuit's witness in a witness of its own (ONE first), a panic
/// caught as an error.
fn own_witness<C: Circuit<Scalar>>(circuit: C) -> Result<Witness> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        synthesize_witness(circuit, SizeHint::default())
    })) {
        Ok(r) => Ok(r?),
        Err(p) => Err(Error::Invalid(format!(
            "the circuit panicked: {}",
            panic_message(&*p)
        ))),
    }
}

fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "panic".into())
}

/// A synthesis error stays one (its kind is the caller's to read); others
/// name where they happened.
fn context(what: &str, e: Error) -> Error {
    match e {
        Error::Invalid(m) => Error::Invalid(format!("{what}: {m}")),
        e => e,
    }
}

fn check_prefix(head: &Witness, part: &Witness, i: usize) -> Result<()> {
    let (hi, ha) = (head.inputs.len(), head.aux.len());
    if part.inputs.len() < hi || part.aux.len() < ha {
        return Err(Error::Invalid(format!(
            "piece {i} allocates {} inputs and {} aux, fewer than its prefix's {hi} and {ha}",
            part.inputs.len(),
            part.aux.len()
        )));
    }
    if part.inputs[..hi] != head.inputs[..] {
        return Err(Error::Invalid(format!(
            "piece {i}'s leading inputs differ from the prefix's"
        )));
    }
    if part.aux[..ha] != head.aux[..] {
        return Err(Error::Invalid(format!(
            "piece {i}'s leading aux differ from the prefix's"
        )));
    }
    Ok(())
}

/// `dst` cut into consecutive ranges as long as each of `srcs`, paired.
fn ranges<'d, 's>(
    mut dst: &'d mut [Scalar],
    srcs: &[&'s [Scalar]],
) -> Vec<(&'d mut [Scalar], &'s [Scalar])> {
    let mut out = Vec::with_capacity(srcs.len());
    for &src in srcs {
        let (head, rest) = std::mem::take(&mut dst).split_at_mut(src.len());
        out.push((head, src));
        dst = rest;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use bellpepper_core::SynthesisError;

    use crate::cs::Synthesized;

    /// A toy circuit: a prefix (one input `x`, aux `x^2`, `x^3`), then
    /// per piece i: an aux `x^2 + i`, `len` aux values squared in a chain
    /// from it, and an input (the last of them).
    struct Toy {
        x: u64,
        pieces: Vec<(u64, usize)>,
        panic_in: Option<u64>,
    }

    impl Toy {
        fn whole(x: u64, pieces: &[(u64, usize)]) -> Self {
            Toy {
                x,
                pieces: pieces.to_vec(),
                panic_in: None,
            }
        }
    }

    impl Circuit<Scalar> for Toy {
        fn synthesize<CS: ConstraintSystem<Scalar>>(
            self,
            cs: &mut CS,
        ) -> std::result::Result<(), SynthesisError> {
            let x = Scalar::from(self.x);
            cs.alloc_input(|| "x", || Ok(x))?;
            let x2 = x.square();
            cs.alloc(|| "x2", || Ok(x2))?;
            cs.alloc(|| "x3", || Ok(x2 * x))?;
            for (i, len) in self.pieces {
                if self.panic_in == Some(i) {
                    panic!("toy piece {i} panics");
                }
                let mut v = x2 + Scalar::from(i);
                cs.alloc(|| "start", || Ok(v))?;
                for _ in 0..len {
                    v = v.square() + Scalar::ONE;
                    cs.alloc(|| "step", || Ok(v))?;
                }
                cs.alloc_input(|| "out", || Ok(v))?;
            }
            Ok(())
        }
    }

    const PIECES: [(u64, usize); 5] = [(0, 3), (1, 0), (2, 70_000), (3, 17), (4, 1)];

    fn split(x: u64, pieces: &[(u64, usize)]) -> (Toy, Vec<Toy>) {
        let prefix = Toy::whole(x, &[]);
        let parts = pieces.iter().map(|p| Toy::whole(x, &[*p])).collect();
        (prefix, parts)
    }

    #[test]
    fn pieces_equal_one_sequential_synthesis() {
        let seq = synthesize_witness(Toy::whole(5, &PIECES), SizeHint::default()).unwrap();
        let (prefix, parts) = split(5, &PIECES);
        let par = synthesize_witness_pieces(prefix, parts, SizeHint::default()).unwrap();
        assert_eq!(par.inputs.len(), 2 + PIECES.len());
        assert_eq!(par.aux.len(), seq.aux.len());
        assert_eq!(par, seq);

        // No pieces: the prefix alone.
        let (prefix, _) = split(5, &[]);
        let alone = synthesize_witness_pieces(prefix, Vec::<Toy>::new(), SizeHint::default());
        assert_eq!(
            alone.unwrap(),
            synthesize_witness(Toy::whole(5, &[]), SizeHint::default()).unwrap()
        );
    }

    #[test]
    fn pieces_append_after_what_the_system_holds() {
        let mut seq = Witness::default();
        seq.alloc_input(|| "one", || Ok(Scalar::ONE)).unwrap();
        seq.alloc(|| "before", || Ok(Scalar::from(9u64))).unwrap();
        let mut par = seq.clone();
        Toy::whole(3, &PIECES).synthesize(&mut seq).unwrap();
        let (prefix, parts) = split(3, &PIECES);
        synthesize_pieces(&mut par, prefix, parts).unwrap();
        assert_eq!(par, seq);
    }

    #[test]
    fn a_piece_with_another_prefix_is_an_error() {
        let (prefix, mut parts) = split(5, &PIECES);
        parts[3].x = 6;
        let e = synthesize_witness_pieces(prefix, parts, SizeHint::default()).unwrap_err();
        assert!(
            e.to_string().contains("piece 3's leading inputs differ"),
            "{e}"
        );

        // Same inputs, other aux: a circuit whose prefix aux differ.
        struct OtherAux;
        impl Circuit<Scalar> for OtherAux {
            fn synthesize<CS: ConstraintSystem<Scalar>>(
                self,
                cs: &mut CS,
            ) -> std::result::Result<(), SynthesisError> {
                cs.alloc_input(|| "x", || Ok(Scalar::from(5u64)))?;
                cs.alloc(|| "x2", || Ok(Scalar::from(26u64)))?;
                cs.alloc(|| "x3", || Ok(Scalar::from(125u64)))?;
                cs.alloc(|| "more", || Ok(Scalar::ONE))?;
                Ok(())
            }
        }
        let (prefix, _) = split(5, &[]);
        let e = synthesize_witness_pieces(prefix, vec![OtherAux], SizeHint::default()).unwrap_err();
        assert!(
            e.to_string().contains("piece 0's leading aux differ"),
            "{e}"
        );

        // Shorter than the prefix (given a longer prefix than its own).
        let longer_prefix = Toy::whole(5, &[(0, 2)]);
        let short = Toy::whole(5, &[]);
        let e =
            synthesize_witness_pieces(longer_prefix, vec![short], SizeHint::default()).unwrap_err();
        assert!(e.to_string().contains("fewer than its prefix's"), "{e}");
    }

    #[test]
    fn a_panicking_piece_is_an_error_and_leaves_the_system_alone() {
        let (prefix, mut parts) = split(5, &PIECES);
        parts[2].panic_in = Some(2);
        let mut cs = Witness::default();
        cs.alloc_input(|| "one", || Ok(Scalar::ONE)).unwrap();
        let e = synthesize_pieces(&mut cs, prefix, parts).unwrap_err();
        let m = e.to_string();
        assert!(
            m.contains("piece 2") && m.contains("toy piece 2 panics"),
            "{m}"
        );
        assert_eq!((cs.inputs.len(), cs.aux.len()), (1, 0));
    }

    #[test]
    fn a_synthesis_error_keeps_its_kind() {
        struct Missing;
        impl Circuit<Scalar> for Missing {
            fn synthesize<CS: ConstraintSystem<Scalar>>(
                self,
                cs: &mut CS,
            ) -> std::result::Result<(), SynthesisError> {
                cs.alloc(|| "none", || Err(SynthesisError::AssignmentMissing))?;
                Ok(())
            }
        }
        let e = synthesize_witness_pieces(Missing, vec![Missing], SizeHint::default()).unwrap_err();
        assert!(matches!(
            e,
            Error::Synthesis(SynthesisError::AssignmentMissing)
        ));
    }

    #[test]
    fn a_full_constraint_system_is_refused() {
        let mut cs = Synthesized::new();
        let (prefix, parts) = split(5, &PIECES);
        let e = synthesize_pieces(&mut cs, prefix, parts).unwrap_err();
        assert!(e.to_string().contains("witness-only"), "{e}");
    }
}
