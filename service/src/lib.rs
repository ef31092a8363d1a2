//! `cuda-prover-service`: the engine as a daemon that storage and
//! proof-market engines drive over gRPC (`proto/cuda_prover/v1/prover.proto`).
//!
//! The daemon owns one engine and its devices; jobs are queued by priority,
//! run concurrently on the engine (its priority gate orders their items),
//! and prove with keys kept resident by an LRU bounded by device memory.
//! The crate sits above the engine: nothing below depends on it.

// tonic's `Status` is the error type of every RPC handler and client call:
// it stays unboxed, as tonic hands it over.
#![allow(clippy::result_large_err)]

pub mod client;
pub mod config;
pub mod cuzk;
pub mod errors;
#[cfg(feature = "filecoin")]
pub mod filecoin;
pub mod health;
pub mod hosts;
pub mod job_id;
pub mod jobs;
pub mod journal;
pub mod keys;
pub mod listener;
pub mod metrics;
pub mod metrics_http;
pub mod requests;
pub mod server;
pub mod wire_size;

/// The generated gRPC types and stubs (version 1 of the protocol).
pub mod proto {
    tonic::include_proto!("cuda_prover.v1");
}

/// The generated gRPC types and stubs of cuzk's API (`cuzk.v1`), which
/// Curio's cuzk client speaks.
pub mod cuzk_proto {
    tonic::include_proto!("cuzk.v1");
}

pub use client::{Client, ClientError, JobOutcome};
pub use config::ServiceConfig;
pub use hosts::Hosts;
pub use server::{serve, Service};
