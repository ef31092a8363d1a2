//! Readying an engine's devices for a key without proving: every worker
//! places the key (and the shape, when the jobs will prove from witnesses)
//! on its device as a job's first partition would, so that the next job of
//! that key starts proving at once. A daemon's preloaded key is readied
//! this way before the daemon reports ready.

use std::sync::Arc;

use cuda_prover_pipeline::{ProvingKey, Shape};

use cuda_prover_engine::EngineError;

use crate::cause::cause;
use cuda_prover_engine::{DeviceSlot, Work};

/// Places `key` (with `shape`) on the worker's device: the readying of a
/// Groth16 job, and of [`ReadyWork`].
pub(crate) fn ready_key_on(
    key: &ProvingKey,
    shape: Option<&Shape>,
    slot: &DeviceSlot<'_>,
) -> Result<(), EngineError> {
    match shape {
        Some(shape) => key.prepare_shape(slot.ctx, slot.ordinal, shape),
        None => key.prepare(slot.ctx, slot.ordinal),
    }
    .map_err(|source| EngineError::Device {
        device: slot.ordinal,
        source: cause(source),
    })
}

/// A run of one empty item whose workers (one or more per device) each
/// ready their device for the key.
pub(crate) struct ReadyWork<'k> {
    pub(crate) key: &'k ProvingKey,
    pub(crate) shape: Option<Arc<Shape>>,
}

impl Work for ReadyWork<'_> {
    type Prepared = ();
    /// The device the empty item went to.
    type Output = u32;

    fn items(&self) -> usize {
        1
    }

    fn ready_device(&self, slot: &DeviceSlot<'_>) -> Result<(), EngineError> {
        ready_key_on(self.key, self.shape.as_deref(), slot)
    }

    fn prepare(&self, _item: usize) -> Result<(), EngineError> {
        Ok(())
    }

    fn prove(&self, _item: usize, _: (), slot: &DeviceSlot<'_>) -> Result<u32, EngineError> {
        Ok(slot.ordinal)
    }

    fn proved_on(&self, output: &u32) -> u32 {
        *output
    }

    fn verify(&self, _item: usize, _output: &u32) -> Result<(), EngineError> {
        Ok(())
    }
}
