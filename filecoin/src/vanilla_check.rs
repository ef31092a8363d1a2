//! The one way this crate asks filecoin-proofs (or storage-proofs) about
//! vanilla proofs that came from outside: an error, or a panic on malformed
//! proofs, is the proofs' fault (`FilecoinError::VanillaProofs`), and so is
//! a verifier that says no.

use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::error::{FilecoinError, Result};

/// What `f` makes of the proofs; its error or panic as the proofs' fault.
pub(crate) fn vanilla_verdict<T>(f: impl FnOnce() -> anyhow::Result<T>) -> Result<T> {
    catch_unwind(AssertUnwindSafe(f))
        .map_err(|p| {
            FilecoinError::VanillaProofs(format!(
                "filecoin-proofs stopped on malformed proofs: {}",
                cuda_prover_pipeline::panic_message(&*p)
            ))
        })?
        .map_err(|e| FilecoinError::VanillaProofs(format!("{e:#}")))
}

/// A verifier's verdict on the proofs: `Ok` when `verify` accepts them;
/// otherwise the proofs' fault, with `verifier` (whose) and `what` (the
/// proofs) in its message.
pub(crate) fn vanilla_accepted(
    verifier: &str,
    what: &str,
    verify: impl FnOnce() -> anyhow::Result<bool>,
) -> Result<()> {
    if vanilla_verdict(verify)? {
        Ok(())
    } else {
        Err(FilecoinError::VanillaProofs(format!(
            "{verifier}'s verifier rejects {what}"
        )))
    }
}
