//! Taking jobs in and stopping: a submission queued by priority and
//! journaled before it is accepted (`submit`, `SubmitError`), the queued
//! and running jobs (`list`), draining, and a stop that cancels every job
//! (`stop_now`).

use std::cmp::Reverse;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::{CancelReason, JobEntry, JobSpec, Jobs};

/// Why a submission was refused.
#[derive(Debug, thiserror::Error)]
pub enum SubmitError {
    #[error("busy: {0} jobs queued or running (the limit); retry later")]
    Busy(usize),
    #[error("draining: the daemon takes no new jobs")]
    Draining,
    /// The job could not be journaled, so it was not accepted.
    #[error("{0}")]
    Journal(String),
}

impl Jobs {
    pub fn submit(&self, spec: JobSpec) -> Result<Arc<JobEntry>, SubmitError> {
        let mut g = self.inner.lock();
        if g.draining || g.stopping {
            return Err(SubmitError::Draining);
        }
        let open = g.queue.len() + g.running.len();
        if open >= self.max_queue {
            self.metrics.rejected_busy.fetch_add(1, Ordering::Relaxed);
            return Err(SubmitError::Busy(open));
        }
        let id = self.next_id.fetch_add(1, Ordering::SeqCst);
        if let (Some(j), Some(request)) = (&self.journal, &spec.origin.request) {
            let record = crate::journal::Record {
                seq: id,
                instance: self.instance,
                request: Some(request.clone()),
                request_id: spec.origin.request_id.clone(),
                request_api: spec.origin.api.number(),
                digest: spec.origin.digest,
                partitions: spec.partitions,
                ..Default::default()
            };
            j.put(&record).map_err(SubmitError::Journal)?;
        }
        let entry = self.new_entry(self.instance, id, spec);
        g.queue
            .insert((Reverse(entry.spec.priority), id), entry.clone());
        g.all.insert(id, entry.clone());
        drop(g);
        self.metrics.submitted.fetch_add(1, Ordering::Relaxed);
        self.work.notify_one();
        Ok(entry)
    }

    /// (queued most urgent first, running)
    pub fn list(&self) -> (Vec<Arc<JobEntry>>, Vec<Arc<JobEntry>>) {
        let g = self.inner.lock();
        let mut running: Vec<_> = g.running.values().cloned().collect();
        running.sort_by_key(|e| e.id);
        (g.queue.values().cloned().collect(), running)
    }

    pub fn draining(&self) -> bool {
        self.inner.lock().draining
    }

    /// Takes no new jobs; blocks until the queue is empty and no job runs.
    pub fn drain(&self) {
        let mut g = self.inner.lock();
        g.draining = true;
        while !(g.queue.is_empty() && g.running.is_empty()) {
            self.idle.wait(&mut g);
        }
    }

    /// Cancels every queued and running job and stops the runners.
    pub fn stop_now(&self) {
        let ids: Vec<u64> = {
            let mut g = self.inner.lock();
            g.draining = true;
            g.queue
                .keys()
                .map(|k| k.1)
                .chain(g.running.keys().copied())
                .collect()
        };
        for id in ids {
            self.cancel(id, CancelReason::Shutdown);
        }
        self.drain();
        self.inner.lock().stopping = true;
        self.work.notify_all();
    }
}
