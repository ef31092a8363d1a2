//! State shared by the threads of one run: fail-fast cancellation, the
//! in-flight bound, item ownership and per-worker load.

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicUsize, Ordering};

use parking_lot::Mutex;

use crate::error::EngineError;
use crate::permits::Permits;

pub(crate) struct RunState<'a> {
    cancel: AtomicBool,
    /// Set from outside the run (a cancelled job): stops it like a failure.
    external: Option<&'a AtomicBool>,
    first_error: Mutex<Option<EngineError>>,
    in_flight: AtomicUsize,
    pub(crate) peak_in_flight: AtomicUsize,
    pub(crate) permits: Permits,
    /// The device each item was given to (-1 before it was).
    pub(crate) owner: Vec<AtomicI64>,
    /// Per worker: the cost (`Work::cost`) of its items queued or
    /// running, and its mean device time per unit of cost.
    pub(crate) outstanding: Vec<AtomicU64>,
    pub(crate) avg_device_ns: Vec<AtomicU64>,
    /// When the run started: items' timelines are offsets from here.
    pub(crate) start: std::time::Instant,
    /// Per worker: nanoseconds from the start until its device was ready
    /// (`Work::ready_device` returned).
    pub(crate) ready_ns: Vec<AtomicU64>,
}

impl<'a> RunState<'a> {
    pub(crate) fn new(
        items: usize,
        workers: usize,
        bound: usize,
        external: Option<&'a AtomicBool>,
    ) -> Self {
        Self {
            cancel: AtomicBool::new(false),
            external,
            first_error: Mutex::new(None),
            in_flight: AtomicUsize::new(0),
            peak_in_flight: AtomicUsize::new(0),
            permits: Permits::new(bound),
            owner: (0..items).map(|_| AtomicI64::new(-1)).collect(),
            outstanding: (0..workers).map(|_| AtomicU64::new(0)).collect(),
            avg_device_ns: (0..workers).map(|_| AtomicU64::new(0)).collect(),
            start: std::time::Instant::now(),
            ready_ns: (0..workers).map(|_| AtomicU64::new(0)).collect(),
        }
    }

    /// Records the first error and cancels the run.
    pub(crate) fn fail(&self, e: EngineError) {
        let mut slot = self.first_error.lock();
        if slot.is_none() {
            *slot = Some(e);
        }
        self.cancel.store(true, Ordering::SeqCst);
    }

    pub(crate) fn take_error(&self) -> Option<EngineError> {
        self.first_error.lock().take()
    }

    pub(crate) fn cancelled(&self) -> bool {
        if self.cancel.load(Ordering::SeqCst) {
            return true;
        }
        if self.external.is_some_and(|c| c.load(Ordering::SeqCst)) {
            self.fail(EngineError::Cancelled);
            return true;
        }
        false
    }

    pub(crate) fn enter(&self) {
        let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        self.peak_in_flight.fetch_max(now, Ordering::SeqCst);
    }

    pub(crate) fn leave(&self) {
        self.in_flight.fetch_sub(1, Ordering::SeqCst);
        self.permits.release();
    }

    /// Least-loaded choice for an item of cost `cost`: the worker that
    /// would finish it first, estimated from the cost of its outstanding
    /// items and its mean device time per unit of cost.
    pub(crate) fn least_loaded(&self, cost: u64) -> usize {
        let known: Vec<u64> = self
            .avg_device_ns
            .iter()
            .map(|a| a.load(Ordering::SeqCst))
            .filter(|&a| a > 0)
            .collect();
        let fallback = if known.is_empty() {
            1
        } else {
            known.iter().sum::<u64>() / known.len() as u64
        };
        (0..self.outstanding.len())
            .min_by_key(|&i| {
                let avg = match self.avg_device_ns[i].load(Ordering::SeqCst) {
                    0 => fallback,
                    a => a,
                };
                (self.outstanding[i].load(Ordering::SeqCst) as u128 + cost as u128) * avg as u128
            })
            .unwrap_or(0)
    }
}
