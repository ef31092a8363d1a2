//! The engine: the devices of one context, their mutexes and the
//! configuration every run uses. A run is [`Work`] scheduled by
//! `scheduler`; [`Engine::run`] is the Groth16 job of `groth16`.

use std::sync::Arc;
use std::time::Instant;

use bellpepper_core::Circuit;
use cuda_prover_pipeline::{Context, DeviceInfo, DeviceMutex, ProvingKey, Scalar, Shape};

use crate::config::EngineConfig;
use crate::devices::resolve;
use crate::error::EngineError;
use crate::gate::PriorityGate;
use crate::groth16::{Groth16Work, Job, JobOutput};
use crate::report::{job_report, TrimReport};
use crate::scheduler::{run_work, Progress, RunControl};
use crate::work::{Work, WorkOutput};

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

    /// Checks that every device has room for one proof: the key and the
    /// working set, or else the working set with the key's bases streamed
    /// in chunks (`MemoryEstimate::streamed_bytes`), or else a phased pass
    /// (`MemoryEstimate::compact_bytes`: the key streamed, a shape kept on
    /// the host); the error names the device.
    pub fn check_memory(&self, key: &ProvingKey) -> Result<(), EngineError> {
        self.check_memory_with(key, None)
    }

    /// [`Engine::check_memory`] with a shape's device copy on top.
    pub fn check_memory_with(
        &self,
        key: &ProvingKey,
        shape: Option<&Shape>,
    ) -> Result<(), EngineError> {
        let n = key
            .domain_size()
            .map_err(|e| EngineError::Prepare(e.into()))?;
        let shape_bytes = shape.map(|s| s.info().device_bytes).unwrap_or(0);
        for d in &self.devices {
            // The device's own backend's estimate (the CUDA layout on a GPU).
            let est = key
                .device_memory_estimate(&self.ctx, d.ordinal, n)
                .map_err(|e| EngineError::Prepare(e.into()))?;
            let need = est
                .working_bytes
                .saturating_add(est.srs_bytes)
                .saturating_add(shape_bytes);
            let info = self
                .ctx
                .device_info(d.ordinal)
                .map_err(|e| EngineError::Prepare(e.into()))?;
            // What the device holds for the next passes (caches, shape,
            // a streamed key's chunk buffers) is the job's too: after one
            // job of a streamed 32 GiB C2 an 80 GB card had 493 MiB free
            // and held everything the next job needed.
            // Under a memory limit (the engine's configured one, or one set
            // on the context directly) the room is at most the limit.
            let stats = self
                .ctx
                .device_stats(d.ordinal)
                .map_err(|e| EngineError::Prepare(e.into()))?;
            let held = stats.held_bytes;
            let mut room = info.free_bytes.saturating_add(held);
            if stats.limit_bytes > 0 {
                room = room.min(stats.limit_bytes);
            }
            let streamed = est.streamed_bytes.saturating_add(shape_bytes);
            let compact = est.compact_bytes.min(streamed);
            if room < need && room < compact {
                return Err(EngineError::DeviceMemory(format!(
                    "device {} ({}) has {} MiB free (with {} MiB it holds for the next passes) but the job needs {} MiB (key {} MiB + working set {} MiB + shape {} MiB), {} MiB with the key streamed in chunks, or {} MiB with the key streamed and a, b, c sent up from the host",
                    d.ordinal,
                    info.name,
                    room >> 20,
                    held >> 20,
                    need.div_ceil(1 << 20),
                    est.srs_bytes >> 20,
                    est.working_bytes >> 20,
                    shape_bytes >> 20,
                    streamed.div_ceil(1 << 20),
                    compact.div_ceil(1 << 20)
                )));
            }
        }
        Ok(())
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

    /// Runs a Groth16 job to completion or to its first failure.
    pub fn run<C, P>(
        &self,
        job: Job<C>,
        key: &ProvingKey,
        progress: P,
    ) -> Result<JobOutput, EngineError>
    where
        C: Circuit<Scalar> + Send,
        P: FnMut(&Progress),
    {
        self.run_with(job, key, RunControl::default(), progress)
    }

    /// [`Engine::run`] driven from outside (cancellation, priority).
    pub fn run_with<C, P>(
        &self,
        job: Job<C>,
        key: &ProvingKey,
        control: RunControl<'_>,
        progress: P,
    ) -> Result<JobOutput, EngineError>
    where
        C: Circuit<Scalar> + Send,
        P: FnMut(&Progress),
    {
        let work = Groth16Work::new(
            key,
            job.partitions,
            job.blinding,
            job.synthesis,
            job.shape.clone(),
        )?;
        self.check_memory_with(key, job.shape.as_deref())?;
        let out = run_work(self, &work, control, progress)?;
        let trims = if job.trim_after {
            self.trim_all()?
        } else {
            Vec::new()
        };
        let report = job_report(self, job.name, &out, trims)?;
        let (shape, recorded_shape) = work.into_shapes();
        Ok(JobOutput {
            proofs: out.items.into_iter().map(|d| d.output).collect(),
            report,
            shape,
            recorded_shape,
        })
    }
}
