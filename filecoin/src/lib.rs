//! `cuda-prover-filecoin`: real Filecoin proofs through the cuda-prover
//! engine.
//!
//! This crate owns the Filecoin side: reading commit-phase-1 output (and
//! lotus-bench / Curio's wrapper of it), building filecoin-proofs' circuits
//! (PoRep commit partitions, Winning and Window PoSt), proving them as engine
//! partitions, laying the proofs out exactly as filecoin-proofs does, and
//! checking them with filecoin-proofs' own verifiers before returning them.
//! It also makes TEST parameters for small sectors, and test fixtures of
//! any sector size made without sealing (`test_c1`: C1 outputs,
//! `test_post`: PoSt inputs, over the shared `fixture` code). It sits above
//! `cuda-prover-pipeline`, beside the engine, and calls the engine
//! (`Engine::run`) and the pipeline's `ProvingKey`. Nothing else in the
//! workspace depends on it.

pub mod c1;
pub mod c2;
pub mod cli;
pub mod config;
mod error;
mod fixture;
mod input_file;
pub mod post;
pub mod post_input;
mod prover;
pub mod seal;
pub mod sealing;
pub mod sector;
pub mod test_c1;
pub mod test_params;
pub mod test_post;
mod times;
pub mod update;
pub mod vanilla;
mod vanilla_check;

pub use config::{porep_config, post_config, PostKind, RegisteredSeal, SealVersion};
pub use error::{FilecoinError, Result};
pub use post::{
    generate_post_with_vanilla, generate_window_post_partition_with_vanilla, PostProof,
};
pub use prover::{FilecoinProver, Proved};
pub use seal::{prepare_c2, seal_commit_phase2, PreparedC2, SealCommit};
pub use sector::SectorSize;
pub use times::JobTimes;
pub use update::{generate_empty_sector_update_proof_with_vanilla, UpdateProof};

/// For `with_sector_shape!` in other crates.
#[doc(hidden)]
pub use filecoin_proofs as __filecoin_proofs;
