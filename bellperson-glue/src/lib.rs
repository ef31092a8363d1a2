//! `cuda-prover-bellperson`: bellperson in, Groth16 proofs out.
//!
//! This layer owns the bellperson side of the stack: synthesizing any
//! `bellpepper_core::Circuit<blstrs::Scalar>` into the evaluations, assignments
//! and density bitmaps the core needs (with bellperson 0.27's conventions),
//! turning `bellperson::groth16::Parameters` and params files into proving
//! keys, and bellperson's proof type out. The fast path records a circuit's
//! constraints once as a `Shape` and then synthesizes only witnesses
//! (`synthesize_witness`); the core evaluates a, b, c from them. The
//! core's Groth16 entry points are wrapped here (`core_api`, over
//! `cuda-prover-sys`'s bindings); the context, placement and errors are
//! `cuda-prover-device`'s, re-exported by name below.

pub mod circuits;
mod convert;
pub mod core_api;
mod cs;
mod error;
mod flat_cs;
mod huge_pages;
mod key;
mod prove;
pub mod setup;
mod shape;
pub mod shape_file;
mod shape_pieces;
mod witness;
mod witness_in_place;
mod witness_pieces;

pub use cs::{synthesize, synthesize_recording, synthesize_sized, Density, SizeHint, Synthesized};
pub use error::{Error, Result};
pub use key::{vk_fingerprint, KeyCheck, LoadReport, ProvingKey, SubgroupCheck};
pub use prove::{
    create_proof_batch, create_random_proof_batch, prove_from_assignments, prove_from_witnesses,
    prove_start, prove_start_witness, Blinding, PendingProofs, ProofOutput,
};
pub use shape::{Matrix, Shape, ShapeData, ShapeEntry, ShapeInfo};
pub use shape_pieces::record_shape_pieces;
pub use witness::{synthesize_witness, Witness};
pub use witness_in_place::synthesize_pieces_in_place;
pub use witness_pieces::{synthesize_pieces, synthesize_witness_pieces};

/// The device part's timings of a proof.
pub use core_api::Timings;
/// The devices' types, for the layers above.
pub use cuda_prover_device::{
    built_with_cuda, cuda_device_count, cuda_device_info, cuda_usable_devices, panic_message,
    Backend, Context, ContextOptions, DeviceInfo, DeviceMutex, DeviceStats, ErrorCode, GpuIndex,
    Placement, StreamSharing, GPU_AUTO, GPU_BOUND,
};

pub use bellperson::groth16::{Parameters, Proof, VerifyingKey};
pub use blstrs::{Bls12, Scalar};
