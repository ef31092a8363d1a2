//! Shapes of circuits made of independent pieces, recorded one piece per
//! core: the shape's counterpart of `witness_pieces.rs`.
//!
//! The prefix circuit and each piece circuit (the prefix followed by one
//! piece) are recorded on the rayon pool without bellperson's framing.
//! Every piece's leading rows and counts must equal the prefix's. The
//! prefix's rows, then each piece's own rows with its own inputs and aux
//! moved past those of the pieces before it, then bellperson's input
//! constraints are exactly the shape one sequential recording of the whole
//! circuit gives: the same rows, columns and coefficient codes (codes are
//! given again in the order a sequential recording meets the
//! coefficients).

use crate::core_api;
use bellpepper_core::Circuit;
use blstrs::Scalar;
use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::shape::{
    record_unframed, CoeffTable, Matrix, ShapeData, ShapeEntry, ShapeRecorder, INPUT_BIT,
};
use crate::witness_pieces::context;

/// The shape of the circuit that synthesizes `prefix` and then every piece
/// in order, in bellperson's layout, recorded on the current rayon pool.
/// Each of `pieces` is a circuit that allocates the prefix first (the same
/// constraints as `prefix`) and then its piece. A piece whose leading part
/// differs from the prefix, or a panic in any circuit, is an error.
pub fn record_shape_pieces<P, C>(prefix: P, pieces: Vec<C>) -> Result<ShapeData>
where
    P: Circuit<Scalar> + Send,
    C: Circuit<Scalar> + Send,
{
    let (head, parts) = rayon::join(
        || own_recording(prefix),
        || {
            pieces
                .into_par_iter()
                .map(own_recording)
                .collect::<Vec<_>>()
        },
    );
    let (mut out, n0i, n0a) = head.map_err(|e| context("the prefix", e))?;
    let rows0 = out.a.row_ptr.len() - 1;
    let prefix = [out.a.clone(), out.b.clone(), out.c.clone()];
    let prefix_coeffs = out.table.coeffs.clone();
    let (mut inputs, mut aux) = (n0i as u64, n0a as u64);
    for (i, part) in parts.into_iter().enumerate() {
        let (rec, ni, na) = part.map_err(|e| context(&format!("piece {i}"), e))?;
        check_prefix(&rec, ni, na, (n0i, n0a, rows0), &prefix, &prefix_coeffs, i)?;
        let (io, ao) = (inputs - n0i as u64, aux - n0a as u64);
        let remap = |e: &ShapeEntry| -> ShapeEntry {
            let col = if e.col & INPUT_BIT != 0 {
                let k = (e.col & !INPUT_BIT) as u64;
                if k >= n0i as u64 {
                    k + io
                } else {
                    k
                }
            } else {
                let k = e.col as u64;
                if k >= n0a as u64 {
                    k + ao
                } else {
                    k
                }
            };
            let mark = e.col & INPUT_BIT;
            ShapeEntry {
                // Past 2^31 the column cannot be held: `finish` refuses the
                // counts, which are past it too.
                col: col.min(u64::from(!INPUT_BIT)) as u32 | mark,
                coeff: e.coeff,
            }
        };
        let rows = rec.a.row_ptr.len() - 1;
        let (mut ra, mut rb, mut rc) = (Vec::new(), Vec::new(), Vec::new());
        for r in rows0..rows {
            for (dst, m) in [(&mut ra, &rec.a), (&mut rb, &rec.b), (&mut rc, &rec.c)] {
                dst.clear();
                dst.extend(rows_of(m, r, r + 1).iter().map(remap));
            }
            out.push_rows([&ra, &rb, &rc], &rec.table);
        }
        inputs += (ni - n0i) as u64;
        aux += (na - n0a) as u64;
    }
    let too_big = || {
        Error::Invalid(format!(
            "{inputs} inputs and {aux} aux variables: a shape holds fewer than 2^31"
        ))
    };
    let (inputs, aux) = (
        usize::try_from(inputs).map_err(|_| too_big())?,
        usize::try_from(aux).map_err(|_| too_big())?,
    );
    if inputs + aux >= INPUT_BIT as usize {
        return Err(too_big());
    }
    // bellperson's `input_i * 0 = 0` per input, as `frame` adds them.
    let none = CoeffTable::new();
    for i in 0..inputs {
        let one = [ShapeEntry {
            col: i as u32 | INPUT_BIT,
            coeff: core_api::COEFF_ONE,
        }];
        out.push_rows([&one, &[], &[]], &none);
    }
    out.finish(inputs, aux)
}

/// Entries of rows `from..to` of `m`.
fn rows_of(m: &Matrix, from: usize, to: usize) -> &[ShapeEntry] {
    &m.entries[m.row_ptr[from] as usize..m.row_ptr[to] as usize]
}

/// One circuit recorded on its own, a panic an error with its message.
fn own_recording<C: Circuit<Scalar>>(circuit: C) -> Result<(ShapeRecorder, usize, usize)> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| record_unframed(circuit))) {
        Ok(r) => r,
        Err(p) => Err(Error::Invalid(format!(
            "the circuit panicked: {}",
            cuda_prover_device::panic_message(&*p)
        ))),
    }
}

/// Piece `i`'s leading rows and counts are the prefix's, coefficients
/// compared by value.
fn check_prefix(
    rec: &ShapeRecorder,
    ni: usize,
    na: usize,
    (n0i, n0a, rows0): (usize, usize, usize),
    prefix: &[Matrix; 3],
    prefix_coeffs: &[Scalar],
    i: usize,
) -> Result<()> {
    let rows = rec.a.row_ptr.len() - 1;
    if ni < n0i || na < n0a || rows < rows0 {
        return Err(Error::Invalid(format!(
            "piece {i} allocates {ni} inputs and {na} aux and enforces {rows} constraints, \
             fewer than its prefix's {n0i}, {n0a} and {rows0}"
        )));
    }
    // An entry as (column, code of +1/-1, or the coefficient's value).
    let key = |e: &ShapeEntry, coeffs: &[Scalar]| -> (u32, u32, Option<Scalar>) {
        if e.coeff >= 2 {
            (e.col, 2, Some(coeffs[e.coeff as usize - 2]))
        } else {
            (e.col, e.coeff, None)
        }
    };
    for (k, (m, want)) in [&rec.a, &rec.b, &rec.c].into_iter().zip(prefix).enumerate() {
        let got = rows_of(m, 0, rows0);
        let same = m.row_ptr[..=rows0] == want.row_ptr[..]
            && got.len() == want.entries.len()
            && got
                .iter()
                .zip(&want.entries)
                .all(|(g, w)| key(g, &rec.table.coeffs) == key(w, prefix_coeffs));
        if !same {
            return Err(Error::Invalid(format!(
                "piece {i}: its first {rows0} constraints differ from its prefix's (matrix {})",
                ["a", "b", "c"][k]
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use bellpepper_core::{ConstraintSystem, SynthesisError};
    use ff::Field;

    use super::*;

    /// A prefix (two inputs, a product) and pieces that each allocate an
    /// input and aux values and enforce rows over the prefix's variables
    /// and their own, with coefficients of their own and shared ones.
    #[derive(Clone)]
    struct Toy {
        pieces: Vec<u64>,
    }

    impl Toy {
        fn prefix<CS: ConstraintSystem<Scalar>>(
            cs: &mut CS,
        ) -> std::result::Result<[bellpepper_core::Variable; 3], SynthesisError> {
            let x = cs.alloc_input(|| "x", || Ok(Scalar::from(3)))?;
            let y = cs.alloc(|| "y", || Ok(Scalar::from(4)))?;
            let z = cs.alloc(|| "z", || Ok(Scalar::from(12)))?;
            cs.enforce(|| "xy", |lc| lc + x, |lc| lc + y, |lc| lc + z);
            Ok([x, y, z])
        }

        fn piece<CS: ConstraintSystem<Scalar>>(
            cs: &mut CS,
            [x, y, z]: [bellpepper_core::Variable; 3],
            k: u64,
        ) -> std::result::Result<(), SynthesisError> {
            let c = Scalar::from(k + 5);
            let i = cs.alloc_input(|| "i", || Ok(Scalar::from(k)))?;
            let mut prev = z;
            for j in 0..k + 2 {
                let v = cs.alloc(|| "v", || Ok(Scalar::from(j)))?;
                cs.enforce(
                    || "row",
                    |lc| lc + (c, x) + (Scalar::from(7), v) - prev,
                    |lc| lc + y + i,
                    |lc| lc + (-Scalar::ONE, v) + (c.double(), z),
                );
                prev = v;
            }
            Ok(())
        }
    }

    impl Circuit<Scalar> for Toy {
        fn synthesize<CS: ConstraintSystem<Scalar>>(
            self,
            cs: &mut CS,
        ) -> std::result::Result<(), SynthesisError> {
            let p = Self::prefix(cs)?;
            for k in self.pieces {
                Self::piece(cs, p, k)?;
            }
            Ok(())
        }
    }

    #[test]
    fn pieces_give_the_sequential_shape() {
        let whole = Toy {
            pieces: vec![3, 1, 4, 1, 5, 9, 2, 6],
        };
        let want = ShapeData::record(whole.clone()).unwrap();
        let got = record_shape_pieces(
            Toy { pieces: vec![] },
            whole
                .pieces
                .iter()
                .map(|&k| Toy { pieces: vec![k] })
                .collect(),
        )
        .unwrap();
        assert_eq!(got, want);
        assert!(
            want.coeffs.len() > 8,
            "pieces bring coefficients of their own"
        );
    }

    #[test]
    fn a_piece_that_changes_the_prefix_is_refused() {
        struct Other;
        impl Circuit<Scalar> for Other {
            fn synthesize<CS: ConstraintSystem<Scalar>>(
                self,
                cs: &mut CS,
            ) -> std::result::Result<(), SynthesisError> {
                let x = cs.alloc_input(|| "x", || Ok(Scalar::ONE))?;
                cs.enforce(|| "x", |lc| lc + x, |lc| lc + x, |lc| lc + x);
                Ok(())
            }
        }
        let err = record_shape_pieces(Toy { pieces: vec![] }, vec![Other]).unwrap_err();
        assert!(err.to_string().contains("piece 0"), "{err}");
    }
}
