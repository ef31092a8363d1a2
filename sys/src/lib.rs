//! `cuda-prover-sys`: the C ABI of the C++/CUDA core, as bindgen reads it.
//!
//! This layer owns the FFI and nothing else: the bindings generated from
//! the umbrella header (`ffi`, in the order core, groth16, gkr, testing)
//! and the build of the core (host backend always, CUDA with the `cuda`
//! feature). The safe types are above it, each with the part of the ABI it
//! wraps: `cuda-prover-device` the context, devices, placement and errors
//! (`core.h`, `testing.h`), `cuda-prover-bellperson` Groth16's
//! (`groth16.h`), `cuda-prover-gkr` GKR's (`gkr.h`).

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

// The core calls blst's C functions; the blst crate builds and links them.
use blst as _;
