//! Cancelling a job (a client's Cancel, a deadline, a stop) and the
//! watch thread that cancels jobs past their deadline and forgets finished
//! jobs past their retention time.

use std::cmp::Reverse;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::result::cancelled_result;
use super::{CancelReason, JobState, Jobs};

impl Jobs {
    /// Cancels a job: a queued one leaves the queue, a running one stops
    /// (its queued items are dropped); other jobs are not touched. The
    /// state after the request, or None for an unknown job.
    pub fn cancel(&self, id: u64, reason: CancelReason) -> Option<JobState> {
        let mut g = self.inner.lock();
        let entry = g.all.get(&id).cloned()?;
        let key = (Reverse(entry.spec.priority), id);
        if g.queue.remove(&key).is_some() {
            entry.cancel(reason);
            self.finish_locked(&mut g, &entry, cancelled_result(Some(reason)));
            return Some(JobState::Cancelled);
        }
        let state = entry.snapshot().state;
        if state == JobState::Running {
            entry.cancel(reason);
        }
        Some(state)
    }

    /// Cancels running jobs past their deadline; forgets finished jobs past
    /// their retention time (checked each second).
    pub(super) fn watch_deadlines(self: Arc<Self>) {
        let mut swept = Instant::now();
        loop {
            std::thread::sleep(Duration::from_millis(20));
            if swept.elapsed() >= Duration::from_secs(1) {
                swept = Instant::now();
                self.forget_expired();
            }
            let g = self.inner.lock();
            if g.stopping {
                return;
            }
            let late: Vec<u64> = g
                .running
                .values()
                .chain(g.queue.values())
                .filter(|e| e.deadline_passed())
                .map(|e| e.id)
                .collect();
            drop(g);
            for id in late {
                self.cancel(id, CancelReason::Deadline);
            }
        }
    }
}
