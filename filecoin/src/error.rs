//! The errors of this crate: what went wrong, in words a sealing operator
//! can act on.

use std::path::PathBuf;

/// Everything that can fail between a C1 file (or PoSt request) and a
/// verified proof.
#[derive(Debug, thiserror::Error)]
pub enum FilecoinError {
    /// The input could not be read or parsed (truncated, not JSON, wrong
    /// shape, bad base64).
    #[error("invalid input: {0}")]
    Input(String),

    /// The sector size is not one filecoin-proofs supports, or two sources
    /// disagree about it.
    #[error("sector size: {0}")]
    SectorSize(String),

    /// The input does not belong to the prover id / sector id given.
    #[error("identity mismatch: {0}")]
    Identity(String),

    /// filecoin-proofs' own check of the vanilla proofs failed: the C1
    /// output was altered or made for other public inputs.
    #[error("vanilla proofs rejected: {0}")]
    VanillaProofs(String),

    /// Parameters are missing or unreadable.
    #[error("parameters {path}: {message}")]
    Parameters { path: PathBuf, message: String },

    /// Generating test parameters failed.
    #[error("test parameters: {0}")]
    TestParameters(String),

    /// The engine failed (device, synthesis, collector).
    #[error("engine: {0}")]
    Engine(#[from] cuda_prover_engine::EngineError),

    /// filecoin-proofs or storage-proofs returned an error.
    #[error("filecoin-proofs: {0}")]
    Proofs(String),

    /// The proof was made but filecoin-proofs' verifier rejected it; it is
    /// never returned.
    #[error("filecoin-proofs' verifier rejected the {0} proof")]
    Rejected(&'static str),

    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
}

impl FilecoinError {
    /// What kind of failure this is, in the engine's family-neutral terms
    /// (the service's wire code comes from it).
    pub fn code(&self) -> cuda_prover_engine::ErrorKind {
        use cuda_prover_engine::ErrorKind;
        match self {
            FilecoinError::Input(_)
            | FilecoinError::SectorSize(_)
            | FilecoinError::Identity(_)
            | FilecoinError::VanillaProofs(_) => ErrorKind::InvalidInput,
            FilecoinError::Parameters { .. } | FilecoinError::TestParameters(_) => {
                ErrorKind::KeyUnavailable
            }
            FilecoinError::Engine(e) => e.code(),
            FilecoinError::Proofs(_) | FilecoinError::Io { .. } => ErrorKind::Internal,
            FilecoinError::Rejected(_) => ErrorKind::VerificationFailed,
        }
    }

    pub(crate) fn proofs(context: &str, e: impl std::fmt::Display) -> Self {
        FilecoinError::Proofs(format!("{context}: {e:#}"))
    }

    pub(crate) fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        FilecoinError::Io {
            context: context.into(),
            source,
        }
    }
}

pub type Result<T, E = FilecoinError> = std::result::Result<T, E>;
