//! `cuda-prover-pipeline`: proving as start and finish, and the overlap of
//! CPU synthesis with device work.
//!
//! This layer owns the order of work for one device: `gpu_prove_start` runs
//! the device part and hands back a handle, `ProveHandle::finish` the host
//! epilogue; `prove_overlapped` synthesizes partition k+1 while partition k is
//! on the device. It calls only `cuda-prover-bellperson`.

use std::time::{Duration, Instant};

use bellpepper_core::Circuit;
use cuda_prover_bellperson as glue;

pub use glue::circuits;
pub use glue::{
    built_with_cuda, cuda_device_count, synthesize, synthesize_sized, Backend, Blinding, Context,
    ContextOptions, DeviceInfo, DeviceMutex, DeviceStats, Error, ErrorCode, Parameters, Proof,
    ProofOutput, ProvingKey, Result, Scalar, SizeHint, Synthesized, Timings, GPU_AUTO, GPU_BOUND,
};

/// The text of a caught panic (a circuit's synthesize is the caller's code).
pub fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "panic".into())
}

/// Synthesized partitions ready for the device.
pub struct SynthesizedJob {
    pub partitions: Vec<Synthesized>,
    pub blinding: Vec<Blinding>,
    /// Partition numbers, carried to the core for errors and fault hooks.
    pub tags: Vec<i64>,
}

/// A proof of one partition with where and how it was made.
#[derive(Debug, Clone)]
pub struct PartitionProof {
    pub partition: usize,
    pub output: ProofOutput,
    pub public_inputs: Vec<Scalar>,
    pub synthesis: Duration,
}

/// Device part done; the epilogue is left.
pub struct ProveHandle {
    pending: glue::PendingProofs,
    tags: Vec<i64>,
    public_inputs: Vec<Vec<Scalar>>,
}

impl ProveHandle {
    /// The device that ran each partition.
    pub fn devices(&self) -> Vec<u32> {
        self.pending.devices()
    }

    /// The host epilogue; proofs come back in the job's order.
    pub fn finish(self) -> Result<Vec<(i64, ProofOutput, Vec<Scalar>)>> {
        let outs = self.pending.finish()?;
        Ok(self
            .tags
            .into_iter()
            .zip(outs)
            .zip(self.public_inputs)
            .map(|((t, o), p)| (t, o, p))
            .collect())
    }
}

/// Runs the device part of a synthesized job on `gpu_index` (an ordinal,
/// `GPU_AUTO` or `GPU_BOUND`), holding `mutex` (or the device's own) over it.
pub fn gpu_prove_start(
    ctx: &Context,
    job: &SynthesizedJob,
    key: &ProvingKey,
    mutex: Option<&DeviceMutex>,
    gpu_index: i32,
) -> Result<ProveHandle> {
    let pending = glue::prove_start(
        ctx,
        key,
        &job.partitions,
        &job.blinding,
        &job.tags,
        gpu_index,
        mutex,
    )?;
    Ok(ProveHandle {
        pending,
        tags: job.tags.clone(),
        public_inputs: job
            .partitions
            .iter()
            .map(|s| s.public_inputs().to_vec())
            .collect(),
    })
}

/// `gpu_prove_start` followed by the epilogue.
pub fn gpu_prove(
    ctx: &Context,
    job: &SynthesizedJob,
    key: &ProvingKey,
    mutex: Option<&DeviceMutex>,
    gpu_index: i32,
) -> Result<Vec<(i64, ProofOutput, Vec<Scalar>)>> {
    gpu_prove_start(ctx, job, key, mutex, gpu_index)?.finish()
}

/// Proves `circuits` one partition at a time on `gpu_index`, synthesizing
/// partition k+1 on another thread while partition k is on the device (a
/// queue of depth one bounds host memory). `blinding(k)` gives partition k's
/// factors; `progress(k)` is called as each partition finishes.
pub fn prove_overlapped<C, B, P>(
    ctx: &Context,
    key: &ProvingKey,
    circuits: Vec<C>,
    mut blinding: B,
    gpu_index: i32,
    mutex: Option<&DeviceMutex>,
    mut progress: P,
) -> Result<Vec<PartitionProof>>
where
    C: Circuit<Scalar> + Send,
    B: FnMut(usize) -> Blinding,
    P: FnMut(&PartitionProof),
{
    let n = circuits.len();
    let hint = key.size_hint()?;
    let (tx, rx) = crossbeam_channel::bounded::<(usize, Result<Synthesized>, Duration)>(1);
    std::thread::scope(|s| {
        s.spawn(move || {
            for (k, c) in circuits.into_iter().enumerate() {
                let t = Instant::now();
                // A panic in the caller's circuit becomes this partition's
                // error rather than a panic of the whole pipeline.
                let r = match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    synthesize_sized(c, hint)
                })) {
                    Ok(r) => r.map_err(Error::from),
                    Err(p) => Err(Error::Invalid(format!(
                        "the circuit panicked: {}",
                        panic_message(&*p)
                    ))),
                };
                let failed = r.is_err();
                if tx.send((k, r, t.elapsed())).is_err() || failed {
                    return;
                }
            }
        });
        // Owned here so that an early return drops it and unblocks the
        // synthesis thread before the scope joins it.
        let rx = rx;
        let mut out = Vec::with_capacity(n);
        for (k, synth, dt) in rx.iter() {
            let job = SynthesizedJob {
                partitions: vec![synth?],
                blinding: vec![blinding(k)],
                tags: vec![k as i64],
            };
            let handle = gpu_prove_start(ctx, &job, key, mutex, gpu_index)?;
            drop(job);
            for (_, output, public_inputs) in handle.finish()? {
                let p = PartitionProof {
                    partition: k,
                    output,
                    public_inputs,
                    synthesis: dt,
                };
                progress(&p);
                out.push(p);
            }
        }
        Ok(out)
    })
}
