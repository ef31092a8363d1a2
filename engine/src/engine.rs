//! The engine: the devices of one context, their mutexes and the
//! configuration every run uses. A run is [`Work`] scheduled by
//! `scheduler`.

use std::sync::Arc;
use std::time::Instant;

use cuda_prover_device::{Context, DeviceInfo, DeviceMutex};
use serde::Serialize;

use crate::config::{EngineConfig, MAX_WORKERS_PER_DEVICE};
use crate::devices::resolve;
use crate::error::EngineError;
use crate::gate::PriorityGate;
use crate::scheduler::{run_work, Progress, RunControl};
use crate::work::{Work, WorkOutput};

/// One device's working cache freed after a run (`Engine::trim_all`).
#[derive(Debug, Clone, Serialize)]
pub struct TrimReport {
    pub device: u32,
    pub freed_bytes: u64,
    pub seconds: f64,
}

/// Workers over a set of devices of one context.
pub struct Engine {
    ctx: Arc<Context>,
    devices: Vec<DeviceInfo>,
    mutexes: Vec<Arc<DeviceMutex>>,
    config: EngineConfig,
    gate: Arc<PriorityGate>,
}

impl Engine {
    /// Resolves and validates the devices; no work starts here.
    pub fn new(ctx: Arc<Context>, config: EngineConfig) -> Result<Self, EngineError> {
        let devices = resolve(&ctx, &config.devices)?;
        if let Some(sets) = &config.worker_cpus {
            if sets.len() != devices.len() {
                return Err(EngineError::Setup(format!(
                    "{} CPU sets for {} workers: give one set per device",
                    sets.len(),
                    devices.len()
                )));
            }
        }
        let workers = config.workers_per_device.max(1);
        if workers as i64 > MAX_WORKERS_PER_DEVICE {
            return Err(EngineError::Setup(format!(
                "{workers} workers per device: give 1 to {MAX_WORKERS_PER_DEVICE}"
            )));
        }
        if let Some(bytes) = config.device_memory_limit {
            if bytes == 0 {
                return Err(EngineError::Setup(
                    "a device memory limit of 0 bytes: give a positive limit".into(),
                ));
            }
            for d in &devices {
                ctx.set_memory_limit(d.ordinal, Some(bytes))
                    .map_err(|e| EngineError::Prepare(e.into()))?;
            }
        }
        // Each device learns how many workers prove there at once: with
        // two or more a CUDA device keeps its second pass lane whenever it
        // fits, so one worker's upload, evaluation and NTTs run while the
        // other's MSMs finish.
        for d in &devices {
            ctx.set_workers(d.ordinal, workers as u32)
                .map_err(|e| EngineError::Prepare(e.into()))?;
        }
        if let Some(mode) = config.stream_sharing {
            for d in &devices {
                ctx.set_stream_sharing(d.ordinal, mode)
                    .map_err(|e| EngineError::Prepare(e.into()))?;
            }
        }
        let mutexes = devices
            .iter()
            .map(|_| {
                DeviceMutex::new()
                    .map(Arc::new)
                    .map_err(|e| EngineError::Prepare(e.into()))
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self {
            ctx,
            devices,
            mutexes,
            config,
            gate: PriorityGate::new(),
        })
    }

    pub fn devices(&self) -> &[DeviceInfo] {
        &self.devices
    }

    pub fn context(&self) -> &Context {
        &self.ctx
    }

    pub fn config(&self) -> &EngineConfig {
        &self.config
    }

    /// The priority gate of this engine's runs (see [`RunControl`]).
    pub fn gate(&self) -> &Arc<PriorityGate> {
        &self.gate
    }

    /// An engine on some of this engine's devices (by ordinal), sharing
    /// their mutexes and the priority gate: runs of both stay serialized
    /// per device and ordered by priority.
    pub fn subset(&self, ordinals: &[u32]) -> Result<Engine, EngineError> {
        let mut devices = Vec::new();
        let mut mutexes = Vec::new();
        for &o in ordinals {
            let i = self
                .devices
                .iter()
                .position(|d| d.ordinal == o)
                .ok_or_else(|| {
                    EngineError::Setup(format!(
                        "device {o} is not one of the engine's devices {:?}",
                        self.devices.iter().map(|d| d.ordinal).collect::<Vec<_>>()
                    ))
                })?;
            if devices.iter().any(|d: &DeviceInfo| d.ordinal == o) {
                return Err(EngineError::Setup(format!("device {o} named twice")));
            }
            devices.push(self.devices[i].clone());
            mutexes.push(self.mutexes[i].clone());
        }
        if devices.is_empty() {
            return Err(EngineError::Setup("no devices named".into()));
        }
        let worker_cpus = self.config.worker_cpus.as_ref().map(|sets| {
            ordinals
                .iter()
                .filter_map(|&o| self.devices.iter().position(|d| d.ordinal == o))
                .map(|i| sets[i].clone())
                .collect()
        });
        Ok(Engine {
            ctx: self.ctx.clone(),
            devices,
            mutexes,
            config: EngineConfig {
                worker_cpus,
                ..self.config.clone()
            },
            gate: self.gate.clone(),
        })
    }

    /// The mutex of the device at `index` in [`Engine::devices`].
    pub(crate) fn mutex(&self, index: usize) -> &DeviceMutex {
        &self.mutexes[index]
    }

    /// Every ordinal of the context's backend that the core touched (bound
    /// a thread to, allocated on, made a context on), by the core's record:
    /// a job should touch its own devices only.
    pub fn devices_touched(&self) -> Result<Vec<u32>, EngineError> {
        let setup = EngineError::Prepare;
        let n = self.ctx.device_count().map_err(|e| setup(e.into()))?;
        let mut out = Vec::new();
        for d in 0..n as u32 {
            if self.ctx.touched(d).map_err(|e| setup(e.into()))? {
                out.push(d);
            }
        }
        Ok(out)
    }

    /// Frees every device's working cache, timed.
    pub fn trim_all(&self) -> Result<Vec<TrimReport>, EngineError> {
        self.devices
            .iter()
            .map(|d| {
                let t = Instant::now();
                let freed = self
                    .ctx
                    .trim(d.ordinal)
                    .map_err(|e| EngineError::Prepare(e.into()))?;
                Ok(TrimReport {
                    device: d.ordinal,
                    freed_bytes: freed,
                    seconds: t.elapsed().as_secs_f64(),
                })
            })
            .collect()
    }

    /// Runs any [`Work`] to completion or to its first failure.
    pub fn run_work<W, P>(
        &self,
        work: &W,
        control: RunControl<'_>,
        progress: P,
    ) -> Result<WorkOutput<W::Output>, EngineError>
    where
        W: Work,
        P: FnMut(&Progress),
    {
        run_work(self, work, control, progress)
    }
}
