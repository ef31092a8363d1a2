//! A job's end and how long it is remembered: its timings, the metrics,
//! the journal's record of its end, the snapshot awaiting clients see, the
//! `keep_finished` bound (`finish_locked`), and finished jobs forgotten
//! once their retention time has passed (`forget_expired`).

use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::result::{ms, unix_ms};
use super::{Inner, JobEntry, JobResult, JobState, Jobs};

impl Jobs {
    pub(super) fn finish_locked(&self, g: &mut Inner, entry: &JobEntry, mut result: JobResult) {
        g.running.remove(&entry.id);
        let total = entry.submitted.elapsed();
        result.timings.total_ms = ms(total);
        result.timings.queue_wait_ms = match *entry.started.lock() {
            Some(t) => ms(t.saturating_duration_since(entry.submitted)),
            None => ms(total),
        };
        match result.state {
            JobState::Done => {
                self.metrics.done.fetch_add(1, Ordering::Relaxed);
                self.metrics
                    .proofs
                    .fetch_add(result.proofs.len() as u64, Ordering::Relaxed);
            }
            JobState::Cancelled => {
                self.metrics.cancelled.fetch_add(1, Ordering::Relaxed);
            }
            _ => {
                self.metrics.failed.fetch_add(1, Ordering::Relaxed);
            }
        }
        self.metrics
            .observe_latency(entry.submitted.elapsed().as_secs_f64());
        let ended = unix_ms().max(1);
        entry.finished_ms.store(ended, Ordering::Relaxed);
        if let (Some(j), Some(_)) = (&self.journal, &entry.spec.origin.request) {
            let t = result.timings;
            let record = crate::journal::Record {
                seq: entry.id,
                instance: entry.wire_id.instance,
                request: None,
                request_id: entry.spec.origin.request_id.clone(),
                request_api: entry.spec.origin.api.number(),
                digest: entry.spec.origin.digest,
                state: result.state.name().into(),
                verified: result.verified,
                proofs: result.proofs.clone(),
                error: result.error.clone(),
                error_code: result.code as i32,
                timings: vec![
                    t.queue_wait_ms,
                    t.srs_load_ms,
                    t.synthesis_ms,
                    t.gpu_compute_ms,
                    t.total_ms,
                ],
                partitions: entry.spec.partitions,
                finished_ms: ended,
            };
            if let Err(e) = j.put(&record) {
                log::error!("job {}: {e}", entry.wire_id);
            }
        }
        let state = result.state;
        entry.tx.send_modify(|s| {
            s.state = state;
            s.result = Some(Arc::new(result));
        });
        g.finished.push_back(entry.id);
        while g.finished.len() > self.keep_finished {
            if let Some(old) = g.finished.pop_front() {
                g.all.remove(&old);
                if let Some(j) = &self.journal {
                    if let Err(e) = j.remove(old) {
                        log::error!("{e}");
                    }
                }
            }
        }
        if g.queue.is_empty() && g.running.is_empty() {
            self.idle.notify_all();
        }
    }

    /// Forgets the finished jobs whose retention time has passed, and drops
    /// them from the journal; how many.
    pub fn forget_expired(&self) -> usize {
        let now = unix_ms();
        let mut g = self.inner.lock();
        let mut gone = Vec::new();
        let all = &g.all;
        let keep: VecDeque<u64> = g
            .finished
            .iter()
            .copied()
            .filter(|id| match all.get(id) {
                Some(e) if e.expired(now, self.retention) => {
                    gone.push(*id);
                    false
                }
                Some(_) => true,
                None => false,
            })
            .collect();
        g.finished = keep;
        for id in &gone {
            g.all.remove(id);
        }
        drop(g);
        for id in &gone {
            if let Some(j) = &self.journal {
                if let Err(e) = j.remove(*id) {
                    log::error!("{e}");
                }
            }
        }
        if !gone.is_empty() {
            log::info!(
                "forgot {} finished jobs past the retention time of {:?}",
                gone.len(),
                self.retention
            );
        }
        gone.len()
    }
}
