//! A cuzk job as clients reach and see it: found by the job id a request
//! names (`job`), its place in the queue (`queue_position`), its result
//! awaited (`result`) and the AwaitProofResponse made of it (`response`).

use std::sync::Arc;

use tonic::Status;

use crate::cuzk_proto::{self as pb, await_proof_response::Status as AwaitStatus};
use crate::job_id::JobId;
use crate::jobs::{JobEntry, JobResult, JobState};
use crate::server::shown_id;

use super::Cuzk;

impl Cuzk {
    /// The job a cuzk job id names: one of the daemon's, or one a request id
    /// still remembers.
    pub(super) fn job(&self, id: &str) -> Result<Arc<JobEntry>, Status> {
        let wire: JobId = id.parse().map_err(|e| {
            Status::invalid_argument(format!("job id '{}' is not a job id ({e})", shown_id(id)))
        })?;
        let jobs = self.service.jobs();
        if let Some(e) = jobs.get_wire(&wire) {
            return Ok(e);
        }
        self.service.requests().find(jobs, &wire).ok_or_else(|| {
            Status::not_found(format!("no job {} (unknown, or forgotten)", shown_id(id)))
        })
    }

    /// Jobs ahead of a queued job (0 once it runs or ended).
    pub(super) fn queue_position(&self, e: &Arc<JobEntry>) -> u32 {
        let (queued, _) = self.service.jobs().list();
        queued.iter().position(|q| Arc::ptr_eq(q, e)).unwrap_or(0) as u32
    }
}

/// Waits for the job's result.
pub(super) async fn result(entry: &JobEntry) -> Result<Arc<JobResult>, Status> {
    let mut watch = entry.subscribe();
    loop {
        let now = watch.borrow_and_update().result.clone();
        if let Some(r) = now {
            return Ok(r);
        }
        if watch.changed().await.is_err() {
            return Err(Status::unavailable(format!(
                "job {} ended without a result (is the daemon stopping?)",
                entry.wire_id
            )));
        }
    }
}

pub(super) fn response(entry: &JobEntry, r: &JobResult) -> pb::AwaitProofResponse {
    let (status, proof, error) = match r.state {
        JobState::Done if r.verified && r.proofs.len() == 1 => {
            (AwaitStatus::Completed, r.proofs.concat(), String::new())
        }
        JobState::Done => (
            AwaitStatus::Failed,
            Vec::new(),
            "the job ended without one verified proof".to_string(),
        ),
        // Records of builds before error codes: the message says it.
        JobState::Cancelled
            if r.code == crate::proto::ErrorCode::DeadlineExceeded
                || (r.code == crate::proto::ErrorCode::Unspecified
                    && r.error.contains("deadline")) =>
        {
            (AwaitStatus::Timeout, Vec::new(), r.error.clone())
        }
        JobState::Cancelled => (AwaitStatus::Cancelled, Vec::new(), r.error.clone()),
        _ => (AwaitStatus::Failed, Vec::new(), r.error.clone()),
    };
    let t = r.timings;
    pb::AwaitProofResponse {
        job_id: entry.wire_id.to_string(),
        status: status as i32,
        proof,
        error_message: error,
        queue_wait_ms: t.queue_wait_ms,
        srs_load_ms: t.srs_load_ms,
        synthesis_ms: t.synthesis_ms,
        gpu_compute_ms: t.gpu_compute_ms,
        total_ms: t.total_ms,
    }
}
