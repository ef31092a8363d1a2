//! A job as clients reach and see it: found by the id a request names
//! (`job`, with `shown_id` for the id in error messages), its `JobStatus`
//! for Status, and the stream of its progress and result for Await and
//! Prove (`events`).

use std::pin::Pin;
use std::sync::Arc;

use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tokio_stream::Stream;
use tonic::Status;

use crate::errors::{job_state, ServiceError};
use crate::job_id::JobId;
use crate::jobs::JobEntry;
use crate::proto;

use super::Service;

pub(super) type EventStream = Pin<Box<dyn Stream<Item = Result<proto::JobEvent, Status>> + Send>>;

impl Service {
    pub(super) fn job(&self, id: &str) -> Result<Arc<JobEntry>, Status> {
        let wire: JobId = id.parse().map_err(|e| {
            ServiceError::InvalidRequest(format!("job id '{}' is not a number ({e})", shown_id(id)))
        })?;
        Ok(self.jobs.get_wire(&wire).ok_or_else(|| {
            ServiceError::NotFound(format!("no job {} (unknown, or forgotten)", shown_id(id)))
        })?)
    }
}

/// A client's job id as an error message shows it: in full up to 64 bytes,
/// else its first 64 bytes and its length (a reply that echoed a 100 KB id
/// would be dropped by the client).
pub fn shown_id(id: &str) -> String {
    const SHOWN: usize = 64;
    if id.len() <= SHOWN {
        return id.to_string();
    }
    let mut end = SHOWN;
    while !id.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}... ({} bytes)", &id[..end], id.len())
}

/// Streams a job's progress, then its result.
pub(super) fn events(entry: Arc<JobEntry>) -> EventStream {
    let (tx, rx) = mpsc::channel(16);
    let mut watch = entry.subscribe();
    let id = entry.wire_id.to_string();
    tokio::spawn(async move {
        let mut last = None;
        loop {
            let snap = watch.borrow_and_update().clone();
            if let Some(result) = &snap.result {
                let r = proto::JobResult {
                    state: result.state.name().into(),
                    verified: result.verified,
                    proofs: result.proofs.clone(),
                    error: result.error.clone(),
                    report_json: result.report_json.clone(),
                    job_state: job_state(result.state) as i32,
                    error_code: result.code as i32,
                };
                let _ = tx
                    .send(Ok(proto::JobEvent {
                        job_id: id.clone(),
                        event: Some(proto::job_event::Event::Result(r)),
                    }))
                    .await;
                return;
            }
            let now = (snap.state, snap.done);
            if last != Some(now) {
                last = Some(now);
                let p = proto::Progress {
                    state: snap.state.name().into(),
                    done: snap.done,
                    total: snap.total,
                    job_state: job_state(snap.state) as i32,
                };
                let ev = proto::JobEvent {
                    job_id: id.clone(),
                    event: Some(proto::job_event::Event::Progress(p)),
                };
                if tx.send(Ok(ev)).await.is_err() {
                    return;
                }
            }
            if watch.changed().await.is_err() {
                return;
            }
        }
    });
    Box::pin(ReceiverStream::new(rx))
}

pub(super) fn job_status(e: &JobEntry) -> proto::JobStatus {
    let s = e.snapshot();
    proto::JobStatus {
        job_id: e.wire_id.to_string(),
        name: e.spec.name.clone(),
        priority: e.spec.priority,
        state: s.state.name().into(),
        done: s.done,
        total: s.total,
        age_s: e.submitted.elapsed().as_secs_f64(),
        job_state: job_state(s.state) as i32,
    }
}
