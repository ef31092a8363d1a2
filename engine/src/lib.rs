//! `cuda-prover-engine`: workers per device, scheduling, and the CLI.
//!
//! This layer owns every decision about devices: which ones a job uses
//! (discovered and validated before work starts), which device proves which
//! partition (the ownership policy), how much work waits (depth-one queues),
//! what happens on failure (fail-fast) and what comes back (proofs in
//! partition order, verified, with a report). It calls only
//! `cuda-prover-pipeline`.

pub mod cpus;
pub mod devices;
mod engine;
mod error;
pub mod output;
pub mod params;
pub mod report;
pub mod shape_cache;

pub use devices::{list_devices, open_context, resolve, BackendChoice, DeviceSelection};
pub use engine::{BlindingSource, Engine, EngineConfig, Job, JobOutput, Policy, Progress};
pub use error::EngineError;
pub use report::JobReport;
