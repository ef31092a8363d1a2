//! The service's errors, and the one place any error becomes a wire code:
//! [`error_code`] (a cuda_prover.v1 `ErrorCode`), [`job_state`] (its
//! `JobState`) and [`grpc_code`] (the gRPC status of a refused call, for
//! both APIs). An error keeps its source (an [`EngineError`] keeps the
//! core's code) until it is put on the wire.

use cuda_prover_engine::{EngineError, ErrorKind};

use crate::jobs::{JobState, SubmitError};
use crate::proto::{ErrorCode, JobState as WireState};

/// Why the service could not take, run or answer about a job.
#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    /// The engine failed (device, key, synthesis, the core).
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// A Filecoin job failed.
    #[cfg(feature = "filecoin")]
    #[error(transparent)]
    Filecoin(#[from] cuda_prover_filecoin::FilecoinError),
    /// The request cannot be taken as it is.
    #[error("{0}")]
    InvalidRequest(String),
    /// A request above the daemon's size limit.
    #[error("{0}")]
    TooLarge(String),
    /// A params_dir outside the daemon's.
    #[error("{0}")]
    PermissionDenied(String),
    /// No such job or key.
    #[error("{0}")]
    NotFound(String),
    /// The queue is full, the daemon is draining, or the journal refused
    /// the job.
    #[error(transparent)]
    Submit(#[from] SubmitError),
    /// Jobs of a kind this build has no code for.
    #[error("{0}")]
    NotBuilt(String),
    /// Jobs of a kind this daemon was started without.
    #[error("{0}")]
    NotEnabled(String),
    /// The job was cancelled (by a client, or by the daemon stopping).
    #[error("{0}")]
    Cancelled(String),
    /// The job's deadline passed.
    #[error("{0}")]
    DeadlineExceeded(String),
    /// A bug or a broken invariant in the daemon (a task that died, a proof
    /// that could not be encoded).
    #[error("{0}")]
    Internal(String),
}

/// The wire code of an engine error kind.
fn kind_code(k: ErrorKind) -> ErrorCode {
    match k {
        ErrorKind::InvalidInput => ErrorCode::InvalidInput,
        ErrorKind::UnsatisfiedWitness => ErrorCode::UnsatisfiedWitness,
        ErrorKind::KeyInvalid => ErrorCode::KeyInvalid,
        ErrorKind::KeyUnavailable => ErrorCode::KeyUnavailable,
        ErrorKind::OutOfDeviceMemory => ErrorCode::OutOfDeviceMemory,
        ErrorKind::DeviceFault => ErrorCode::DeviceFault,
        ErrorKind::Unavailable => ErrorCode::Unavailable,
        ErrorKind::Cancelled => ErrorCode::Cancelled,
        ErrorKind::VerificationFailed => ErrorCode::VerificationFailed,
        ErrorKind::Internal => ErrorCode::Internal,
    }
}

/// The cuda_prover.v1 code of any error of the service.
pub fn error_code(e: &ServiceError) -> ErrorCode {
    match e {
        ServiceError::Engine(e) => kind_code(e.code()),
        #[cfg(feature = "filecoin")]
        ServiceError::Filecoin(e) => kind_code(e.code()),
        ServiceError::InvalidRequest(_) => ErrorCode::InvalidInput,
        ServiceError::TooLarge(_) => ErrorCode::TooLarge,
        ServiceError::PermissionDenied(_) => ErrorCode::PermissionDenied,
        ServiceError::NotFound(_) => ErrorCode::NotFound,
        ServiceError::Submit(SubmitError::Busy(_)) => ErrorCode::Busy,
        ServiceError::Submit(SubmitError::Draining | SubmitError::Journal(_)) => {
            ErrorCode::Unavailable
        }
        ServiceError::NotBuilt(_) | ServiceError::NotEnabled(_) => ErrorCode::Unsupported,
        ServiceError::Cancelled(_) => ErrorCode::Cancelled,
        ServiceError::DeadlineExceeded(_) => ErrorCode::DeadlineExceeded,
        ServiceError::Internal(_) => ErrorCode::Internal,
    }
}

/// The gRPC status code of a call refused with `code`.
pub fn grpc_code(code: ErrorCode) -> tonic::Code {
    use tonic::Code;
    match code {
        ErrorCode::InvalidInput | ErrorCode::UnsatisfiedWitness => Code::InvalidArgument,
        ErrorCode::KeyInvalid | ErrorCode::KeyUnavailable => Code::FailedPrecondition,
        ErrorCode::OutOfDeviceMemory | ErrorCode::Busy => Code::ResourceExhausted,
        ErrorCode::DeviceFault | ErrorCode::VerificationFailed | ErrorCode::Internal => {
            Code::Internal
        }
        ErrorCode::Unavailable => Code::Unavailable,
        ErrorCode::Cancelled => Code::Cancelled,
        ErrorCode::DeadlineExceeded => Code::DeadlineExceeded,
        ErrorCode::NotFound => Code::NotFound,
        ErrorCode::PermissionDenied => Code::PermissionDenied,
        ErrorCode::TooLarge => Code::OutOfRange,
        ErrorCode::Unsupported => Code::Unimplemented,
        ErrorCode::Unspecified => Code::Unknown,
    }
}

/// The gRPC status of a call refused with `e`: its code by [`error_code`]
/// and [`grpc_code`] (a kind this daemon was started without answers
/// FAILED_PRECONDITION: the same request may go to another daemon), its
/// message the error's.
pub fn status(e: &ServiceError) -> tonic::Status {
    let code = match e {
        ServiceError::NotEnabled(_) => tonic::Code::FailedPrecondition,
        e => grpc_code(error_code(e)),
    };
    tonic::Status::new(code, e.to_string())
}

impl From<ServiceError> for tonic::Status {
    fn from(e: ServiceError) -> Self {
        status(&e)
    }
}

/// The wire state of a job state.
pub fn job_state(s: JobState) -> WireState {
    match s {
        JobState::Queued => WireState::Queued,
        JobState::Running => WireState::Running,
        JobState::Done => WireState::Done,
        JobState::Failed => WireState::Failed,
        JobState::Cancelled => WireState::Cancelled,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_has_a_grpc_code() {
        for k in ErrorKind::ALL {
            let code = kind_code(k);
            assert_ne!(code, ErrorCode::Unspecified, "{k}");
            assert_ne!(grpc_code(code), tonic::Code::Ok, "{k}");
        }
        let e = ServiceError::Engine(EngineError::Cancelled);
        assert_eq!(error_code(&e), ErrorCode::Cancelled);
        assert_eq!(status(&e).code(), tonic::Code::Cancelled);
        let e = ServiceError::Submit(SubmitError::Busy(3));
        assert_eq!(status(&e).code(), tonic::Code::ResourceExhausted);
    }
}
