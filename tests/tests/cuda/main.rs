//! The CUDA backend on a real GPU: the host backend's test list, plus
//! identical proofs across CUDA, host and bellperson for equal r, s.
//!
//! Needs a build with `--features cuda-prover-tests/cuda` and a GPU. Without
//! a GPU each test says it skipped, unless `CP_REQUIRE_GPU=1` (set on GPU
//! machines) makes that a failure. `CP_CUDA_MIN_LOG` and `CP_CUDA_MAX_LOG`
//! (default 10 and 16) bound the sizes of the equality test; params come
//! from `CP_PARAMS_DIR`.
//!
//! One test binary (`--test cuda`), each file a module: `equality.rs`
//! (CUDA = host = bellperson byte for byte, the MSMs' scalar patterns),
//! `routing.rs` (routing and threads on one GPU, a card too small as a
//! clean error), `streaming.rs` (streamed, phased and shared passes, a key
//! four times the limit), `engine.rs` (trim, the engine on the GPU, the
//! automatic backend), `witness.rs` (the witness path), `isolation.rs`
//! (GPU isolation in a child process), `keys.rs` (fixed-base edges, keygen,
//! subgroup checks); `common.rs` holds the size bounds several of them use.
//! A filter matches a test's path (`keys::cuda_subgroup_checks_...`), so a
//! module's name selects its tests.
#![cfg(feature = "cuda")]

mod common;
mod engine;
mod equality;
mod isolation;
mod keys;
mod routing;
mod streaming;
mod witness;
