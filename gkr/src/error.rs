//! Errors of the GKR crate.

/// What went wrong proving, verifying or decoding.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GkrError {
    /// The core refused or failed a call (its message names the device).
    #[error("core: {0}")]
    Core(String),
    /// A proof that does not verify; the message says which check failed.
    #[error("rejected: {0}")]
    Rejected(String),
    /// Bytes that are not a serialized proof.
    #[error("malformed proof: {0}")]
    Malformed(String),
    /// Bad input or configuration.
    #[error("{0}")]
    Invalid(String),
    /// A shard failed: which shard, on which device, and why.
    #[error("shard {shard} on device {device}: {message}")]
    Shard {
        shard: usize,
        device: u32,
        message: String,
    },
}

impl GkrError {
    pub(crate) fn core(e: impl std::fmt::Display) -> Self {
        GkrError::Core(e.to_string())
    }
}
