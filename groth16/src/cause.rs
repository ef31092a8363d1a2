//! The Groth16 layers' errors as the engine keeps them: a [`Cause`] with
//! the kind the core's code gives (or `InvalidInput` for a synthesis
//! error), the error itself kept as the source.

use cuda_prover_engine::{Cause, ErrorKind};
use cuda_prover_pipeline::Error as ProveError;

/// An error of the pipeline (or of the device layer below it) for an
/// [`cuda_prover_engine::EngineError`].
pub fn cause(e: impl Into<ProveError>) -> Cause {
    let e = e.into();
    let (kind, core) = match &e {
        ProveError::Core(c) => (Some(ErrorKind::of_core(c.code)), Some(c.code)),
        ProveError::Synthesis(_) => (Some(ErrorKind::InvalidInput), None),
        other => (None, other.code()),
    };
    Cause::new(e, kind, core)
}
