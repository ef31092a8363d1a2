//! Engine errors name the partition and the device.

use cuda_prover_pipeline::{Error as ProveError, ErrorCode};

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// Before any work: devices, memory, options.
    #[error("setup: {0}")]
    Setup(String),
    /// A partition failed; the job was cancelled.
    #[error("partition {partition} on device {device}: {source}")]
    Partition {
        partition: usize,
        device: u32,
        #[source]
        source: ProveError,
    },
    /// Synthesis of a partition failed; the job was cancelled.
    #[error("partition {partition}: synthesis failed: {source}")]
    Synthesis {
        partition: usize,
        #[source]
        source: ProveError,
    },
    /// A device could not be readied for the job.
    #[error("device {device}: {source}")]
    Device {
        device: u32,
        #[source]
        source: ProveError,
    },
    /// A worker thread died.
    #[error("worker for device {device} died: {message}")]
    WorkerDied { device: u32, message: String },
    /// The collector found a result that breaks the job's invariants.
    #[error("collector: {0}")]
    Collector(String),
    /// A proof did not verify.
    #[error("partition {partition} (device {device}): proof does not verify")]
    Verification { partition: usize, device: u32 },
    /// The job was cancelled from outside; its queued items were dropped.
    #[error("cancelled")]
    Cancelled,
    #[error("params: {0}")]
    Params(String),
}

impl EngineError {
    /// The core's error code behind a partition failure.
    pub fn code(&self) -> Option<ErrorCode> {
        match self {
            EngineError::Partition { source, .. }
            | EngineError::Synthesis { source, .. }
            | EngineError::Device { source, .. } => source.code(),
            _ => None,
        }
    }

    pub fn partition(&self) -> Option<usize> {
        match self {
            EngineError::Partition { partition, .. }
            | EngineError::Synthesis { partition, .. }
            | EngineError::Verification { partition, .. } => Some(*partition),
            _ => None,
        }
    }

    pub fn device(&self) -> Option<u32> {
        match self {
            EngineError::Partition { device, .. }
            | EngineError::Device { device, .. }
            | EngineError::Verification { device, .. }
            | EngineError::WorkerDied { device, .. } => Some(*device),
            _ => None,
        }
    }
}
