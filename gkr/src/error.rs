//! Errors of the GKR crate.

/// What went wrong proving, verifying or decoding.
#[derive(Debug, thiserror::Error)]
pub enum GkrError {
    /// The core refused or failed a call (its message names the device).
    #[error("core: {0}")]
    Core(#[from] cuda_prover_device::Error),
    /// A proof that does not verify; the message says which check failed.
    #[error("rejected: {0}")]
    Rejected(String),
    /// Bytes that are not a serialized proof.
    #[error("malformed proof: {0}")]
    Malformed(String),
    /// Bad input or configuration.
    #[error("{0}")]
    Invalid(String),
}

impl GkrError {
    pub(crate) fn core(e: impl Into<cuda_prover_device::Error>) -> Self {
        GkrError::Core(e.into())
    }
}
