//! `cuda-prover-engine`: workers per device and scheduling, for any proof
//! family.
//!
//! This layer owns every decision about devices: which ones a run uses
//! (discovered and validated before work starts), which device proves which
//! item (the ownership policy), how much work waits (depth-one queues),
//! what happens on failure (fail-fast) and what comes back (outputs in item
//! order, verified). A proof family plugs in by implementing [`Work`] and
//! calling [`Engine::run_work`] (Groth16 in `cuda-prover-groth16`, GKR in
//! `cuda-prover-gkr`); its errors reach [`EngineError`] as a [`Cause`]
//! with their kind. It calls only `cuda-prover-device` and names no proof
//! family.

pub mod args;
mod collector;
mod config;
pub mod cpus;
pub mod devices;
mod engine;
mod error;
pub mod gate;
pub mod host_memory;
pub mod output;
mod permits;
pub mod residency;
mod scheduler;
mod state;
pub mod work;
mod worker;

pub use args::{BackendArgs, EngineArgs};
pub use config::{
    parse_memory_mib, EngineConfig, Policy, MAX_HOST_DEVICES, MAX_WORKERS_PER_DEVICE,
};
/// When streamed passes of one key are shared (`EngineConfig::stream_sharing`).
pub use cuda_prover_device::StreamSharing;
pub use devices::{list_devices, open_context, resolve, BackendChoice, DeviceSelection};
pub use engine::{Engine, TrimReport};
pub use error::{Cause, EngineError, ErrorKind};
pub use gate::{PriorityGate, Ticket};
pub use residency::{Residency, Resident};
pub use scheduler::{Progress, RunControl};
pub use work::{DeviceSlot, ItemDone, Work, WorkOutput};
