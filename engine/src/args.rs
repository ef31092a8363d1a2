//! The engine's command-line flags, defined once for every binary that
//! opens an engine (`cuda-prover`, `cuda-prover-filecoin`,
//! `cuda-prover-gkr`, `cuda-prover-service`): the backend, which devices,
//! how work is placed on them and how much device memory it may use.
//! Each binary flattens [`BackendArgs`] or [`EngineArgs`] into its own
//! and adds what only it has.

use std::sync::Arc;

use crate::config::{parse_memory_mib, EngineConfig, Policy};
use crate::config::{MAX_HOST_DEVICES, MAX_WORKERS_PER_DEVICE};
use crate::cpus::parse_cpu_sets;
use crate::devices::{open_context, BackendChoice, DeviceSelection};
use crate::engine::Engine;
use crate::error::EngineError;

/// Most devices `--gpu-count` may name.
pub const MAX_DEVICES: i64 = 4096;
/// Most synthesis threads (each is a thread and its partition's memory).
pub const MAX_SYNTHESIS_THREADS: i64 = 1024;
/// Most workers over all devices (one thread each).
pub const MAX_WORKERS: usize = 1024;

/// The backend and, for the host backend, how many devices it simulates.
#[derive(Debug, Clone, clap::Args)]
pub struct BackendArgs {
    /// auto: CUDA when built with it and a GPU is visible, else host.
    #[arg(long, value_enum, default_value = "auto")]
    pub backend: BackendChoice,
    /// Simulated devices of the host backend (default: CUDA_PROVER_HOST_DEVICES or 1).
    #[arg(long, default_value_t = 0,
          value_parser = clap::value_parser!(u32).range(0..=MAX_HOST_DEVICES))]
    pub host_devices: u32,
}

/// An engine's devices, placement and limits.
#[derive(Debug, Clone, clap::Args)]
pub struct EngineArgs {
    /// Device ordinals to use, e.g. 0,1 (default: every device).
    #[arg(long, conflicts_with = "gpu_count")]
    pub gpu_devices: Option<String>,
    /// Use the first N devices.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=MAX_DEVICES))]
    pub gpu_count: Option<u32>,
    /// round-robin or least-loaded.
    #[arg(long, default_value = "round-robin")]
    pub policy: Policy,
    /// One CPU set per device, e.g. 0-7,8-15.
    #[arg(long)]
    pub worker_cpus: Option<String>,
    /// Synthesis threads (default: one per worker).
    #[arg(long, default_value_t = 0,
          value_parser = clap::value_parser!(u32).range(0..=MAX_SYNTHESIS_THREADS))]
    pub synthesis_threads: u32,
    /// Workers per device: more overlap of hand-off and epilogue on one
    /// device, at the cost of more partitions held in memory.
    #[arg(long, default_value_t = 1,
          value_parser = clap::value_parser!(u32).range(1..=MAX_WORKERS_PER_DEVICE))]
    pub workers_per_device: u32,
    /// Memory the prover may use on each device: MiB (`22528`) or a size
    /// with its unit (`22GiB`, `14GiB`, `512MiB`), on both backends. A
    /// proving key that does not fit next to a proof's working set is
    /// streamed through the device in chunks from host memory (the same
    /// proofs); a limit too small even for that is refused before any work.
    #[arg(long, value_name = "SIZE", value_parser = parse_memory_mib)]
    pub device_memory_limit: Option<u64>,
    #[command(flatten)]
    pub backend: BackendArgs,
}

impl EngineArgs {
    /// The devices named by `--gpu-devices` or `--gpu-count`.
    pub fn selection(&self) -> Result<DeviceSelection, EngineError> {
        Ok(match (&self.gpu_devices, self.gpu_count) {
            (Some(list), _) => DeviceSelection::parse_list(list).map_err(EngineError::Setup)?,
            (None, Some(n)) => DeviceSelection::Count(n as usize),
            (None, None) => DeviceSelection::All,
        })
    }

    /// The engine these flags describe; `tune` sets what they leave at its
    /// default (prepare-ahead, stream sharing) before it is made. More
    /// workers than [`MAX_WORKERS`] over the devices are refused.
    pub fn engine(&self, tune: impl FnOnce(&mut EngineConfig)) -> Result<Engine, EngineError> {
        let devices = self.selection()?;
        let worker_cpus = self
            .worker_cpus
            .as_deref()
            .map(parse_cpu_sets)
            .transpose()
            .map_err(EngineError::Setup)?;
        let ctx = Arc::new(open_context(
            self.backend.backend,
            self.backend.host_devices,
            &devices,
        )?);
        let mut config = EngineConfig {
            devices,
            policy: self.policy,
            worker_cpus,
            synthesis_threads: self.synthesis_threads as usize,
            workers_per_device: self.workers_per_device as usize,
            device_memory_limit: self.device_memory_limit.map(|mib| mib << 20),
            ..Default::default()
        };
        tune(&mut config);
        let engine = Engine::new(ctx, config)?;
        let workers = engine.devices().len() * self.workers_per_device as usize;
        if workers > MAX_WORKERS {
            return Err(EngineError::Setup(format!(
                "{} devices x --workers-per-device {} = {workers} workers, more than the limit \
                 of {MAX_WORKERS}",
                engine.devices().len(),
                self.workers_per_device
            )));
        }
        Ok(engine)
    }
}
