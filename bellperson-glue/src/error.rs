//! The errors of this layer: synthesis, the core, params files.

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("synthesis failed: {0}")]
    Synthesis(#[from] bellpepper_core::SynthesisError),
    #[error("{0}")]
    Core(#[from] cuda_prover_device::Error),
    #[error("params file: {0}")]
    Io(#[from] std::io::Error),
    #[error("{0}")]
    Invalid(String),
}

impl Error {
    /// The core's error code, when the core reported the error.
    pub fn code(&self) -> Option<cuda_prover_device::ErrorCode> {
        match self {
            Error::Core(e) => Some(e.code),
            _ => None,
        }
    }
}

pub type Result<T> = std::result::Result<T, Error>;
