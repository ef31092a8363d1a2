//! A job in the table (`JobEntry`): its ids, spec and times, its cancel
//! flag and reason, the `Snapshot` awaiting clients watch; making one, and
//! finding the jobs the table remembers (`all`, `get`, `get_wire`).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use tokio::sync::watch;

use crate::job_id::JobId;

use super::result::ms;
use super::{CancelReason, JobResult, JobSpec, JobState, Jobs};

/// What awaiting clients see.
#[derive(Debug, Clone)]
pub struct Snapshot {
    pub state: JobState,
    pub done: u32,
    pub total: u32,
    pub result: Option<Arc<JobResult>>,
}

pub struct JobEntry {
    /// The run's sequence number (orders jobs of one priority).
    pub id: u64,
    /// The id clients see: this daemon run's instance and `id`.
    pub wire_id: JobId,
    pub spec: JobSpec,
    pub submitted: Instant,
    /// When a runner took the job.
    pub(super) started: Mutex<Option<Instant>>,
    pub(super) cancel: Arc<AtomicBool>,
    pub(super) cancel_reason: Mutex<Option<CancelReason>>,
    pub(super) tx: watch::Sender<Snapshot>,
    /// When the job ended, in ms since the Unix epoch (0 while it runs).
    pub(super) finished_ms: AtomicU64,
}

impl JobEntry {
    pub fn snapshot(&self) -> Snapshot {
        self.tx.borrow().clone()
    }

    pub fn subscribe(&self) -> watch::Receiver<Snapshot> {
        self.tx.subscribe()
    }

    pub(super) fn cancel(&self, reason: CancelReason) {
        let mut r = self.cancel_reason.lock();
        if r.is_none() {
            *r = Some(reason);
        }
        self.cancel.store(true, Ordering::SeqCst);
    }

    pub(super) fn cancel_reason(&self) -> Option<CancelReason> {
        *self.cancel_reason.lock()
    }

    pub(super) fn deadline_passed(&self) -> bool {
        self.spec
            .deadline
            .is_some_and(|d| self.submitted.elapsed() >= d)
    }

    /// Whether the job ended more than `retention` before `now_ms`.
    pub(super) fn expired(&self, now_ms: u64, retention: Duration) -> bool {
        let t = self.finished_ms.load(Ordering::Relaxed);
        t != 0 && now_ms.saturating_sub(t) >= ms(retention)
    }
}

impl Jobs {
    pub(super) fn new_entry(&self, instance: u64, id: u64, spec: JobSpec) -> Arc<JobEntry> {
        let (tx, _) = watch::channel(Snapshot {
            state: JobState::Queued,
            done: 0,
            total: spec.partitions,
            result: None,
        });
        Arc::new(JobEntry {
            id,
            wire_id: JobId { instance, seq: id },
            spec,
            submitted: Instant::now(),
            started: Mutex::new(None),
            cancel: Arc::new(AtomicBool::new(false)),
            cancel_reason: Mutex::new(None),
            tx,
            finished_ms: AtomicU64::new(0),
        })
    }

    /// Every job the daemon remembers (queued, running, finished).
    pub fn all(&self) -> Vec<Arc<JobEntry>> {
        self.inner.lock().all.values().cloned().collect()
    }

    pub fn get(&self, id: u64) -> Option<Arc<JobEntry>> {
        self.inner.lock().all.get(&id).cloned()
    }

    /// The job a client's id names (one of this run, or one read back from
    /// the journal under the id it had).
    pub fn get_wire(&self, id: &JobId) -> Option<Arc<JobEntry>> {
        self.get(id.seq).filter(|e| e.wire_id == *id)
    }
}
