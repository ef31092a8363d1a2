//! Taking back the jobs of a journal after a restart (`restore`): open
//! ones queued again, finished ones kept for await until their retention
//! time has passed, and records dropped from the journal (`drop_record`).

use std::cmp::Reverse;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use cuda_prover_pipeline::circuits::Kind;
use cuda_prover_pipeline::SynthesisMode;

use crate::errors::ServiceError;
use crate::proto::ErrorCode;

use super::result::{failed, ms, unix_ms};
use super::{JobResult, JobSpec, JobState, Jobs, Origin, Timings, Work};

impl Jobs {
    /// Takes back the jobs of a journal after a restart: a job that was
    /// queued or running is queued again under its id (`rebuild` checks its
    /// request again; one that no longer passes fails with the reason), a
    /// finished one keeps its result for await until its retention time
    /// has passed (one past it is dropped from the journal now). No
    /// sequence number below `next_seq` is issued again. A record keeps the
    /// id instance it was written under (`journal_instance` for records
    /// that name none), which may be another than this run's: the run after
    /// a damaged journal gives new jobs a new instance. Call before
    /// submitting.
    pub fn restore(
        &self,
        records: Vec<crate::journal::Record>,
        journal_instance: u64,
        next_seq: u64,
        rebuild: impl Fn(crate::proto::SubmitRequest) -> Result<JobSpec, ServiceError>,
    ) {
        let mut records = records;
        records.sort_by_key(|r| r.seq);
        self.next_id.fetch_max(next_seq, Ordering::SeqCst);
        let now = unix_ms();
        let mut g = self.inner.lock();
        for r in records {
            self.next_id.fetch_max(r.seq + 1, Ordering::SeqCst);
            if !r.state.is_empty()
                && r.finished_ms != 0
                && now.saturating_sub(r.finished_ms) >= ms(self.retention)
            {
                self.drop_record(r.seq, "its retention time passed while the daemon was down");
                continue;
            }
            let (api, request_id) = match crate::requests::Api::of_number(r.request_api) {
                Some(api) => (api, r.request_id.clone()),
                None => {
                    log::warn!(
                        "job {} of the journal: its request id is of an API this build does not \
                         know ({}); it names no job here",
                        r.seq,
                        r.request_api
                    );
                    (Default::default(), String::new())
                }
            };
            let origin = Origin {
                request: r.request.clone(),
                request_id,
                api,
                digest: r.digest,
            };
            let open = r.state.is_empty();
            let rebuilt = match (&r.request, open) {
                (Some(req), true) => Some(rebuild(req.clone())),
                _ => None,
            };
            let spec = match &rebuilt {
                Some(Ok(spec)) => JobSpec {
                    origin: origin.clone(),
                    ..spec.clone()
                },
                _ => JobSpec {
                    work: Work::BuiltIn,
                    origin,
                    name: format!("restored-{}", r.seq),
                    kind: Kind::Chain,
                    log_constraints: 0,
                    partitions: r.partitions,
                    seed: None,
                    synthesis: SynthesisMode::Auto,
                    priority: cuda_prover_engine::gate::PRIORITY_DEFAULT,
                    devices: Vec::new(),
                    params_dir: PathBuf::new(),
                    deadline: None,
                },
            };
            let instance = if r.instance != 0 {
                r.instance
            } else {
                journal_instance
            };
            let entry = self.new_entry(instance, r.seq, spec);
            g.all.insert(r.seq, entry.clone());
            if let Some(Ok(_)) = rebuilt {
                log::info!("job {} queued again from the journal", entry.wire_id);
                g.queue
                    .insert((Reverse(entry.spec.priority), r.seq), entry.clone());
                continue;
            }
            let result = match rebuilt {
                Some(Err(e)) => JobResult {
                    error: format!("the job could not run again after the daemon restarted: {e}"),
                    ..failed(e)
                },
                _ => JobResult {
                    state: match r.state.as_str() {
                        "done" => JobState::Done,
                        "cancelled" => JobState::Cancelled,
                        _ => JobState::Failed,
                    },
                    verified: r.verified,
                    proofs: r.proofs.clone(),
                    error: if r.state.is_empty() {
                        "the journal holds no request for this job".into()
                    } else {
                        r.error.clone()
                    },
                    code: if r.state.is_empty() {
                        ErrorCode::Internal
                    } else {
                        ErrorCode::try_from(r.error_code).unwrap_or(ErrorCode::Internal)
                    },
                    report_json: String::new(),
                    timings: Timings {
                        queue_wait_ms: r.timings.first().copied().unwrap_or(0),
                        srs_load_ms: r.timings.get(1).copied().unwrap_or(0),
                        synthesis_ms: r.timings.get(2).copied().unwrap_or(0),
                        gpu_compute_ms: r.timings.get(3).copied().unwrap_or(0),
                        total_ms: r.timings.get(4).copied().unwrap_or(0),
                    },
                },
            };
            let state = result.state;
            entry.tx.send_modify(|s| {
                s.state = state;
                s.result = Some(Arc::new(result));
            });
            // A record of an older journal, without its end time, is kept
            // for the retention time from now.
            let ended = if r.finished_ms != 0 {
                r.finished_ms
            } else {
                now
            };
            entry.finished_ms.store(ended, Ordering::Relaxed);
            g.finished.push_back(r.seq);
        }
        drop(g);
        self.work.notify_all();
    }

    /// Removes a job's record from the journal, saying why.
    fn drop_record(&self, seq: u64, why: &str) {
        if let Some(j) = &self.journal {
            match j.remove(seq) {
                Ok(()) => log::info!(
                    "dropped job {seq} from the journal {}: {why}",
                    j.path().display()
                ),
                Err(e) => log::error!("{e}"),
            }
        }
    }
}
