//! `cuda-prover-groth16`: Groth16 jobs on the engine.
//!
//! This crate owns what the engine runs for the Groth16 family: a job of N
//! partitions of one circuit as engine [`Work`](cuda_prover_engine::Work)
//! ([`Groth16Work`]: synthesized on the CPU, proved on the device with the
//! job's key, verified with bellperson's verifier), the jobs an engine runs
//! and the devices it readies for a key ([`Groth16Engine`]), the key store
//! (load or generate, check, shape, residency by bytes, pinning), params
//! files and directories, shape files, job reports, and the `cuda-prover`
//! CLI. It calls `cuda-prover-pipeline` for proving and
//! `cuda-prover-engine` for devices and scheduling; its errors reach the
//! engine's as a [`Cause`](cuda_prover_engine::Cause) ([`cause`]).

mod blinding;
mod cause;
mod engine_jobs;
mod job;
pub mod key_store;
pub mod params;
pub mod params_dir;
mod readying;
pub mod report;
pub mod shape_cache;

pub use blinding::BlindingSource;
pub use cause::cause;
pub use engine_jobs::Groth16Engine;
pub use job::{Groth16Work, Job, JobOutput, PreparedPartition};
pub use key_store::{KeyStore, KeyUsage, Loaded, StoredKey};
pub use report::JobReport;
