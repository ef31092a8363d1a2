//! Witness-only synthesis of a circuit made of independent pieces, one
//! piece per core.
//!
//! A circuit that allocates a prefix (its commitments, say) and then pieces
//! that read only the prefix (one sub-circuit per challenge, say) can be
//! cut into a prefix circuit and piece circuits, each piece circuit being
//! the prefix followed by that piece alone. Each one is synthesized on a
//! thread of the rayon pool into its own [`Witness`]; every piece's leading
//! part must equal the prefix's witness; the prefix, then each piece without
//! its leading prefix, in piece order, is exactly the assignment one
//! sequential synthesis of the whole circuit gives.
//!
//! The pool's threads take the circuits in order (prefix first), so they
//! finish nearly in order, and one more thread appends each to the
//! caller's constraint system as soon as those before it are in, then
//! drops it: host memory stays near one witness (the pieces in flight and
//! what is appended; the caller's reservation is only touched as it
//! fills) instead of two, and the copy overlaps the synthesis.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Mutex};

use bellpepper_core::{Circuit, ConstraintSystem};
use blstrs::Scalar;
use cuda_prover_device::panic_message;
use ff::Field;

use crate::cs::SizeHint;
use crate::error::{Error, Result};
use crate::witness::{synthesize_witness, Witness};

/// Appends to `cs`, a witness-only constraint system (`is_witness_generator`,
/// with `extend_inputs` and `extend_aux`: this layer's [`Witness`],
/// bellpepper's `WitnessCS`), the assignment that synthesizing the prefix and
/// then every piece, in order, would append. Each of `pieces` is a circuit
/// that allocates the prefix first (the same values as `prefix`) and then
/// its piece.
///
/// The circuits are synthesized on the current rayon pool. A piece whose
/// leading part differs from the prefix (in length or value) is an error,
/// and so is a panic in any circuit (with its message). After an error no
/// further circuit starts, the first error in order (prefix, then pieces)
/// among those that ran is returned, and `cs` holds a part of the
/// assignment: drop it.
pub fn synthesize_pieces<CS, P, C>(cs: &mut CS, prefix: P, pieces: Vec<C>) -> Result<()>
where
    CS: ConstraintSystem<Scalar>,
    P: Circuit<Scalar> + Send,
    C: Circuit<Scalar> + Send,
{
    synthesize_pieces_sized(cs, prefix, pieces).map(|_| ())
}

/// [`synthesize_pieces`], returning how many aux each piece allocated
/// after its prefix, in piece order.
pub(crate) fn synthesize_pieces_sized<CS, P, C>(
    cs: &mut CS,
    prefix: P,
    pieces: Vec<C>,
) -> Result<Vec<usize>>
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
    let count = 1 + pieces.len();
    // Circuit j: 0 the prefix, i + 1 piece i.
    let queue = Mutex::new((Some(prefix), pieces.into_iter().enumerate()));
    let stop = AtomicBool::new(false);
    let (tx, rx) = mpsc::channel::<(usize, Result<Witness>)>();
    std::thread::scope(|s| {
        let appender = s.spawn(|| append_in_order(cs, rx, count, &stop));
        let threads = rayon::current_num_threads().clamp(1, count);
        rayon::scope(|r| {
            for _ in 0..threads {
                let tx = tx.clone();
                let (queue, stop) = (&queue, &stop);
                r.spawn(move |_| synthesize_queue(queue, stop, tx));
            }
        });
        drop(tx);
        match appender.join() {
            Ok(r) => r,
            Err(p) => Err(Error::Invalid(format!(
                "appending the witness pieces panicked: {}",
                panic_message(&*p)
            ))),
        }
    })
}

/// The circuits not started yet: the prefix (until taken), then the
/// pieces with their numbers.
type Queue<P, C> = (Option<P>, std::iter::Enumerate<std::vec::IntoIter<C>>);

enum Job<P, C> {
    Prefix(P),
    Piece(usize, C),
}

/// One pool thread: synthesizes the next circuit of `queue` until it is
/// empty or `stop` is set, sending each witness (or error) with its number.
fn synthesize_queue<P, C>(
    queue: &Mutex<Queue<P, C>>,
    stop: &AtomicBool,
    tx: mpsc::Sender<(usize, Result<Witness>)>,
) where
    P: Circuit<Scalar>,
    C: Circuit<Scalar>,
{
    while !stop.load(Ordering::Relaxed) {
        let job = {
            let mut q = queue.lock().unwrap_or_else(|p| p.into_inner());
            match q.0.take() {
                Some(prefix) => Job::Prefix(prefix),
                None => match q.1.next() {
                    Some((i, c)) => Job::Piece(i, c),
                    None => return,
                },
            }
        };
        let done = match job {
            Job::Prefix(p) => (0, own_witness(p).map_err(|e| context("the prefix", e))),
            Job::Piece(i, c) => (
                i + 1,
                own_witness(c).map_err(|e| context(&format!("piece {i}"), e)),
            ),
        };
        if tx.send(done).is_err() {
            return;
        }
    }
}

/// Takes the witnesses as they come and appends them in circuit order
/// (the prefix without ONE, which `cs` has; each piece without the
/// prefix), dropping each once appended. Stops at the first error.
fn append_in_order<CS: ConstraintSystem<Scalar>>(
    cs: &mut CS,
    rx: mpsc::Receiver<(usize, Result<Witness>)>,
    count: usize,
    stop: &AtomicBool,
) -> Result<Vec<usize>> {
    let mut sizes = Vec::with_capacity(count.saturating_sub(1));
    let mut waiting = BTreeMap::new();
    let mut head: Option<Witness> = None;
    let mut next = 0;
    let mut failed: Option<(usize, Error)> = None;
    for (j, r) in rx.iter() {
        match r {
            Ok(w) => {
                waiting.insert(j, w);
            }
            Err(e) => {
                stop.store(true, Ordering::Relaxed);
                if failed.as_ref().is_none_or(|(k, _)| j < *k) {
                    failed = Some((j, e));
                }
            }
        }
        // Those before a failure are still appended (and checked): an
        // earlier piece's error comes first.
        let end = failed.as_ref().map_or(count, |(k, _)| *k);
        while next < end {
            let Some(w) = waiting.remove(&next) else {
                break;
            };
            match &head {
                None => {
                    cs.extend_inputs(&w.inputs[1..]);
                    cs.extend_aux(&w.aux);
                    head = Some(w);
                }
                Some(h) => {
                    if let Err(e) = check_prefix(h, &w, next - 1) {
                        stop.store(true, Ordering::Relaxed);
                        failed = Some((next, e));
                        break;
                    }
                    cs.extend_inputs(&w.inputs[h.inputs.len()..]);
                    cs.extend_aux(&w.aux[h.aux.len()..]);
                    sizes.push(w.aux.len() - h.aux.len());
                }
            }
            next += 1;
        }
    }
    match failed {
        Some((_, e)) => Err(e),
        None if next == count => Ok(sizes),
        None => Err(Error::Invalid(format!(
            "{next} of {count} witness pieces came back"
        ))),
    }
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
pub(crate) fn own_witness<C: Circuit<Scalar>>(circuit: C) -> Result<Witness> {
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

/// A synthesis error stays one (its kind is the caller's to read); others
/// name where they happened.
pub(crate) fn context(what: &str, e: Error) -> Error {
    match e {
        Error::Invalid(m) => Error::Invalid(format!("{what}: {m}")),
        e => e,
    }
}

fn check_prefix(head: &Witness, part: &Witness, i: usize) -> Result<()> {
    match prefix_differs(head, &part.inputs, &part.aux) {
        Some(why) => Err(Error::Invalid(format!("piece {i}: {why}"))),
        None => Ok(()),
    }
}

/// Why a piece whose values begin with `inputs` and `aux` does not begin
/// with its prefix `head`'s, or None when it does; both synthesis paths
/// (appended pieces here, pieces written in place) say it in these words.
pub(crate) fn prefix_differs(head: &Witness, inputs: &[Scalar], aux: &[Scalar]) -> Option<String> {
    let (hi, ha) = (head.inputs.len(), head.aux.len());
    if inputs.len() < hi || aux.len() < ha {
        return Some(format!(
            "allocates {} inputs and {} aux, fewer than its prefix's {hi} and {ha}",
            inputs.len(),
            aux.len()
        ));
    }
    if inputs[..hi] != head.inputs[..] {
        return Some("its leading inputs differ from the prefix's".into());
    }
    if aux[..ha] != head.aux[..] {
        return Some("its leading aux differ from the prefix's".into());
    }
    None
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
            e.to_string().contains("piece 3: its leading inputs differ"),
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
            e.to_string().contains("piece 0: its leading aux differ"),
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
    fn a_panicking_piece_is_an_error_naming_the_first_one() {
        let (prefix, mut parts) = split(5, &PIECES);
        parts[1].panic_in = Some(1);
        parts[3].panic_in = Some(3);
        let mut cs = Witness::default();
        cs.alloc_input(|| "one", || Ok(Scalar::ONE)).unwrap();
        let e = synthesize_pieces(&mut cs, prefix, parts).unwrap_err();
        let m = e.to_string();
        assert!(
            m.contains("piece 1: the circuit panicked: toy piece 1 panics"),
            "{m}"
        );
    }

    /// Many pieces on pools of one and three threads: they come back out
    /// of order and are appended in order.
    #[test]
    fn many_pieces_on_small_pools_keep_their_order() {
        let pieces: Vec<(u64, usize)> = (0..40u64)
            .map(|i| (i, ((i * 7919) % 5000) as usize))
            .collect();
        let seq = synthesize_witness(Toy::whole(11, &pieces), SizeHint::default()).unwrap();
        for threads in [1, 3] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            let (prefix, parts) = split(11, &pieces);
            let par = pool
                .install(|| synthesize_witness_pieces(prefix, parts, SizeHint::default()))
                .unwrap();
            assert_eq!(par, seq, "{threads} threads");
        }
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
