//! The work an engine runs: a job is a list of items; each item is prepared
//! on the CPU (a partition: its synthesis), proved by a worker on its
//! device, and checked by the collector. Any proof family that implements
//! [`Work`] gets the engine's workers, ownership policies, depth-one
//! queues, fail-fast cancellation and collector.

use std::time::Duration;

use cuda_prover_device::{Context, DeviceMutex, Placement};

use crate::error::EngineError;

/// The device a worker owns, as its work sees it. The worker has bound its
/// thread to `ordinal` before it calls [`Work::ready_device`] or
/// [`Work::prove`].
pub struct DeviceSlot<'a> {
    pub ctx: &'a Context,
    /// The device's ordinal in its context.
    pub ordinal: u32,
    /// The worker's index among the run's workers (several per device
    /// with `workers_per_device`).
    pub worker: usize,
    /// Held over the device part: serializes the workers of one device.
    pub mutex: &'a DeviceMutex,
}

impl<'a> DeviceSlot<'a> {
    /// Where this worker's calls run: its device, under its mutex.
    pub fn placement(&self) -> Placement<'a> {
        Placement::new(self.ordinal, Some(self.mutex))
    }
}

/// A job as items the engine can schedule. `prepare`, `prove` and
/// `verify` are called from several threads at once, each item once:
/// `prepare(k)` on a CPU thread, then `prove(k, ..)` on the worker that
/// owns k's device, then `verify(k, ..)` by the collector as soon as k is
/// back (while other items are still being proved). An error from any of
/// them fails the whole job fast.
pub trait Work: Sync {
    /// An item ready for the device.
    type Prepared: Send;
    /// What a device makes of one item.
    type Output: Send;

    /// How many items the job has (at least one).
    fn items(&self) -> usize;

    /// Item `item`'s device work relative to the others' (for example its
    /// number of constraints or values). Least-loaded placement weighs a
    /// device's queue by it; round-robin ignores it. Equal by default.
    fn cost(&self, _item: usize) -> u64 {
        1
    }

    /// Readies a worker's device before its first item (key upload, cache
    /// allocation); runs while the first items are being prepared.
    fn ready_device(&self, _slot: &DeviceSlot<'_>) -> Result<(), EngineError> {
        Ok(())
    }

    /// CPU-side preparation of item `item`.
    fn prepare(&self, item: usize) -> Result<Self::Prepared, EngineError>;

    /// Device-side proving of a prepared item on the worker's device.
    fn prove(
        &self,
        item: usize,
        prepared: Self::Prepared,
        slot: &DeviceSlot<'_>,
    ) -> Result<Self::Output, EngineError>;

    /// The device that made `output`, by the output's own record: the
    /// collector checks it against the item's owner.
    fn proved_on(&self, output: &Self::Output) -> u32;

    /// The collector's check of one output (a proof verified).
    fn verify(&self, item: usize, output: &Self::Output) -> Result<(), EngineError>;
}

/// One item back from its worker.
pub struct ItemDone<O> {
    pub item: usize,
    /// The device of the worker that proved it.
    pub device: u32,
    /// Time spent in [`Work::prepare`].
    pub prepare_time: Duration,
    /// Time it waited in its device's queue.
    pub queue_wait: Duration,
    /// When its worker began and ended proving it, from the run's start.
    pub proved_from: Duration,
    pub proved_until: Duration,
    pub output: O,
}

/// A run's items in item order, every one verified, and how it went.
pub struct WorkOutput<O> {
    pub items: Vec<ItemDone<O>>,
    pub wall: Duration,
    /// Per device of the run (in the engine's device order): when its
    /// last worker was ready, from the run's start.
    pub ready: Vec<Duration>,
    /// Most prepared items held at once, and the bound on it.
    pub peak_in_flight: usize,
    pub in_flight_bound: usize,
}
