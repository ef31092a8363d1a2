//! Engine errors name the item and the device, and keep the error of the
//! layer below (a [`Cause`]: the device crate's, with the core's
//! [`ErrorCode`], or a proof family's, with the kind the family gave it) as
//! their source. [`EngineError::kind`] classifies any of them into an
//! [`ErrorKind`], the small family-neutral set the service puts on the wire.

use cuda_prover_device::{Error as DeviceError, ErrorCode};

/// What kind of failure an error is, in terms a caller can act on. Stable
/// and family-neutral: a new proof family maps its errors onto these.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// The request or an option is wrong (sizes, devices named, a witness
    /// that does not fit its shape); retrying it unchanged fails again.
    InvalidInput,
    /// The witness does not satisfy the circuit (a * b != c on a row).
    UnsatisfiedWitness,
    /// A proving key (or its shape file) is corrupt or made for another
    /// circuit.
    KeyInvalid,
    /// A proving key could not be read or written (missing, permissions,
    /// I/O).
    KeyUnavailable,
    /// A device had too little memory for the job.
    OutOfDeviceMemory,
    /// A device failed (CUDA error, injected fault).
    DeviceFault,
    /// What the job needs is not there: no usable device, a backend this
    /// build lacks, an unsupported operation.
    Unavailable,
    /// The job was cancelled (by a client, a deadline or shutdown).
    Cancelled,
    /// A proof was made but did not verify.
    VerificationFailed,
    /// A bug or an invariant broken inside the prover.
    Internal,
}

impl ErrorKind {
    pub const ALL: [ErrorKind; 10] = [
        ErrorKind::InvalidInput,
        ErrorKind::UnsatisfiedWitness,
        ErrorKind::KeyInvalid,
        ErrorKind::KeyUnavailable,
        ErrorKind::OutOfDeviceMemory,
        ErrorKind::DeviceFault,
        ErrorKind::Unavailable,
        ErrorKind::Cancelled,
        ErrorKind::VerificationFailed,
        ErrorKind::Internal,
    ];

    /// A short snake_case name (logs, metrics labels).
    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::InvalidInput => "invalid_input",
            ErrorKind::UnsatisfiedWitness => "unsatisfied_witness",
            ErrorKind::KeyInvalid => "key_invalid",
            ErrorKind::KeyUnavailable => "key_unavailable",
            ErrorKind::OutOfDeviceMemory => "out_of_device_memory",
            ErrorKind::DeviceFault => "device_fault",
            ErrorKind::Unavailable => "unavailable",
            ErrorKind::Cancelled => "cancelled",
            ErrorKind::VerificationFailed => "verification_failed",
            ErrorKind::Internal => "internal",
        }
    }

    /// The one mapping of the core's codes onto kinds.
    pub fn of_core(code: ErrorCode) -> Self {
        match code {
            ErrorCode::InvalidArgument | ErrorCode::DeviceIndex | ErrorCode::ShapeMismatch => {
                ErrorKind::InvalidInput
            }
            ErrorCode::Unsatisfied => ErrorKind::UnsatisfiedWitness,
            ErrorCode::ParamsFormat => ErrorKind::KeyInvalid,
            ErrorCode::ParamsIo => ErrorKind::KeyUnavailable,
            ErrorCode::OutOfMemory => ErrorKind::OutOfDeviceMemory,
            ErrorCode::Device | ErrorCode::InjectedFault => ErrorKind::DeviceFault,
            ErrorCode::Unsupported => ErrorKind::Unavailable,
            ErrorCode::NoDeviceBound | ErrorCode::Internal | ErrorCode::Unknown(_) => {
                ErrorKind::Internal
            }
        }
    }
}

impl std::fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The error of the layer below that made a setup step, a device or an
/// item fail, kept as the source of an [`EngineError`]: the device crate's
/// (its kind from the core's code) or a proof family's, which states its
/// kind where it knows it and the core's code where the core reported it.
pub struct Cause {
    kind: Option<ErrorKind>,
    core: Option<ErrorCode>,
    source: Box<dyn std::error::Error + Send + Sync + 'static>,
}

impl Cause {
    /// A proof family's error: `kind` where the family classifies it
    /// (`None`: the [`EngineError`] variant decides by what failed), `core`
    /// the core's code behind it.
    pub fn new(
        source: impl std::error::Error + Send + Sync + 'static,
        kind: Option<ErrorKind>,
        core: Option<ErrorCode>,
    ) -> Self {
        Cause {
            kind,
            core,
            source: Box::new(source),
        }
    }

    /// Its kind, or `otherwise` where nobody classified it.
    pub fn kind_or(&self, otherwise: ErrorKind) -> ErrorKind {
        self.kind.unwrap_or(otherwise)
    }

    /// The core's code behind it, where the core reported it.
    pub fn core_code(&self) -> Option<ErrorCode> {
        self.core
    }

    /// The error itself, as its family made it (to downcast).
    pub fn error(&self) -> &(dyn std::error::Error + Send + Sync + 'static) {
        &*self.source
    }
}

impl From<DeviceError> for Cause {
    fn from(e: DeviceError) -> Self {
        Cause {
            kind: Some(ErrorKind::of_core(e.code)),
            core: Some(e.code),
            source: Box::new(e),
        }
    }
}

impl std::fmt::Debug for Cause {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&*self.source, f)
    }
}

/// The message is the error's own; its source is the error's source, so a
/// chain of sources names each error once.
impl std::fmt::Display for Cause {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(&*self.source, f)
    }
}

impl std::error::Error for Cause {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source.source()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// Before any work: a device selection or option that cannot be used.
    #[error("setup: {0}")]
    Setup(String),
    /// Before any work, the layer below failed (its code is kept).
    #[error("setup: {0}")]
    Prepare(#[from] Cause),
    /// As [`EngineError::Prepare`], with what the engine was doing.
    #[error("setup: {what}: {source}")]
    PrepareFor {
        what: String,
        #[source]
        source: Cause,
    },
    /// The devices have too little free memory for the job.
    #[error("setup: {0}")]
    DeviceMemory(String),
    /// A file the engine writes (proofs, reports) could not be written.
    #[error("setup: {what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    /// An item (a partition, a shard) failed; the run was
    /// cancelled.
    #[error("partition {partition} on device {device}: {source}")]
    Partition {
        partition: usize,
        device: u32,
        #[source]
        source: Cause,
    },
    /// Preparing an item (a partition's synthesis) failed; the run was
    /// cancelled.
    #[error("partition {partition}: synthesis failed: {source}")]
    Synthesis {
        partition: usize,
        #[source]
        source: Cause,
    },
    /// A device could not be readied for the job.
    #[error("device {device}: {source}")]
    Device {
        device: u32,
        #[source]
        source: Cause,
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
    /// A params file or directory could not be read, written or made.
    #[error("params: {0}")]
    Params(String),
    /// A params file (or its shape) was read but refused: corrupt, or made
    /// for another circuit. `code` is the core's, where it refused it.
    #[error("params: {message}")]
    Key {
        message: String,
        code: Option<ErrorCode>,
    },
}

impl EngineError {
    /// What kind of failure this is (the service's wire code comes from it).
    pub fn kind(&self) -> ErrorKind {
        match self {
            EngineError::Setup(_) => ErrorKind::InvalidInput,
            EngineError::Prepare(source) | EngineError::PrepareFor { source, .. } => {
                source.kind_or(ErrorKind::Internal)
            }
            EngineError::DeviceMemory(_) => ErrorKind::OutOfDeviceMemory,
            // A path the caller named that cannot be used; other I/O
            // failures are the machine's.
            EngineError::Io { source, .. } => match source.kind() {
                std::io::ErrorKind::NotFound
                | std::io::ErrorKind::PermissionDenied
                | std::io::ErrorKind::AlreadyExists
                | std::io::ErrorKind::IsADirectory
                | std::io::ErrorKind::NotADirectory
                | std::io::ErrorKind::ReadOnlyFilesystem => ErrorKind::InvalidInput,
                _ => ErrorKind::Internal,
            },
            EngineError::Partition { source, .. } => source.kind_or(ErrorKind::Internal),
            EngineError::Synthesis { source, .. } => source.kind_or(ErrorKind::InvalidInput),
            EngineError::Device { source, .. } => source.kind_or(ErrorKind::DeviceFault),
            EngineError::WorkerDied { .. } | EngineError::Collector(_) => ErrorKind::Internal,
            EngineError::Verification { .. } => ErrorKind::VerificationFailed,
            EngineError::Cancelled => ErrorKind::Cancelled,
            EngineError::Params(_) => ErrorKind::KeyUnavailable,
            EngineError::Key { code, .. } => match code.map(ErrorKind::of_core) {
                Some(
                    k @ (ErrorKind::KeyUnavailable
                    | ErrorKind::OutOfDeviceMemory
                    | ErrorKind::DeviceFault),
                ) => k,
                _ => ErrorKind::KeyInvalid,
            },
        }
    }

    /// [`EngineError::kind`]: the family-neutral code of this error.
    pub fn code(&self) -> ErrorKind {
        self.kind()
    }

    /// The core's error code behind this error, where the core reported it.
    pub fn core_code(&self) -> Option<ErrorCode> {
        match self {
            EngineError::Partition { source, .. }
            | EngineError::Synthesis { source, .. }
            | EngineError::Device { source, .. }
            | EngineError::Prepare(source)
            | EngineError::PrepareFor { source, .. } => source.core_code(),
            EngineError::Key { code, .. } => *code,
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
