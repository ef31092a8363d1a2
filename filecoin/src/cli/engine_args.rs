//! The engine flags shared by every subcommand, as `cuda-prover prove`
//! spells them.

use std::sync::Arc;

use cuda_prover_engine::cpus::parse_cpu_sets;
use cuda_prover_engine::{
    open_context, BackendChoice, DeviceSelection, Engine, EngineConfig, Policy,
};
use cuda_prover_pipeline::SynthesisMode;

use crate::error::{FilecoinError, Result};

#[derive(Debug, Clone, clap::Args)]
pub struct EngineArgs {
    /// Device ordinals to use, e.g. 0,1 (default: every device).
    #[arg(long, conflicts_with = "gpu_count")]
    pub gpu_devices: Option<String>,
    /// Use the first N devices.
    #[arg(long)]
    pub gpu_count: Option<usize>,
    /// round-robin or least-loaded.
    #[arg(long, default_value = "round-robin")]
    pub policy: Policy,
    /// auto: CUDA when built with it and a GPU is visible, else host.
    #[arg(long, value_enum, default_value = "auto")]
    pub backend: BackendChoice,
    /// Simulated devices of the host backend (default: CUDA_PROVER_HOST_DEVICES or 1).
    #[arg(long, default_value_t = 0)]
    pub host_devices: u32,
    /// One CPU set per device, e.g. 0-7,8-15.
    #[arg(long)]
    pub worker_cpus: Option<String>,
    /// Synthesis threads (default: one per worker).
    #[arg(long, default_value_t = 0)]
    pub synthesis_threads: usize,
    /// Workers per device.
    #[arg(long, default_value_t = 1)]
    pub workers_per_device: usize,
    /// Partitions prepared ahead beside each device's running and queued
    /// ones (each holds one more witness in host memory, about 4 GiB for a
    /// 32 GiB PoRep partition): with a partition's parallel witness on
    /// every core, one lets the next partition's challenges fill the cores
    /// that the last challenges of one leave idle.
    #[arg(long, default_value_t = 1)]
    pub prepare_ahead: usize,
    /// Memory the prover may use on each device: MiB (`22528`) or a size
    /// with its unit (`22GiB`, `14GiB`). A key that does not fit next to a
    /// proof's working set is streamed through the device in chunks from
    /// host memory (the same proofs); a limit too small even for that is
    /// refused before any work.
    #[arg(long, value_name = "SIZE", value_parser = cuda_prover_engine::parse_memory_mib)]
    pub device_memory_limit: Option<u64>,
    /// auto: the witness path once the circuit's shape is known (kept as
    /// `<params>.shape` next to the params, recorded by a first full
    /// synthesis); full: a, b, c evaluated on the CPU; witness: the shape
    /// path, required.
    #[arg(long, default_value = "auto")]
    pub synthesis: SynthesisMode,
    /// On the witness path, synthesize a PoRep partition's challenges on
    /// every core (true) or the partition in one thread (false).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub parallel_witness: bool,
    /// On that parallel witness, make a challenge's SHA-256 parts from
    /// their values (true; the same witness, several times faster) or run
    /// bellperson's SHA-256 gadget (false).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub native_witness: bool,
}

impl EngineArgs {
    /// The engine, wrapped in a prover with this synthesis mode.
    pub fn prover(&self) -> Result<crate::FilecoinProver> {
        Ok(crate::FilecoinProver::new(self.engine()?)
            .with_synthesis(self.synthesis)
            .with_parallel_witness(self.parallel_witness)
            .with_native_witness(self.native_witness))
    }

    pub fn engine(&self) -> Result<Engine> {
        let devices = match (&self.gpu_devices, self.gpu_count) {
            (Some(list), _) => DeviceSelection::parse_list(list).map_err(FilecoinError::Input)?,
            (None, Some(n)) => DeviceSelection::Count(n),
            (None, None) => DeviceSelection::All,
        };
        let worker_cpus = self
            .worker_cpus
            .as_deref()
            .map(parse_cpu_sets)
            .transpose()
            .map_err(FilecoinError::Input)?;
        let ctx = Arc::new(open_context(self.backend, self.host_devices, &devices)?);
        let engine = Engine::new(
            ctx,
            EngineConfig {
                devices,
                policy: self.policy,
                worker_cpus,
                synthesis_threads: self.synthesis_threads,
                prepare_ahead: self.prepare_ahead,
                workers_per_device: self.workers_per_device,
                device_memory_limit: self.device_memory_limit.map(|mib| mib << 20),
                ..Default::default()
            },
        )?;
        for d in engine.devices() {
            eprintln!(
                "device {}: {}{}",
                d.ordinal,
                d.name,
                if d.simulated { " (simulated)" } else { "" }
            );
        }
        Ok(engine)
    }
}
