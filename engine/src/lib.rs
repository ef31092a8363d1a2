//! `cuda-prover-engine`: workers per device, scheduling, and the CLI.
//!
//! This layer owns every decision about devices: which ones a job uses
//! (discovered and validated before work starts), which device proves which
//! partition (the ownership policy), how much work waits (depth-one queues),
//! what happens on failure (fail-fast) and what comes back (proofs in
//! partition order, verified, with a report). It calls only
//! `cuda-prover-pipeline`.

pub mod args;
mod collector;
mod config;
pub mod cpus;
pub mod devices;
mod engine;
mod error;
pub mod gate;
mod groth16;
pub mod host_memory;
pub mod key_store;
pub mod output;
pub mod params;
pub mod params_dir;
mod permits;
mod readying;
pub mod report;
pub mod residency;
mod scheduler;
pub mod shape_cache;
mod state;
pub mod work;
mod worker;

pub use args::{BackendArgs, EngineArgs};
pub use config::{
    parse_memory_mib, BlindingSource, EngineConfig, Policy, MAX_HOST_DEVICES,
    MAX_WORKERS_PER_DEVICE,
};
/// When partitions share streamed passes (`EngineConfig::stream_sharing`).
pub use cuda_prover_pipeline::StreamSharing;
pub use devices::{list_devices, open_context, resolve, BackendChoice, DeviceSelection};
pub use engine::Engine;
pub use error::{EngineError, ErrorKind};
pub use gate::{PriorityGate, Ticket};
pub use groth16::{Groth16Work, Job, JobOutput, PreparedPartition};
pub use key_store::{KeyStore, KeyUsage, Loaded, StoredKey};
pub use report::JobReport;
pub use residency::{Residency, Resident};
pub use scheduler::{Progress, RunControl};
pub use work::{DeviceSlot, ItemDone, Work, WorkOutput};
