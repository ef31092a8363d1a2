//! `cuda-prover-gkr`: GKR tower proofs over BabyBear on the cuda-prover core.
//!
//! The core holds the tables and runs the sumcheck rounds on a device
//! (`kernels`: the GKR part of the C ABI, through `cuda-prover-sys`'s
//! bindings and `cuda-prover-device`'s context and placement); this crate drives them, with Fiat-Shamir on
//! the host between rounds (Plonky3's duplex challenger over Poseidon2),
//! checks proofs without a device ([`verify_tower`]), serializes them, and
//! runs shards (each a tower of its own size) as the engine's work
//! ([`ShardWork`], [`run_shards`]). Nothing below this crate depends on it.

mod error;
mod field;
mod kernels;
mod poly;
mod proof;
mod prover;
pub mod shards;
mod transcript;
mod verifier;

pub use error::GkrError;
pub use field::{from_bb4, montgomery_words, random_ext, random_nonzero_ext, to_bb4, Ext, Felt};
pub use poly::{eq_eval, interpolate, mle_eval, mle_eval_drawn, MLE_CHUNK_LOG};
pub use proof::{LayerProof, TowerProof};
pub use prover::{prove_tower, prove_tower_with, LayerTimes, ProveOptions, ProveStats, TowerInput};
pub use shards::{
    check_host_memory, run_shards, shard_host_bytes, ShardConfig, ShardOutput, ShardReport,
    ShardResult, ShardSpec, ShardWork, MAX_LOG_SIZE, MAX_SHARDS,
};
pub use transcript::Transcript;
pub use verifier::{verify_tower, verify_tower_by};

/// The device layer's types a caller needs, re-exported so it need not
/// name that crate.
pub use cuda_prover_device::{Backend, Context, ContextOptions, DeviceMutex, ErrorCode, Placement};
pub use kernels::{
    bb4_batch, Bb4, Bb4Form, Bb4Op, Sumcheck, SumcheckTerm, Tower, TowerBuildTimes, TowerKind,
    TowerOptions, BABYBEAR_P, GKR_MAX_VARS, SUMCHECK_MAX_DEGREE,
};
