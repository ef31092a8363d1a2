//! Groth16 jobs on an [`Engine`]: the memory check against a key, the
//! readying of the devices for a key, and a job of partitions run to its
//! verified proofs ([`Groth16Engine`], implemented for the engine).

use std::sync::Arc;

use bellpepper_core::Circuit;
use cuda_prover_engine::{Engine, EngineError, Progress, RunControl};
use cuda_prover_pipeline::{ProvingKey, Scalar, Shape};

use crate::cause::cause;
use crate::job::{Groth16Work, Job, JobOutput};
use crate::readying::ReadyWork;
use crate::report::job_report;

/// What an [`Engine`] does with Groth16 keys and jobs.
pub trait Groth16Engine {
    /// Checks that every device has room for one proof: the key and the
    /// working set, or else the working set with the key's bases streamed
    /// in chunks (`MemoryEstimate::streamed_bytes`), or else a phased pass
    /// (`MemoryEstimate::compact_bytes`: the key streamed, a shape kept on
    /// the host); the error names the device.
    fn check_memory(&self, key: &ProvingKey) -> Result<(), EngineError> {
        self.check_memory_with(key, None)
    }

    /// [`Groth16Engine::check_memory`] with a shape's device copy on top.
    fn check_memory_with(&self, key: &ProvingKey, shape: Option<&Shape>)
        -> Result<(), EngineError>;

    /// Readies every device for `key` (and `shape`, for jobs that prove
    /// from witnesses): the key goes up (resident, or planned for
    /// streaming when it does not fit), the working cache and the MSM
    /// buffers are allocated, as the first partition of a job would do.
    /// Checks the devices' memory first, as a job does. Returns when every
    /// device is ready; a job of the same key and shape then finds them so.
    fn ready_key(
        &self,
        key: &ProvingKey,
        shape: Option<Arc<Shape>>,
    ) -> Result<std::time::Duration, EngineError>;

    /// Runs a Groth16 job to completion or to its first failure.
    fn run<C, P>(
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

    /// [`Groth16Engine::run`] driven from outside (cancellation, priority).
    fn run_with<C, P>(
        &self,
        job: Job<C>,
        key: &ProvingKey,
        control: RunControl<'_>,
        progress: P,
    ) -> Result<JobOutput, EngineError>
    where
        C: Circuit<Scalar> + Send,
        P: FnMut(&Progress);
}

impl Groth16Engine for Engine {
    fn check_memory_with(
        &self,
        key: &ProvingKey,
        shape: Option<&Shape>,
    ) -> Result<(), EngineError> {
        let n = key
            .domain_size()
            .map_err(|e| EngineError::Prepare(cause(e)))?;
        let shape_bytes = shape.map(|s| s.info().device_bytes).unwrap_or(0);
        for d in self.devices() {
            // The device's own backend's estimate (the CUDA layout on a GPU).
            let est = key
                .device_memory_estimate(self.context(), d.ordinal, n)
                .map_err(|e| EngineError::Prepare(cause(e)))?;
            let need = est
                .working_bytes
                .saturating_add(est.key_bytes)
                .saturating_add(shape_bytes);
            let info = self
                .context()
                .device_info(d.ordinal)
                .map_err(|e| EngineError::Prepare(cause(e)))?;
            // What the device holds for the next passes (caches, shape,
            // a streamed key's chunk buffers) is the job's too: after one
            // job of a streamed 32 GiB C2 an 80 GB card had 493 MiB free
            // and held everything the next job needed.
            // Under a memory limit (the engine's configured one, or one set
            // on the context directly) the room is at most the limit.
            let stats = self
                .context()
                .device_stats(d.ordinal)
                .map_err(|e| EngineError::Prepare(cause(e)))?;
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
                    est.key_bytes >> 20,
                    est.working_bytes >> 20,
                    shape_bytes >> 20,
                    streamed.div_ceil(1 << 20),
                    compact.div_ceil(1 << 20)
                )));
            }
        }
        Ok(())
    }

    fn ready_key(
        &self,
        key: &ProvingKey,
        shape: Option<Arc<Shape>>,
    ) -> Result<std::time::Duration, EngineError> {
        self.check_memory_with(key, shape.as_deref())?;
        let t = std::time::Instant::now();
        let work = ReadyWork { key, shape };
        self.run_work(&work, RunControl::default(), |_| {})?;
        Ok(t.elapsed())
    }

    fn run_with<C, P>(
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
        let out = self.run_work(&work, control, progress)?;
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
