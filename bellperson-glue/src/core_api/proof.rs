//! Circuits given as a, b, c and their assignments (`cp_circuit`), proved
//! with a key (`cp_prove_start`): the pending proofs and the raw proofs
//! they finish into.

use std::marker::PhantomData;
use std::ptr;

use cuda_prover_device::{check, Context, Error, ErrorCode, Placement, Result};
use cuda_prover_sys::ffi;

use super::key::{Fr, G1Affine, G2Affine, Key};

pub use ffi::cp_timings as Timings;

/// One synthesized circuit, borrowed for the duration of a prove call.
#[derive(Clone, Copy)]
pub struct Circuit<'a> {
    raw: ffi::cp_circuit,
    _borrow: PhantomData<&'a [Fr]>,
}

/// The slices that make up a [`Circuit`].
pub struct CircuitParts<'a> {
    pub a: &'a [Fr],
    pub b: &'a [Fr],
    pub c: &'a [Fr],
    pub inputs: &'a [Fr],
    pub aux: &'a [Fr],
    /// Bit i of word i/64 per variable.
    pub a_aux_density: &'a [u64],
    pub b_input_density: &'a [u64],
    pub b_aux_density: &'a [u64],
    pub r: Fr,
    pub s: Fr,
    pub tag: Option<i64>,
}

impl<'a> Circuit<'a> {
    /// Checks the lengths here so that the core never reads past a slice.
    pub fn new(p: CircuitParts<'a>) -> Result<Self> {
        let words = |bits: usize| bits.div_ceil(64);
        let bad = |what: &str| Err(Error::new(ErrorCode::InvalidArgument, what.to_string()));
        if p.a.len() != p.b.len() || p.a.len() != p.c.len() {
            return bad("a, b and c must have one evaluation per constraint");
        }
        if p.a_aux_density.len() < words(p.aux.len()) || p.b_aux_density.len() < words(p.aux.len())
        {
            return bad("aux density bitmaps are shorter than the aux assignment");
        }
        if p.b_input_density.len() < words(p.inputs.len()) {
            return bad("input density bitmap is shorter than the input assignment");
        }
        Ok(Self {
            raw: ffi::cp_circuit {
                a: p.a.as_ptr(),
                b: p.b.as_ptr(),
                c: p.c.as_ptr(),
                num_constraints: p.a.len(),
                inputs: p.inputs.as_ptr(),
                num_inputs: p.inputs.len(),
                aux: p.aux.as_ptr(),
                num_aux: p.aux.len(),
                a_aux_density: p.a_aux_density.as_ptr(),
                b_input_density: p.b_input_density.as_ptr(),
                b_aux_density: p.b_aux_density.as_ptr(),
                r: p.r,
                s: p.s,
                tag: p.tag.unwrap_or(-1),
            },
            _borrow: PhantomData,
        })
    }

    pub fn tag(&self) -> Option<i64> {
        (self.raw.tag >= 0).then_some(self.raw.tag)
    }
}

/// A proof as the core returns it, with the device that made it.
#[derive(Debug, Clone, Copy)]
pub struct RawProof {
    pub a: G1Affine,
    pub b: G2Affine,
    pub c: G1Affine,
    pub device: u32,
    pub timings: Timings,
}

/// Proofs whose device part is done; [`Pending::finish`] runs the host
/// epilogue.
pub struct Pending {
    pub(crate) raw: *mut ffi::cp_pending,
}

unsafe impl Send for Pending {}

impl Pending {
    pub fn len(&self) -> usize {
        // SAFETY: a live pending handle, owned by `self`.
        unsafe { ffi::cp_pending_len(self.raw) }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The device that ran each circuit.
    pub fn devices(&self) -> Vec<u32> {
        (0..self.len())
            // SAFETY: a live pending handle, owned by `self`; i < its length.
            .map(|i| unsafe { ffi::cp_pending_device(self.raw, i) } as u32)
            .collect()
    }

    pub fn finish(self) -> Result<Vec<RawProof>> {
        let n = self.len();
        let mut out = vec![ffi::cp_proof::default(); n];
        let raw = self.raw;
        std::mem::forget(self);
        // SAFETY: cp_prove_finish consumes `raw` on success and on failure.
        check(unsafe { ffi::cp_prove_finish(raw, out.as_mut_ptr()) })?;
        Ok(out
            .into_iter()
            .map(|p| RawProof {
                a: p.a,
                b: p.b,
                c: p.c,
                device: p.device as u32,
                timings: p.timings,
            })
            .collect())
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        // SAFETY: we own the handle; `finish` forgets `self` after consuming it.
        unsafe { ffi::cp_pending_free(self.raw) }
    }
}

impl Key {
    /// Runs the device part of every circuit with this key on `ctx`, where
    /// `place` says, and returns once it is done.
    pub fn prove_start(
        &self,
        ctx: &Context,
        circuits: &[Circuit<'_>],
        place: &Placement<'_>,
    ) -> Result<Pending> {
        if circuits.is_empty() {
            return Err(Error::new(
                ErrorCode::InvalidArgument,
                "no circuits to prove",
            ));
        }
        let raw: Vec<ffi::cp_circuit> = circuits.iter().map(|c| c.raw).collect();
        let mut out = ptr::null_mut();
        // SAFETY: `raw` borrows slices that outlive the call (lifetime 'a of
        // each Circuit); the core does not keep them after returning.
        check(unsafe {
            ffi::cp_prove_start(
                ctx.as_raw(),
                self.raw,
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
    pub fn prove(
        &self,
        ctx: &Context,
        circuits: &[Circuit<'_>],
        place: &Placement<'_>,
    ) -> Result<Vec<RawProof>> {
        self.prove_start(ctx, circuits, place)?.finish()
    }
}
