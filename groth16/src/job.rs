//! Groth16 partitions as engine work: a job of N partitions of one
//! circuit, synthesized on the CPU (in full, or as witnesses once the
//! circuit's shape is known), proved on the device with the job's key, and
//! verified with bellperson's verifier; and the job's report.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use bellpepper_core::Circuit;
use cuda_prover_pipeline::{
    catch_circuit_panic, gpu_prove_start, prepare, synthesize_recording, Blinding, PartitionProof,
    Prepared, ProvingKey, Scalar, Shape, ShapeData, SizeHint, SynthesisMode, SynthesizedJob,
};
use parking_lot::Mutex;

use crate::blinding::BlindingSource;
use cuda_prover_engine::EngineError;

use crate::cause::cause;
use crate::readying::ready_key_on;
use crate::report::JobReport;
use cuda_prover_engine::{DeviceSlot, Work};

/// N partitions of one circuit.
pub struct Job<C> {
    pub name: String,
    pub partitions: Vec<C>,
    pub blinding: BlindingSource,
    /// Trim every device's cache after the job (a memory handoff).
    pub trim_after: bool,
    /// Full synthesis or the witness path (see [`SynthesisMode`]).
    pub synthesis: SynthesisMode,
    /// The circuit's shape, when known (checked against the key before
    /// work starts). Without one, `Auto` records it from the first full
    /// synthesis and proves the later partitions from witnesses.
    pub shape: Option<Arc<Shape>>,
}

impl<C> Job<C> {
    /// A job with random blinding, automatic synthesis and no shape yet.
    pub fn new(name: impl Into<String>, partitions: Vec<C>) -> Self {
        Self {
            name: name.into(),
            partitions,
            blinding: BlindingSource::Random,
            trim_after: false,
            synthesis: SynthesisMode::Auto,
            shape: None,
        }
    }
}

/// A job's proofs in partition order, and its report.
pub struct JobOutput {
    pub proofs: Vec<PartitionProof>,
    pub report: JobReport,
    /// The shape the job proved witnesses with (given or recorded).
    pub shape: Option<Arc<Shape>>,
    /// The constraints recorded during this job, when it had no shape:
    /// worth saving next to the params (see `shape_file`).
    pub recorded_shape: Option<ShapeData>,
}

/// A partition ready for the device.
pub struct PreparedPartition {
    prepared: Prepared,
    blinding: Blinding,
    synthesis: Duration,
}

/// The [`Work`] of a Groth16 job with its key.
pub struct Groth16Work<'k, C> {
    key: &'k ProvingKey,
    slots: Vec<Mutex<Option<C>>>,
    blinding: BlindingSource,
    hint: SizeHint,
    mode: SynthesisMode,
    /// The shape witnesses are proved with, once known.
    shape: OnceLock<Arc<Shape>>,
    /// Set by the synthesizer that records the shape (Auto without one).
    recording: AtomicBool,
    recorded: Mutex<Option<ShapeData>>,
}

impl<'k, C: Circuit<Scalar> + Send> Groth16Work<'k, C> {
    /// Checks the job against its key; no work starts here.
    pub fn new(
        key: &'k ProvingKey,
        partitions: Vec<C>,
        blinding: BlindingSource,
        synthesis: SynthesisMode,
        shape: Option<Arc<Shape>>,
    ) -> Result<Self, EngineError> {
        if let Some(shape) = &shape {
            key.check_shape(shape)
                .map_err(|e| EngineError::PrepareFor {
                    what: "the job's shape does not fit its key".into(),
                    source: cause(e),
                })?;
        } else if synthesis == SynthesisMode::Witness {
            return Err(EngineError::Setup(
                "witness synthesis needs the circuit's shape: give one, or use auto (which records it from the first partition)".into(),
            ));
        }
        let hint = key
            .size_hint()
            .map_err(|e| EngineError::Prepare(cause(e)))?;
        let known = OnceLock::new();
        if synthesis != SynthesisMode::Full {
            if let Some(shape) = shape {
                let _ = known.set(shape);
            }
        }
        Ok(Self {
            key,
            slots: partitions
                .into_iter()
                .map(|c| Mutex::new(Some(c)))
                .collect(),
            blinding,
            hint,
            mode: synthesis,
            shape: known,
            recording: AtomicBool::new(false),
            recorded: Mutex::new(None),
        })
    }

    /// The shape witnesses were proved with, and the one recorded here.
    pub fn into_shapes(self) -> (Option<Arc<Shape>>, Option<ShapeData>) {
        (self.shape.get().cloned(), self.recorded.lock().take())
    }

    /// One partition by the job's synthesis mode: the witness alone once
    /// the shape is known; in Auto without a shape, the first synthesizer
    /// to get here records it during its full synthesis and the others
    /// synthesize in full until it is there. A panic in the circuit (the
    /// caller's code) is an error, not a torn-down engine.
    fn synthesize(&self, circuit: C) -> cuda_prover_pipeline::Result<Prepared> {
        if self.mode == SynthesisMode::Full {
            return prepare(circuit, self.hint, None);
        }
        if let Some(shape) = self.shape.get() {
            return prepare(circuit, self.hint, Some(shape));
        }
        if self.recording.swap(true, Ordering::SeqCst) {
            return prepare(circuit, self.hint, None);
        }
        let (synth, data) = catch_circuit_panic(|| synthesize_recording(circuit, self.hint))?;
        // A shape that does not fit the key is left unused: this
        // partition's full proof reports the mismatch.
        if let Ok(shape) = Shape::new(&data) {
            if self.key.check_shape(&shape).is_ok() {
                let _ = self.shape.set(Arc::new(shape));
                *self.recorded.lock() = Some(data);
            }
        }
        Ok(Prepared::Full(synth))
    }
}

impl<C: Circuit<Scalar> + Send> Work for Groth16Work<'_, C> {
    type Prepared = PreparedPartition;
    type Output = PartitionProof;

    fn items(&self) -> usize {
        self.slots.len()
    }

    fn ready_device(&self, slot: &DeviceSlot<'_>) -> Result<(), EngineError> {
        ready_key_on(self.key, self.shape.get().map(|s| &**s), slot)
    }

    fn prepare(&self, k: usize) -> Result<PreparedPartition, EngineError> {
        let circuit = self.slots[k]
            .lock()
            .take()
            .ok_or_else(|| EngineError::Collector(format!("partition {k} prepared twice")))?;
        let t = std::time::Instant::now();
        let prepared = self
            .synthesize(circuit)
            .map_err(|source| EngineError::Synthesis {
                partition: k,
                source: cause(source),
            })?;
        Ok(PreparedPartition {
            prepared,
            blinding: self.blinding.for_partition(k),
            synthesis: t.elapsed(),
        })
    }

    fn prove(
        &self,
        k: usize,
        p: PreparedPartition,
        slot: &DeviceSlot<'_>,
    ) -> Result<PartitionProof, EngineError> {
        let ordinal = slot.ordinal;
        let (witness_only, host_bytes) = (p.prepared.is_witness(), p.prepared.host_bytes());
        let job = SynthesizedJob {
            partitions: vec![p.prepared],
            blinding: vec![p.blinding],
            tags: vec![k as i64],
        };
        let mut outs = gpu_prove_start(slot.ctx, &job, self.key, &slot.placement())
            .and_then(|h| h.finish())
            .map_err(|source| EngineError::Partition {
                partition: k,
                device: ordinal,
                source: cause(source),
            })?;
        if outs.len() != 1 {
            return Err(EngineError::Collector(format!(
                "device {ordinal} returned {} proofs for partition {k}",
                outs.len()
            )));
        }
        let (_, output, public_inputs) = outs.pop().expect("one proof");
        Ok(PartitionProof {
            partition: k,
            output,
            public_inputs,
            synthesis: p.synthesis,
            witness_only,
            host_bytes,
        })
    }

    fn proved_on(&self, output: &PartitionProof) -> u32 {
        output.output.device
    }

    fn verify(&self, k: usize, d: &PartitionProof) -> Result<(), EngineError> {
        let ok = self
            .key
            .verify(&d.output.proof, &d.public_inputs)
            .map_err(|e| EngineError::Collector(e.to_string()))?;
        if ok {
            Ok(())
        } else {
            Err(EngineError::Verification {
                partition: k,
                device: d.output.device,
            })
        }
    }
}
