//! A worker owns one device: it binds its thread there, readies the device
//! for the work, proves what its depth-one queue holds and hands the
//! outputs to the collector. After a failure it drains its queue without
//! proving.

use std::panic::AssertUnwindSafe;
use std::sync::atomic::Ordering;
use std::time::Instant;

use crossbeam_channel::{Receiver, Sender};
use cuda_prover_device::panic_message;

use crate::cpus::pin_current_thread;
use crate::error::EngineError;
use crate::state::RunState;
use crate::work::{DeviceSlot, ItemDone, Work};

/// A prepared item waiting for its worker.
pub(crate) struct Queued<P> {
    pub(crate) item: usize,
    pub(crate) prepared: P,
    pub(crate) prepare_time: std::time::Duration,
    pub(crate) enqueued: Instant,
    /// Its `Work::cost` (at least 1), as the preparer counted it in the
    /// worker's outstanding cost.
    pub(crate) cost: u64,
}

pub(crate) fn worker<W: Work>(
    work: &W,
    slot: DeviceSlot<'_>,
    cpus: Option<Vec<usize>>,
    queue: Receiver<Queued<W::Prepared>>,
    results: Sender<ItemDone<W::Output>>,
    state: &RunState<'_>,
) {
    let ordinal = slot.ordinal;
    let index = slot.worker;
    let setup = cpus
        .as_deref()
        .map(pin_current_thread)
        .unwrap_or(Ok(()))
        .and_then(|_| {
            slot.ctx
                .select_gpu(Some(ordinal))
                .map_err(|e| e.to_string())
        });
    if let Err(message) = setup {
        state.fail(EngineError::WorkerDied {
            device: ordinal,
            message,
        });
    } else {
        // Key upload and cache allocation overlap the first preparations.
        match std::panic::catch_unwind(AssertUnwindSafe(|| work.ready_device(&slot))) {
            Ok(Ok(())) => {}
            Ok(Err(e)) => state.fail(e),
            Err(panic) => state.fail(EngineError::WorkerDied {
                device: ordinal,
                message: panic_message(&*panic),
            }),
        }
        state.ready_ns[index].store(state.start.elapsed().as_nanos() as u64, Ordering::SeqCst);
    }
    let mut done_cost = 0u64;
    let mut total_ns = 0u64;
    for q in queue.iter() {
        let cost = q.cost;
        if state.cancelled() {
            state.outstanding[index].fetch_sub(cost, Ordering::SeqCst);
            state.leave();
            continue;
        }
        let k = q.item;
        let queue_wait = q.enqueued.elapsed();
        let proved_from = state.start.elapsed();
        let t = Instant::now();
        let outcome =
            std::panic::catch_unwind(AssertUnwindSafe(|| work.prove(k, q.prepared, &slot)));
        let elapsed = t.elapsed().as_nanos() as u64;
        let proved_until = state.start.elapsed();
        done_cost += cost;
        total_ns += elapsed;
        state.avg_device_ns[index].store((total_ns / done_cost).max(1), Ordering::SeqCst);
        state.outstanding[index].fetch_sub(cost, Ordering::SeqCst);
        match outcome {
            Ok(Ok(output)) => {
                let _ = results.send(ItemDone {
                    item: k,
                    device: ordinal,
                    prepare_time: q.prepare_time,
                    queue_wait,
                    proved_from,
                    proved_until,
                    output,
                });
            }
            Ok(Err(e)) => state.fail(e),
            Err(panic) => state.fail(EngineError::WorkerDied {
                device: ordinal,
                message: panic_message(&*panic),
            }),
        }
        state.leave();
    }
    let _ = slot.ctx.select_gpu(None);
}
