//! `cuda-prover-sys`: the Rust face of the C++/CUDA core.
//!
//! This layer owns the FFI: the generated bindings (`ffi`), the conversion of
//! the core's status codes into a typed [`Error`], and RAII types for what the
//! core allocates (context, proving key, shape, device mutex, pending proof). It calls
//! only the core's C ABI and knows nothing of bellperson: points and scalars are
//! the core's `cp_*` types, which have blst's memory layout.

#![allow(clippy::missing_safety_doc)]

#[allow(
    non_camel_case_types,
    non_upper_case_globals,
    non_snake_case,
    dead_code
)]
#[allow(clippy::all)]
pub mod ffi {
    include!("bindings.rs");
}

mod error;
mod gkr;
mod key_builder;
mod placement;
mod safe;
mod shape;

pub use error::{Error, ErrorCode, Result};
pub use gkr::{
    Bb4, Bb4Form, Bb4Op, Sumcheck, SumcheckTerm, Tower, TowerBuildTimes, TowerKind, TowerOptions,
    BABYBEAR_P, GKR_MAX_VARS, SUMCHECK_MAX_DEGREE,
};
pub use key_builder::{KeyBuilder, KeySection};
pub use placement::{GpuIndex, Placement, GPU_AUTO, GPU_BOUND};
pub use safe::*;
pub use shape::{
    MatrixParts, Shape, ShapeEntry, ShapeInfo, ShapeParts, Witness, COEFF_MINUS_ONE, COEFF_ONE,
};

// The core calls blst's C functions; the blst crate builds and links them.
use blst as _;
