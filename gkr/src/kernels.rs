//! The core's GKR part of the C ABI (`include/cuda_prover/gkr.h`), safe:
//! RAII types over its handles (sumcheck, tower) and the field batch
//! kernel, on the device crate's context and placement. Extension elements are [`Bb4`]: four canonical BabyBear
//! coefficients (`c0 + c1 X + c2 X^2 + c3 X^3`, `X^4 = 11`).

use std::marker::PhantomData;
use std::ptr;
use std::time::Duration;

use cuda_prover_device::{check, Context, Error, ErrorCode, GpuIndex, Placement, Result};
use cuda_prover_sys::ffi;

/// An extension element of BabyBear as the core takes it: canonical
/// coefficients, lowest degree first.
pub type Bb4 = [u32; 4];

/// The BabyBear prime, 2^31 - 2^27 + 1.
pub const BABYBEAR_P: u32 = 0x7800_0001;
/// The largest number of variables of a sumcheck or a tower.
pub const GKR_MAX_VARS: u32 = ffi::CP_GKR_MAX_VARS;
/// The largest degree of a sumcheck round polynomial.
pub const SUMCHECK_MAX_DEGREE: u32 = ffi::CP_SUMCHECK_MAX_DEGREE;

// `cp_bb4` is `struct { uint32_t c[4]; }`: the layout of `[u32; 4]`.
const _: () = assert!(std::mem::size_of::<ffi::cp_bb4>() == std::mem::size_of::<Bb4>());
const _: () = assert!(std::mem::align_of::<ffi::cp_bb4>() == std::mem::align_of::<Bb4>());

fn as_raw(v: &[Bb4]) -> *const ffi::cp_bb4 {
    v.as_ptr().cast()
}

fn as_raw_mut(v: &mut [Bb4]) -> *mut ffi::cp_bb4 {
    v.as_mut_ptr().cast()
}

fn invalid(message: String) -> Error {
    Error::new(ErrorCode::InvalidArgument, message)
}

/// An operation of [`bb4_batch`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bb4Op {
    Add,
    Sub,
    Mul,
    /// The inverse of `a` (0 maps to 0); `b` is ignored.
    Inv,
}

/// Which tree a [`Tower`] builds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TowerKind {
    /// The product of the values.
    Product,
    /// The sum of the fractions numerator / denominator (LogUp).
    Fraction,
}

/// How the coefficients of a [`Bb4`] slice given to a [`Tower`] are
/// written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Bb4Form {
    /// Canonical coefficients (`< p`).
    #[default]
    Canonical,
    /// Montgomery form with R = 2^32 (`canonical * 2^32 mod p`, `< p`): the
    /// words of Plonky3's BabyBear and of its degree-4 extension, passed
    /// without a conversion.
    Montgomery,
}

/// How [`Tower::with_options`] takes its input.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TowerOptions {
    pub form: Bb4Form,
    /// Elements per piece of the input's copy to the device (CUDA: per
    /// pinned staging buffer, at most 2^22; host: per conversion step);
    /// 0 = the backend's default. Never changes the tower.
    pub chunk_elements: usize,
}

/// Where the time of building a [`Tower`] went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TowerBuildTimes {
    /// Copying the input to the device, with its check (and conversion).
    pub upload: Duration,
    /// Building every layer above the input.
    pub layers: Duration,
}

/// One product term of a sumcheck: `coeff * prod tables[factors[k]]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SumcheckTerm {
    pub coeff: Bb4,
    pub factors: Vec<u32>,
}

/// `out[i] = a[i] op b[i]` computed by the field kernels of `ctx`'s device
/// `gpu` (for testing them against a reference field).
pub fn bb4_batch(
    ctx: &Context,
    gpu: impl Into<GpuIndex>,
    op: Bb4Op,
    a: &[Bb4],
    b: &[Bb4],
) -> Result<Vec<Bb4>> {
    if op != Bb4Op::Inv && a.len() != b.len() {
        return Err(invalid(format!(
            "bb4_batch: a has {} elements, b {}",
            a.len(),
            b.len()
        )));
    }
    let raw_op = match op {
        Bb4Op::Add => ffi::CP_BB4_ADD,
        Bb4Op::Sub => ffi::CP_BB4_SUB,
        Bb4Op::Mul => ffi::CP_BB4_MUL,
        Bb4Op::Inv => ffi::CP_BB4_INV,
    };
    let mut out = vec![[0u32; 4]; a.len()];
    // SAFETY: a, b and out hold a.len() elements of cp_bb4's layout (b
    // is not read for Inv); the core does not keep the pointers.
    check(unsafe {
        ffi::cp_bb4_batch(
            ctx.as_raw(),
            gpu.into().raw(),
            raw_op,
            as_raw(a),
            if op == Bb4Op::Inv {
                ptr::null()
            } else {
                as_raw(b)
            },
            as_raw_mut(&mut out),
            a.len(),
        )
    })?;
    Ok(out)
}

/// A sumcheck over multilinear tables on one device. Borrows its context
/// (and mutex) so it cannot outlive them.
pub struct Sumcheck<'a> {
    raw: *mut ffi::cp_sumcheck,
    num_tables: usize,
    _ctx: PhantomData<&'a Context>,
}

// SAFETY: the handle is used by one thread at a time (&mut self for every
// call that changes it); the core serializes device work with the device's
// mutex, so moving the handle to another thread is sound.
unsafe impl Send for Sumcheck<'_> {}

impl<'a> Sumcheck<'a> {
    /// Places `tables` (each of length 2^num_vars) on the device chosen by
    /// `place`; `tag` is what faults and delays match.
    pub fn new(
        ctx: &'a Context,
        place: &Placement<'a>,
        tag: i64,
        tables: &[&[Bb4]],
    ) -> Result<Self> {
        let len = tables.first().map(|t| t.len()).unwrap_or(0);
        if tables.is_empty() || !len.is_power_of_two() || tables.iter().any(|t| t.len() != len) {
            return Err(invalid(
                "sumcheck: tables must be non-empty, of one power-of-two length".into(),
            ));
        }
        let num_vars = len.trailing_zeros();
        let ptrs: Vec<*const ffi::cp_bb4> = tables.iter().map(|t| as_raw(t)).collect();
        let mut raw = ptr::null_mut();
        // SAFETY: every pointer in `ptrs` addresses 2^num_vars elements that
        // outlive the call (the core copies them); on success `raw` is ours.
        check(unsafe {
            ffi::cp_sumcheck_new(
                ctx.as_raw(),
                place.gpu.raw(),
                place.raw_mutex(),
                tag,
                num_vars,
                ptrs.as_ptr(),
                ptrs.len(),
                &mut raw,
            )
        })?;
        Ok(Self {
            raw,
            num_tables: tables.len(),
            _ctx: PhantomData,
        })
    }

    /// The round polynomial's values at 0..=degree.
    pub fn round(&mut self, terms: &[SumcheckTerm], degree: u32) -> Result<Vec<Bb4>> {
        let mut raw_terms = Vec::with_capacity(terms.len());
        for (i, t) in terms.iter().enumerate() {
            if t.factors.is_empty() || t.factors.len() > 4 {
                return Err(invalid(format!(
                    "sumcheck round: term {i} has {} factors, not 1..=4",
                    t.factors.len()
                )));
            }
            let mut factors = [0u32; 4];
            factors[..t.factors.len()].copy_from_slice(&t.factors);
            raw_terms.push(ffi::cp_sumcheck_term {
                coeff: ffi::cp_bb4 { c: t.coeff },
                num_factors: t.factors.len() as u32,
                factors,
            });
        }
        if degree > SUMCHECK_MAX_DEGREE {
            return Err(invalid(format!(
                "sumcheck round: degree {degree} is more than {SUMCHECK_MAX_DEGREE}"
            )));
        }
        let mut out = vec![[0u32; 4]; degree as usize + 1];
        // SAFETY: `raw` is live; raw_terms and out hold the lengths passed
        // (out: degree + 1 entries, as the core writes).
        check(unsafe {
            ffi::cp_sumcheck_round(
                self.raw,
                raw_terms.as_ptr(),
                raw_terms.len(),
                degree,
                as_raw_mut(&mut out),
            )
        })?;
        Ok(out)
    }

    /// Binds the first remaining variable at `r`.
    pub fn fold(&mut self, r: Bb4) -> Result<()> {
        let r = ffi::cp_bb4 { c: r };
        // SAFETY: `raw` is live; `r` outlives the call.
        check(unsafe { ffi::cp_sumcheck_fold(self.raw, &r) })
    }

    /// Entry `index` of every table (after the last fold, index 0 holds
    /// each table's value at the challenges).
    pub fn values(&mut self, index: u64) -> Result<Vec<Bb4>> {
        let mut out = vec![[0u32; 4]; self.num_tables];
        // SAFETY: `raw` is live; `out` holds one entry per table.
        check(unsafe { ffi::cp_sumcheck_values(self.raw, index, as_raw_mut(&mut out)) })?;
        Ok(out)
    }

    pub fn vars_left(&self) -> u32 {
        // SAFETY: `raw` is live.
        unsafe { ffi::cp_sumcheck_vars_left(self.raw) }
    }

    /// The device the sumcheck runs on.
    pub fn device(&self) -> u32 {
        // SAFETY: `raw` is live; a live handle always has a device (>= 0).
        unsafe { ffi::cp_sumcheck_device(self.raw) as u32 }
    }
}

impl Drop for Sumcheck<'_> {
    fn drop(&mut self) {
        // SAFETY: we own the handle; the context outlives it ('a).
        unsafe { ffi::cp_sumcheck_free(self.raw) }
    }
}

/// The layers of a product or fraction-sum tree on one device.
pub struct Tower<'a> {
    raw: *mut ffi::cp_tower,
    kind: TowerKind,
    log_size: u32,
    _ctx: PhantomData<&'a Context>,
}

// SAFETY: as for Sumcheck: one thread at a time through &mut self, device
// work serialized by the core.
unsafe impl Send for Tower<'_> {}

impl<'a> Tower<'a> {
    /// Builds the tree of `values` (numerators for a fraction tree, with
    /// `denominators`); the length must be 2^log_size, log_size >= 1.
    /// Canonical coefficients, the backend's default pieces.
    pub fn new(
        ctx: &'a Context,
        place: &Placement<'a>,
        tag: i64,
        kind: TowerKind,
        values: &[Bb4],
        denominators: Option<&[Bb4]>,
    ) -> Result<Self> {
        Self::with_options(
            ctx,
            place,
            tag,
            kind,
            values,
            denominators,
            &TowerOptions::default(),
        )
    }

    /// [`Tower::new`] with the input's form and piece size.
    #[allow(clippy::too_many_arguments)]
    pub fn with_options(
        ctx: &'a Context,
        place: &Placement<'a>,
        tag: i64,
        kind: TowerKind,
        values: &[Bb4],
        denominators: Option<&[Bb4]>,
        options: &TowerOptions,
    ) -> Result<Self> {
        let n = values.len();
        if n < 2 || !n.is_power_of_two() {
            return Err(invalid(format!(
                "tower: {n} values, not a power of two >= 2"
            )));
        }
        match (kind, denominators) {
            (TowerKind::Product, None) => {}
            (TowerKind::Fraction, Some(d)) if d.len() == n => {}
            _ => {
                return Err(invalid(
                    "tower: a fraction tree needs as many denominators as numerators, a product tree none"
                        .into(),
                ))
            }
        }
        let log_size = n.trailing_zeros();
        let raw_kind = match kind {
            TowerKind::Product => ffi::CP_TOWER_PRODUCT,
            TowerKind::Fraction => ffi::CP_TOWER_FRACTION,
        };
        let raw_options = ffi::cp_tower_options {
            form: match options.form {
                Bb4Form::Canonical => ffi::CP_BB4_CANONICAL,
                Bb4Form::Montgomery => ffi::CP_BB4_MONTGOMERY,
            },
            chunk_elements: options.chunk_elements as u64,
        };
        let mut raw = ptr::null_mut();
        // SAFETY: values and denominators hold 2^log_size elements and
        // outlive the call (the core copies them); raw_options lives on
        // this frame; on success `raw` is ours.
        check(unsafe {
            ffi::cp_tower_new_with(
                ctx.as_raw(),
                place.gpu.raw(),
                place.raw_mutex(),
                tag,
                raw_kind,
                log_size,
                as_raw(values),
                denominators.map(as_raw).unwrap_or(ptr::null()),
                &raw_options,
                &mut raw,
            )
        })?;
        Ok(Self {
            raw,
            kind,
            log_size,
            _ctx: PhantomData,
        })
    }

    /// Where the time of building the tower went.
    pub fn build_times(&self) -> Result<TowerBuildTimes> {
        let mut t = ffi::cp_tower_build_times {
            upload_ns: 0,
            layers_ns: 0,
        };
        // SAFETY: `raw` is live; `t` is a cp_tower_build_times on this frame.
        check(unsafe { ffi::cp_tower_times(self.raw, &mut t) })?;
        Ok(TowerBuildTimes {
            upload: Duration::from_nanos(t.upload_ns),
            layers: Duration::from_nanos(t.layers_ns),
        })
    }

    pub fn kind(&self) -> TowerKind {
        self.kind
    }

    pub fn log_size(&self) -> u32 {
        self.log_size
    }

    /// The root: `[product]` or `[numerator, denominator]`.
    pub fn root(&mut self) -> Result<Vec<Bb4>> {
        let mut out = vec![
            [0u32; 4];
            if self.kind == TowerKind::Fraction {
                2
            } else {
                1
            }
        ];
        // SAFETY: `raw` is live; `out` holds the entries the kind has.
        check(unsafe { ffi::cp_tower_root(self.raw, as_raw_mut(&mut out)) })?;
        Ok(out)
    }

    /// The sumcheck reducing a claim on `layer` at `point` (`layer`
    /// coordinates) to one on `layer + 1`. Its tables: eq, then L, R
    /// (product) or pL, pR, qL, qR (fraction). Each layer once.
    pub fn layer_sumcheck(&mut self, layer: u32, point: &[Bb4]) -> Result<Sumcheck<'a>> {
        if point.len() != layer as usize {
            return Err(invalid(format!(
                "tower layer {layer}: the point has {} coordinates",
                point.len()
            )));
        }
        let mut raw = ptr::null_mut();
        // SAFETY: `raw` (self) is live; `point` holds `layer` elements that
        // outlive the call; on success the sumcheck handle is ours.
        check(unsafe { ffi::cp_tower_layer_sumcheck(self.raw, layer, as_raw(point), &mut raw) })?;
        Ok(Sumcheck {
            raw,
            num_tables: if self.kind == TowerKind::Fraction {
                5
            } else {
                3
            },
            _ctx: PhantomData,
        })
    }

    /// The device the tower lives on.
    pub fn device(&self) -> u32 {
        // SAFETY: `raw` is live; a live handle always has a device (>= 0).
        unsafe { ffi::cp_tower_device(self.raw) as u32 }
    }
}

impl Drop for Tower<'_> {
    fn drop(&mut self) {
        // SAFETY: we own the handle; the context outlives it ('a).
        unsafe { ffi::cp_tower_free(self.raw) }
    }
}
