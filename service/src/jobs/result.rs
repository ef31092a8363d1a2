//! How a job ends: its result (`JobResult`: state, proofs, error and
//! code, report), where its time went (`Timings`), the results of a
//! cancelled and of a failed job, and the clocks they are measured with
//! (`ms`, `unix_ms`).

use std::time::Duration;

use crate::errors::{error_code, ServiceError};
use crate::proto::ErrorCode;

use super::{CancelReason, JobState};

/// How a job ended.
#[derive(Debug, Clone)]
pub struct JobResult {
    pub state: JobState,
    pub verified: bool,
    /// bellperson's encoding, in partition order.
    pub proofs: Vec<Vec<u8>>,
    /// Failed and cancelled jobs: the error's message, and its code
    /// ([`crate::errors::error_code`]); `Unspecified` for done jobs.
    pub error: String,
    pub code: ErrorCode,
    pub report_json: String,
    pub timings: Timings,
}

/// Where a job's time went, in milliseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Timings {
    /// Submission to the job's start (to its end, for a job that never
    /// started).
    pub queue_wait_ms: u64,
    /// Loading the proving key (0 when it was loaded already).
    pub srs_load_ms: u64,
    /// Circuit synthesis (full or witness-only, with the core's evaluation
    /// of a, b, c), summed over the partitions.
    pub synthesis_ms: u64,
    /// The device part, summed over the partitions.
    pub gpu_compute_ms: u64,
    /// Submission to the job's end.
    pub total_ms: u64,
}

impl Timings {
    /// Synthesis and device time of an engine job's report.
    pub fn from_report(report: &cuda_prover_groth16::JobReport) -> Self {
        let mut synthesis = 0.0;
        let mut device = 0.0;
        for p in &report.per_partition {
            synthesis += p.synthesis_ms.unwrap_or(0.0) + p.witness_ms.unwrap_or(0.0);
            synthesis += p.evaluation_ms;
            device += p.device_ms;
        }
        Self {
            synthesis_ms: synthesis.round() as u64,
            gpu_compute_ms: device.round() as u64,
            ..Self::default()
        }
    }
}

pub(super) fn ms(d: Duration) -> u64 {
    d.as_millis().min(u64::MAX as u128) as u64
}

/// Now, in ms since the Unix epoch.
pub(super) fn unix_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(ms)
        .unwrap_or(0)
}

/// How a cancelled job ends (`None`: cancelled without a reason given).
pub(super) fn cancelled_result(reason: Option<CancelReason>) -> JobResult {
    let e = reason
        .map(CancelReason::error)
        .unwrap_or_else(|| ServiceError::Cancelled("cancelled".into()));
    ended_by(JobState::Cancelled, e)
}

/// How a failed job ends: the error's message and code.
pub(super) fn failed(e: ServiceError) -> JobResult {
    ended_by(JobState::Failed, e)
}

/// A job that ended in `state` without a proof: `e`'s message and code.
fn ended_by(state: JobState, e: ServiceError) -> JobResult {
    JobResult {
        state,
        verified: false,
        proofs: Vec::new(),
        error: e.to_string(),
        code: error_code(&e),
        report_json: String::new(),
        timings: Timings::default(),
    }
}
