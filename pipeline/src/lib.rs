//! `cuda-prover-pipeline`: proving as start and finish, and the overlap of
//! CPU synthesis with device work.
//!
//! This layer owns the order of work for one device: `gpu_prove_start` runs
//! the device part and hands back a handle, `ProveHandle::finish` the host
//! epilogue; `prove_overlapped` synthesizes partition k+1 while partition k is
//! on the device. A partition reaches the device fully synthesized (a, b, c
//! evaluated on the CPU) or, when its circuit's shape is known, as a witness
//! alone (the core evaluates a, b, c). It calls only `cuda-prover-bellperson`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bellpepper_core::Circuit;
use cuda_prover_bellperson as glue;

pub use glue::circuits;
pub use glue::setup;
pub use glue::shape_file;
pub use glue::vk_fingerprint;
pub use glue::{
    built_with_cuda, cuda_device_count, cuda_device_info, cuda_usable_devices, panic_message,
    synthesize, synthesize_recording, synthesize_sized, synthesize_witness, Backend, Blinding,
    Context, ContextOptions, DeviceInfo, DeviceMutex, DeviceStats, Error, ErrorCode, GpuIndex,
    KeyCheck, Parameters, Placement, Proof, ProofOutput, ProvingKey, Result, Scalar, Shape,
    ShapeData, ShapeInfo, SizeHint, StreamSharing, Synthesized, Timings, Witness, GPU_AUTO,
    GPU_BOUND,
};
/// Witness-only synthesis of a circuit cut into a prefix and pieces, one
/// piece per core.
pub use glue::{
    record_shape_pieces, synthesize_pieces, synthesize_pieces_in_place, synthesize_witness_pieces,
};

/// How partitions are synthesized.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SynthesisMode {
    /// The witness path when the circuit's shape is known (given, or
    /// recorded from a first full synthesis), else full synthesis.
    #[default]
    Auto,
    /// Always full synthesis: a, b, c evaluated on the CPU.
    Full,
    /// Always the witness path; a shape must be given.
    Witness,
}

impl SynthesisMode {
    pub fn name(self) -> &'static str {
        match self {
            SynthesisMode::Auto => "auto",
            SynthesisMode::Full => "full",
            SynthesisMode::Witness => "witness",
        }
    }
}

impl std::str::FromStr for SynthesisMode {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "auto" => Ok(SynthesisMode::Auto),
            "full" => Ok(SynthesisMode::Full),
            "witness" => Ok(SynthesisMode::Witness),
            o => Err(format!(
                "unknown synthesis mode '{o}' (expected auto, full or witness)"
            )),
        }
    }
}

/// One partition ready for the device.
pub enum Prepared {
    /// Fully synthesized: a, b, c evaluated on the CPU.
    Full(Synthesized),
    /// Only the witness; the core evaluates a, b, c from the shape.
    Witness { witness: Witness, shape: Arc<Shape> },
}

impl From<Synthesized> for Prepared {
    fn from(s: Synthesized) -> Self {
        Prepared::Full(s)
    }
}

impl Prepared {
    /// The public inputs a verifier takes (without ONE).
    pub fn public_inputs(&self) -> &[Scalar] {
        match self {
            Prepared::Full(s) => s.public_inputs(),
            Prepared::Witness { witness, .. } => witness.public_inputs(),
        }
    }

    /// Host bytes this partition holds while it waits for the device.
    pub fn host_bytes(&self) -> usize {
        match self {
            Prepared::Full(s) => s.bytes(),
            Prepared::Witness { witness, .. } => witness.bytes(),
        }
    }

    pub fn is_witness(&self) -> bool {
        matches!(self, Prepared::Witness { .. })
    }
}

/// Synthesizes one partition: its witness alone when `shape` is given,
/// else in full. A panic in the circuit (the caller's code) becomes an
/// error.
pub fn prepare<C: Circuit<Scalar>>(
    circuit: C,
    hint: SizeHint,
    shape: Option<&Arc<Shape>>,
) -> Result<Prepared> {
    catch_circuit_panic(|| match shape {
        Some(shape) => Ok(Prepared::Witness {
            witness: synthesize_witness(circuit, hint)?,
            shape: shape.clone(),
        }),
        None => Ok(Prepared::Full(synthesize_sized(circuit, hint)?)),
    })
}

/// Runs `f`, turning a panic into an error that carries its message.
pub fn catch_circuit_panic<T>(f: impl FnOnce() -> Result<T>) -> Result<T> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(p) => Err(Error::Invalid(format!(
            "the circuit panicked: {}",
            panic_message(&*p)
        ))),
    }
}

/// Partitions ready for the device: all fully synthesized, or all
/// witnesses of one shape.
pub struct SynthesizedJob {
    pub partitions: Vec<Prepared>,
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
    /// Time to synthesize the partition (its witness alone, when
    /// `witness_only`).
    pub synthesis: Duration,
    pub witness_only: bool,
    /// Host bytes the partition held on its way to the device.
    pub host_bytes: usize,
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

/// Runs the device part of a synthesized job where `place` says (a device
/// ordinal, `GPU_AUTO` or `GPU_BOUND`, under its mutex or the device's own).
pub fn gpu_prove_start(
    ctx: &Context,
    job: &SynthesizedJob,
    key: &ProvingKey,
    place: &Placement<'_>,
) -> Result<ProveHandle> {
    let pending = match job.partitions.first() {
        None => return Err(Error::Invalid("the job has no partitions".into())),
        Some(Prepared::Full(_)) => {
            let full = job
                .partitions
                .iter()
                .map(|p| match p {
                    Prepared::Full(s) => Ok(s),
                    Prepared::Witness { .. } => Err(mixed()),
                })
                .collect::<Result<Vec<_>>>()?;
            glue::prove_start(ctx, key, &full, &job.blinding, &job.tags, place)?
        }
        Some(Prepared::Witness { shape, .. }) => {
            let witnesses = job
                .partitions
                .iter()
                .map(|p| match p {
                    Prepared::Witness { witness, shape: s } if Arc::ptr_eq(s, shape) => Ok(witness),
                    _ => Err(mixed()),
                })
                .collect::<Result<Vec<_>>>()?;
            glue::prove_start_witness(ctx, key, shape, &witnesses, &job.blinding, &job.tags, place)?
        }
    };
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

fn mixed() -> Error {
    Error::Invalid(
        "a job's partitions must all be fully synthesized or all witnesses of one shape".into(),
    )
}

/// `gpu_prove_start` followed by the epilogue.
pub fn gpu_prove(
    ctx: &Context,
    job: &SynthesizedJob,
    key: &ProvingKey,
    place: &Placement<'_>,
) -> Result<Vec<(i64, ProofOutput, Vec<Scalar>)>> {
    gpu_prove_start(ctx, job, key, place)?.finish()
}

/// Proves `circuits` one partition at a time where `place` says, synthesizing
/// partition k+1 on another thread while partition k is on the device (a
/// queue of depth one bounds host memory). With a `shape`, only witnesses
/// are synthesized (the circuits must be of that shape). `blinding(k)` gives
/// partition k's factors; `progress(k)` is called as each partition
/// finishes.
pub fn prove_overlapped<C, B, P>(
    ctx: &Context,
    key: &ProvingKey,
    shape: Option<&Arc<Shape>>,
    circuits: Vec<C>,
    mut blinding: B,
    place: &Placement<'_>,
    mut progress: P,
) -> Result<Vec<PartitionProof>>
where
    C: Circuit<Scalar> + Send,
    B: FnMut(usize) -> Blinding,
    P: FnMut(&PartitionProof),
{
    let n = circuits.len();
    let hint = key.size_hint()?;
    let (tx, rx) = crossbeam_channel::bounded::<(usize, Result<Prepared>, Duration)>(1);
    std::thread::scope(|s| {
        s.spawn(move || {
            for (k, c) in circuits.into_iter().enumerate() {
                let t = Instant::now();
                let r = prepare(c, hint, shape);
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
        for (k, prepared, dt) in rx.iter() {
            let prepared = prepared?;
            let (witness_only, host_bytes) = (prepared.is_witness(), prepared.host_bytes());
            let job = SynthesizedJob {
                partitions: vec![prepared],
                blinding: vec![blinding(k)],
                tags: vec![k as i64],
            };
            let handle = gpu_prove_start(ctx, &job, key, place)?;
            drop(job);
            for (_, output, public_inputs) in handle.finish()? {
                let p = PartitionProof {
                    partition: k,
                    output,
                    public_inputs,
                    synthesis: dt,
                    witness_only,
                    host_bytes,
                };
                progress(&p);
                out.push(p);
            }
        }
        Ok(out)
    })
}
