//! The cross-layer tests on the host backend, one test binary: each file
//! here is a module (one subject each, named as before), compiled and
//! linked once instead of once per file. `cargo test --test host NAME`
//! runs the tests whose path contains NAME (a module's name selects it).
//! The GPU tests (`cuda/`), the key checks that the GPU machine runs
//! (`key_checks.rs`) and the manifest check (`test_targets.rs`) stay
//! binaries of their own.

mod bad_input;
mod engine;
mod isolation;
mod params_mutation;
mod pipeline;
mod proofs;
mod routing;
mod seed_scenario;
mod streaming;
mod witness;
