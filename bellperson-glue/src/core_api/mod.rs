//! The core's Groth16 part of the C ABI (`include/cuda_prover/groth16.h`),
//! safe: proving keys (`cp_key*`, the key builder), circuits as a, b, c
//! (`cp_prove*`), shapes and witnesses (`cp_shape*`, `cp_groth16_*`), the
//! pending proofs and the raw proofs they finish into. Every handle is an
//! RAII type and every call returns the device crate's `Result`. The rest
//! of the glue turns bellperson's circuits and params into these; the
//! context, placement and errors are `cuda-prover-device`'s.

mod key;
mod key_builder;
mod proof;
mod shape;

pub use key::{
    Fr, G1Affine, G2Affine, Key, KeyCheck, KeyParts, KeyShape, KeyVk, LoadReport, MemoryEstimate,
    SubgroupCheck,
};
pub use key_builder::{KeyBuilder, KeySection};
pub use proof::{Circuit, CircuitParts, Pending, RawProof, Timings};
pub use shape::{
    MatrixParts, Shape, ShapeEntry, ShapeInfo, ShapeParts, Witness, COEFF_MINUS_ONE, COEFF_ONE,
};
