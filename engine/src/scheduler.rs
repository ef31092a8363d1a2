//! One run of a [`Work`] on an engine's devices: a worker per device slot
//! with a depth-one queue, preparation threads that hand each item to the
//! device the ownership policy picks, at most 2 x workers items in flight,
//! fail-fast on the first error, and the collector: each item checked as
//! it arrives, all of them put back in order at the end.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crossbeam_channel::{bounded, unbounded, Sender};

use crate::config::Policy;
use crate::engine::Engine;
use crate::error::EngineError;
use crate::gate::Ticket;
use crate::state::RunState;
use crate::work::{DeviceSlot, ItemDone, Work, WorkOutput};
use crate::worker::{worker, Queued};

/// What the progress callback sees after each item.
#[derive(Debug, Clone)]
pub struct Progress {
    /// The item just done (a partition, a shard).
    pub item: usize,
    pub device: u32,
    pub done: usize,
    pub total: usize,
    /// Items done per device, in the engine's device order.
    pub done_per_device: Vec<usize>,
}

/// How a run is driven from outside: a cancel flag (set it to stop the run;
/// its queued items are dropped and it ends with [`EngineError::Cancelled`])
/// and a place among other runs by priority (see [`crate::PriorityGate`]).
#[derive(Default, Clone, Copy)]
pub struct RunControl<'a> {
    pub cancel: Option<&'a AtomicBool>,
    pub ticket: Option<&'a Ticket>,
}

pub(crate) fn run_work<W, P>(
    engine: &Engine,
    work: &W,
    control: RunControl<'_>,
    mut progress: P,
) -> Result<WorkOutput<W::Output>, EngineError>
where
    W: Work,
    P: FnMut(&Progress),
{
    let devices = engine.devices();
    let config = engine.config();
    let n = devices.len();
    let total = work.items();
    if total == 0 {
        return Err(EngineError::Setup("the run has no items".into()));
    }
    // Worker w serves device w % n: round-robin over workers is
    // round-robin over devices.
    let workers = n * config.workers_per_device.max(1);
    let worker_device: Vec<usize> = (0..workers).map(|w| w % n).collect();
    // In flight: one running and one queued a worker, plus the items
    // prepared ahead beside them, each with a preparer of its own (so that
    // preparations that use every core overlap at their ends instead of
    // leaving cores idle while the last pieces of one finish).
    let bound = 2 * workers + config.prepare_ahead;
    let state = RunState::new(total, workers, bound, control.cancel);
    let next = AtomicUsize::new(0);
    let prep_threads = if config.synthesis_threads == 0 {
        workers
    } else {
        config.synthesis_threads
    } + config.prepare_ahead;
    let policy = config.policy;
    let ordinals: Vec<u32> = worker_device.iter().map(|&i| devices[i].ordinal).collect();

    let start = state.start;
    let mut results: Vec<Option<ItemDone<W::Output>>> = (0..total).map(|_| None).collect();
    let mut duplicates = Vec::new();
    let mut done_per_device = vec![0usize; n];
    let mut done = 0usize;
    std::thread::scope(|s| {
        let (res_tx, res_rx) = unbounded::<ItemDone<W::Output>>();
        let mut queue_txs = Vec::with_capacity(workers);
        for (w, &i) in worker_device.iter().enumerate() {
            let (qtx, qrx) = bounded::<Queued<W::Prepared>>(1);
            queue_txs.push(qtx);
            let res_tx = res_tx.clone();
            let state = &state;
            let slot = DeviceSlot {
                ctx: engine.context(),
                ordinal: devices[i].ordinal,
                worker: w,
                mutex: engine.mutex(i),
            };
            let cpus = config.worker_cpus.as_ref().map(|v| v[i].clone());
            s.spawn(move || worker(work, slot, cpus, qrx, res_tx, state));
        }
        drop(res_tx);
        for _ in 0..prep_threads {
            let queue_txs = queue_txs.clone();
            let (state, next, ordinals) = (&state, &next, &ordinals);
            s.spawn(move || preparer(work, state, next, &queue_txs, ordinals, policy, control));
        }
        drop(queue_txs);

        for d in res_rx.iter() {
            let k = d.item;
            // Verified here, while the other items are proved; a failure
            // stops the run.
            if results[k].is_none() && !state.cancelled() {
                if let Err(e) = crate::collector::check_item(work, &d, &state) {
                    state.fail(e);
                    continue;
                }
            }
            let idx = devices
                .iter()
                .position(|x| x.ordinal == d.device)
                .unwrap_or(0);
            done += 1;
            done_per_device[idx] += 1;
            progress(&Progress {
                item: k,
                device: d.device,
                done,
                total,
                done_per_device: done_per_device.clone(),
            });
            if results[k].is_some() {
                duplicates.push(k);
            } else {
                results[k] = Some(d);
            }
        }
    });
    let wall = start.elapsed();
    if let Some(t) = control.ticket {
        t.finish();
    }
    if let Some(e) = state.take_error() {
        return Err(e);
    }
    let items = crate::collector::collect(results, &duplicates)?;
    let mut ready = vec![Duration::ZERO; n];
    for (w, &i) in worker_device.iter().enumerate() {
        let t = Duration::from_nanos(state.ready_ns[w].load(Ordering::SeqCst));
        ready[i] = ready[i].max(t);
    }
    Ok(WorkOutput {
        items,
        wall,
        ready,
        peak_in_flight: state.peak_in_flight.load(Ordering::SeqCst),
        in_flight_bound: bound,
    })
}

/// Preparation thread: takes the next item (when the run's turn comes),
/// prepares it, hands it to its device's depth-one queue.
fn preparer<W: Work>(
    work: &W,
    state: &RunState<'_>,
    next: &AtomicUsize,
    queues: &[Sender<Queued<W::Prepared>>],
    ordinals: &[u32],
    policy: Policy,
    control: RunControl<'_>,
) {
    let n = queues.len();
    let total = state.owner.len();
    loop {
        if state.cancelled() {
            return;
        }
        state.permits.acquire();
        if let Some(t) = control.ticket {
            t.wait_turn(&|| state.cancelled());
        }
        let k = next.fetch_add(1, Ordering::SeqCst);
        if k >= total || state.cancelled() {
            state.permits.release();
            return;
        }
        if let Some(t) = control.ticket {
            t.took(total - k - 1);
        }
        state.enter();
        let t = Instant::now();
        let prepared = match work.prepare(k) {
            Ok(p) => p,
            Err(e) => {
                state.fail(e);
                state.leave();
                return;
            }
        };
        let cost = work.cost(k).max(1);
        let item = Queued {
            item: k,
            prepared,
            prepare_time: t.elapsed(),
            enqueued: Instant::now(),
            cost,
        };
        let dev = match policy {
            Policy::RoundRobin => k % n,
            Policy::LeastLoaded => state.least_loaded(cost),
        };
        state.owner[k].store(ordinals[dev] as i64, Ordering::SeqCst);
        state.outstanding[dev].fetch_add(cost, Ordering::SeqCst);
        if queues[dev].send(item).is_err() {
            state.outstanding[dev].fetch_sub(cost, Ordering::SeqCst);
            state.fail(EngineError::WorkerDied {
                device: ordinals[dev],
                message: "its queue closed".into(),
            });
            state.leave();
            return;
        }
    }
}
