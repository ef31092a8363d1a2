//! The GKR crate's tests on the host backend, one test binary (each file a
//! module, compiled and linked once). The GPU tests (`cuda.rs`) stay a
//! binary of their own.

mod field;
mod parallel;
mod shards;
mod sumcheck;
mod tower;
mod upload;
