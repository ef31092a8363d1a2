//! Circuits as a shape (A, B, C in CSR form, fixed per circuit) and a
//! witness (changes per proof): the core evaluates and checks a, b, c itself.

use std::marker::PhantomData;
use std::ptr;

use cuda_prover_device::{check, Context, Error, ErrorCode, Placement, Result};
use cuda_prover_sys::ffi;

use super::key::{Fr, Key};
use super::proof::{Pending, RawProof};

pub use ffi::{cp_shape_entry as ShapeEntry, cp_shape_info as ShapeInfo};

/// Coefficient code of an entry: +1 (no multiplication).
pub const COEFF_ONE: u32 = ffi::CP_COEFF_ONE;
/// Coefficient code of an entry: -1 (no multiplication).
pub const COEFF_MINUS_ONE: u32 = ffi::CP_COEFF_MINUS_ONE;

/// One matrix in CSR form: `row_ptr` has one offset per row plus one.
#[derive(Clone, Copy)]
pub struct MatrixParts<'a> {
    pub row_ptr: &'a [u64],
    pub entries: &'a [ShapeEntry],
}

/// The borrowed parts of a [`Shape`].
pub struct ShapeParts<'a> {
    pub num_inputs: u64,
    pub num_aux: u64,
    pub a: MatrixParts<'a>,
    pub b: MatrixParts<'a>,
    pub c: MatrixParts<'a>,
    /// Coefficients other than +1 and -1; entry code k >= 2 is `coeffs[k - 2]`.
    pub coeffs: &'a [Fr],
}

/// A circuit's constraints held by the core (validated, densities derived).
pub struct Shape {
    raw: *mut ffi::cp_shape,
}

// SAFETY: a cp_shape is immutable after cp_shape_new; the core reads it from
// any thread.
unsafe impl Send for Shape {}
unsafe impl Sync for Shape {}

impl Shape {
    /// Copies and validates the matrices. The slice lengths are checked
    /// here so that the core never reads past them.
    pub fn new(p: &ShapeParts<'_>) -> Result<Self> {
        let rows = p.a.row_ptr.len().saturating_sub(1);
        let bad = |what: String| Err(Error::new(ErrorCode::InvalidArgument, what));
        for (name, m) in [("A", &p.a), ("B", &p.b), ("C", &p.c)] {
            if m.row_ptr.is_empty() || m.row_ptr.len() != rows + 1 {
                return bad(format!(
                    "matrix {name}: {} row offsets, expected {} (rows + 1)",
                    m.row_ptr.len(),
                    rows + 1
                ));
            }
            if m.row_ptr[rows] != m.entries.len() as u64 {
                return bad(format!(
                    "matrix {name}: the offsets end at {}, but there are {} entries",
                    m.row_ptr[rows],
                    m.entries.len()
                ));
            }
        }
        let mat = |m: &MatrixParts<'_>| ffi::cp_shape_matrix {
            row_ptr: m.row_ptr.as_ptr(),
            entries: m.entries.as_ptr(),
        };
        let parts = ffi::cp_shape_parts {
            num_constraints: rows as u64,
            num_inputs: p.num_inputs,
            num_aux: p.num_aux,
            a: mat(&p.a),
            b: mat(&p.b),
            c: mat(&p.c),
            coeffs: p.coeffs.as_ptr(),
            num_coeffs: p.coeffs.len(),
        };
        let mut raw = ptr::null_mut();
        // SAFETY: every pointer in `parts` borrows a slice whose length was
        // checked against the counts above and lives for the call; the core
        // copies what it keeps. On success `raw` is a new handle we own.
        check(unsafe { ffi::cp_shape_new(&parts, &mut raw) })?;
        Ok(Self { raw })
    }

    pub fn info(&self) -> Result<ShapeInfo> {
        let mut out = ShapeInfo::default();
        // SAFETY: `self.raw` is a live handle and `out` a valid out pointer.
        check(unsafe { ffi::cp_shape_info_get(self.raw, &mut out) })?;
        Ok(out)
    }
}

impl Drop for Shape {
    fn drop(&mut self) {
        // SAFETY: we own the handle and free it once.
        unsafe { ffi::cp_shape_free(self.raw) }
    }
}

/// One proof's witness, borrowed for the duration of a prove call.
#[derive(Clone, Copy)]
pub struct Witness<'a> {
    raw: ffi::cp_witness,
    _borrow: PhantomData<&'a [Fr]>,
}

impl<'a> Witness<'a> {
    pub fn new(inputs: &'a [Fr], aux: &'a [Fr], r: Fr, s: Fr, tag: Option<i64>) -> Self {
        Self {
            raw: ffi::cp_witness {
                inputs: inputs.as_ptr(),
                num_inputs: inputs.len(),
                aux: aux.as_ptr(),
                num_aux: aux.len(),
                r,
                s,
                tag: tag.unwrap_or(-1),
            },
            _borrow: PhantomData,
        }
    }
}

impl Key {
    /// Whether `shape` fits this key (query lengths and densities); the
    /// error names the first disagreement.
    pub fn check_shape(&self, shape: &Shape) -> Result<()> {
        // SAFETY: both handles are live for the call.
        check(unsafe { ffi::cp_groth16_shape_check(self.raw, shape.raw) })
    }
}

impl Key {
    /// Like [`Key::prove_start`] for circuits given as a shape and
    /// their witnesses: a, b, c are evaluated and checked by the core.
    pub fn prove_start_witness(
        &self,
        ctx: &Context,
        shape: &Shape,
        witnesses: &[Witness<'_>],
        place: &Placement<'_>,
    ) -> Result<Pending> {
        if witnesses.is_empty() {
            return Err(Error::new(
                ErrorCode::InvalidArgument,
                "no witnesses to prove",
            ));
        }
        let raw: Vec<ffi::cp_witness> = witnesses.iter().map(|w| w.raw).collect();
        let mut out = ptr::null_mut();
        // SAFETY: `raw` borrows slices that outlive the call (lifetime of
        // each Witness), the handles are live, and the core keeps nothing
        // of them after returning. On success `out` is a pending proof we own.
        check(unsafe {
            ffi::cp_groth16_prove_start_witness(
                ctx.as_raw(),
                self.raw,
                shape.raw,
                raw.as_ptr(),
                raw.len(),
                place.gpu.raw(),
                place.raw_mutex(),
                &mut out,
            )
        })?;
        Ok(Pending { raw: out })
    }

    /// Device part and host epilogue in one call.
    pub fn prove_witness(
        &self,
        ctx: &Context,
        shape: &Shape,
        witnesses: &[Witness<'_>],
        place: &Placement<'_>,
    ) -> Result<Vec<RawProof>> {
        self.prove_start_witness(ctx, shape, witnesses, place)?
            .finish()
    }

    /// [`Key::prepare`] for proofs from `shape`: also places the shape's
    /// device copy.
    pub fn prepare_shape(&self, ctx: &Context, ordinal: u32, shape: &Shape) -> Result<()> {
        // SAFETY: the handles are live for the call.
        check(unsafe {
            ffi::cp_device_prepare_shape(ctx.as_raw(), ordinal as i32, self.raw, shape.raw)
        })
    }
}
