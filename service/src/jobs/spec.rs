//! What a job is: its state (`JobState`), why it was cancelled
//! (`CancelReason`, and the error that ends it), what it proves (`Work`),
//! where it came from (`Origin`, for the journal and idempotency) and the
//! checked job as the table takes it (`JobSpec`).

use std::path::PathBuf;
#[cfg(feature = "filecoin")]
use std::sync::Arc;
use std::time::Duration;

use cuda_prover_engine::gate::Priority;
use cuda_prover_pipeline::circuits::Kind;
use cuda_prover_pipeline::SynthesisMode;

use crate::errors::ServiceError;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobState {
    Queued,
    Running,
    Done,
    Failed,
    Cancelled,
}

impl JobState {
    pub fn name(self) -> &'static str {
        match self {
            JobState::Queued => "queued",
            JobState::Running => "running",
            JobState::Done => "done",
            JobState::Failed => "failed",
            JobState::Cancelled => "cancelled",
        }
    }

    pub fn finished(self) -> bool {
        matches!(
            self,
            JobState::Done | JobState::Failed | JobState::Cancelled
        )
    }
}

/// Why a job was cancelled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CancelReason {
    /// A client's Cancel.
    Request,
    /// Its deadline passed while it ran or waited.
    Deadline,
    /// Its deadline had passed when a runner took it.
    DeadlineBeforeStart,
    /// The daemon stopped without draining.
    Shutdown,
}

impl CancelReason {
    /// The error a job cancelled so ends with.
    pub fn error(self) -> ServiceError {
        match self {
            CancelReason::Request => ServiceError::Cancelled("cancelled by request".into()),
            CancelReason::Deadline => ServiceError::DeadlineExceeded("deadline exceeded".into()),
            CancelReason::DeadlineBeforeStart => {
                ServiceError::DeadlineExceeded("deadline exceeded before the job started".into())
            }
            CancelReason::Shutdown => ServiceError::Cancelled("the daemon is shutting down".into()),
        }
    }
}

/// What a job proves.
#[derive(Debug, Clone)]
pub enum Work {
    /// The built-in circuit of the spec's kind, size and partitions.
    BuiltIn,
    /// Filecoin commit phase 2 (the spec's kind and size are unused).
    #[cfg(feature = "filecoin")]
    FilecoinC2(Arc<crate::filecoin::C2Spec>),
    /// Filecoin Winning or Window PoSt (whole, or one partition).
    #[cfg(feature = "filecoin")]
    FilecoinPost(Arc<crate::filecoin::PostSpec>),
    /// Filecoin SnapDeals.
    #[cfg(feature = "filecoin")]
    FilecoinSnap(Arc<crate::filecoin::SnapSpec>),
}

/// Where a job came from, for the journal and for idempotency.
#[derive(Debug, Clone, Default)]
pub struct Origin {
    /// The request as the cuda_prover.v1 API takes it (cuzk.v1 requests
    /// are written in that form too); journaled when set.
    pub request: Option<crate::proto::SubmitRequest>,
    /// The client's idempotency key (the `request_id` of either API), the
    /// API it was given on, and a digest of the request's inputs.
    pub request_id: String,
    pub api: crate::requests::Api,
    pub digest: u64,
}

/// A job, checked.
#[derive(Debug, Clone)]
pub struct JobSpec {
    pub work: Work,
    pub origin: Origin,
    pub name: String,
    pub kind: Kind,
    pub log_constraints: u32,
    pub partitions: u32,
    pub seed: Option<u64>,
    pub synthesis: SynthesisMode,
    pub priority: Priority,
    /// Empty: every device of the daemon.
    pub devices: Vec<u32>,
    pub params_dir: PathBuf,
    pub deadline: Option<Duration>,
}
