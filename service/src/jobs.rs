//! The daemon's jobs: a bounded queue ordered by priority (then by
//! arrival: fairness within a priority), `max_running` runner threads that
//! run jobs on the engine concurrently (the engine's priority gate orders
//! their items on the devices), cancellation, deadlines and each job's
//! state for await and status.

use std::cmp::Reverse;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use cuda_prover_engine::gate::Priority;
use cuda_prover_engine::{Engine, EngineError, RunControl};
use cuda_prover_groth16::Groth16Engine;
use cuda_prover_groth16::{BlindingSource, Job};
use cuda_prover_pipeline::circuits::{BuiltIn, Kind};
use cuda_prover_pipeline::SynthesisMode;
use parking_lot::{Condvar, Mutex};
use tokio::sync::watch;

use crate::errors::{error_code, ServiceError};
use crate::job_id::JobId;
use crate::keys::Keys;
use crate::metrics::Metrics;
use crate::proto::ErrorCode;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobState {
    Queued,
    Running,
    Done,
    Failed,
    Cancelled,
}

impl JobState {
    pub fn name(self) -> &'static str {
        match self {
            JobState::Queued => "queued",
            JobState::Running => "running",
            JobState::Done => "done",
            JobState::Failed => "failed",
            JobState::Cancelled => "cancelled",
        }
    }

    pub fn finished(self) -> bool {
        matches!(
            self,
            JobState::Done | JobState::Failed | JobState::Cancelled
        )
    }
}

/// Why a job was cancelled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CancelReason {
    /// A client's Cancel.
    Request,
    /// Its deadline passed while it ran or waited.
    Deadline,
    /// Its deadline had passed when a runner took it.
    DeadlineBeforeStart,
    /// The daemon stopped without draining.
    Shutdown,
}

impl CancelReason {
    /// The error a job cancelled so ends with.
    pub fn error(self) -> ServiceError {
        match self {
            CancelReason::Request => ServiceError::Cancelled("cancelled by request".into()),
            CancelReason::Deadline => ServiceError::DeadlineExceeded("deadline exceeded".into()),
            CancelReason::DeadlineBeforeStart => {
                ServiceError::DeadlineExceeded("deadline exceeded before the job started".into())
            }
            CancelReason::Shutdown => ServiceError::Cancelled("the daemon is shutting down".into()),
        }
    }
}

/// What a job proves.
#[derive(Debug, Clone)]
pub enum Work {
    /// The built-in circuit of the spec's kind, size and partitions.
    BuiltIn,
    /// Filecoin commit phase 2 (the spec's kind and size are unused).
    #[cfg(feature = "filecoin")]
    FilecoinC2(Arc<crate::filecoin::C2Spec>),
    /// Filecoin Winning or Window PoSt (whole, or one partition).
    #[cfg(feature = "filecoin")]
    FilecoinPost(Arc<crate::filecoin::PostSpec>),
    /// Filecoin SnapDeals.
    #[cfg(feature = "filecoin")]
    FilecoinSnap(Arc<crate::filecoin::SnapSpec>),
}

/// Where a job came from, for the journal and for idempotency.
#[derive(Debug, Clone, Default)]
pub struct Origin {
    /// The request as the cuda_prover.v1 API takes it (cuzk.v1 requests
    /// are written in that form too); journaled when set.
    pub request: Option<crate::proto::SubmitRequest>,
    /// The client's idempotency key (the `request_id` of either API), the
    /// API it was given on, and a digest of the request's inputs.
    pub request_id: String,
    pub api: crate::requests::Api,
    pub digest: u64,
}

/// A job, checked.
#[derive(Debug, Clone)]
pub struct JobSpec {
    pub work: Work,
    pub origin: Origin,
    pub name: String,
    pub kind: Kind,
    pub log_constraints: u32,
    pub partitions: u32,
    pub seed: Option<u64>,
    pub synthesis: SynthesisMode,
    pub priority: Priority,
    /// Empty: every device of the daemon.
    pub devices: Vec<u32>,
    pub params_dir: PathBuf,
    pub deadline: Option<Duration>,
}

/// How a job ended.
#[derive(Debug, Clone)]
pub struct JobResult {
    pub state: JobState,
    pub verified: bool,
    /// bellperson's encoding, in partition order.
    pub proofs: Vec<Vec<u8>>,
    /// Failed and cancelled jobs: the error's message, and its code
    /// ([`crate::errors::error_code`]); `Unspecified` for done jobs.
    pub error: String,
    pub code: ErrorCode,
    pub report_json: String,
    pub timings: Timings,
}

/// Where a job's time went, in milliseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Timings {
    /// Submission to the job's start (to its end, for a job that never
    /// started).
    pub queue_wait_ms: u64,
    /// Loading the proving key (0 when it was loaded already).
    pub srs_load_ms: u64,
    /// Circuit synthesis (full or witness-only, with the core's evaluation
    /// of a, b, c), summed over the partitions.
    pub synthesis_ms: u64,
    /// The device part, summed over the partitions.
    pub gpu_compute_ms: u64,
    /// Submission to the job's end.
    pub total_ms: u64,
}

impl Timings {
    /// Synthesis and device time of an engine job's report.
    pub fn from_report(report: &cuda_prover_groth16::JobReport) -> Self {
        let mut synthesis = 0.0;
        let mut device = 0.0;
        for p in &report.per_partition {
            synthesis += p.synthesis_ms.unwrap_or(0.0) + p.witness_ms.unwrap_or(0.0);
            synthesis += p.evaluation_ms;
            device += p.device_ms;
        }
        Self {
            synthesis_ms: synthesis.round() as u64,
            gpu_compute_ms: device.round() as u64,
            ..Self::default()
        }
    }
}

fn ms(d: Duration) -> u64 {
    d.as_millis().min(u64::MAX as u128) as u64
}

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
    started: Mutex<Option<Instant>>,
    cancel: Arc<AtomicBool>,
    cancel_reason: Mutex<Option<CancelReason>>,
    tx: watch::Sender<Snapshot>,
    /// When the job ended, in ms since the Unix epoch (0 while it runs).
    finished_ms: AtomicU64,
}

impl JobEntry {
    pub fn snapshot(&self) -> Snapshot {
        self.tx.borrow().clone()
    }

    pub fn subscribe(&self) -> watch::Receiver<Snapshot> {
        self.tx.subscribe()
    }

    fn cancel(&self, reason: CancelReason) {
        let mut r = self.cancel_reason.lock();
        if r.is_none() {
            *r = Some(reason);
        }
        self.cancel.store(true, Ordering::SeqCst);
    }

    fn cancel_reason(&self) -> Option<CancelReason> {
        *self.cancel_reason.lock()
    }

    fn deadline_passed(&self) -> bool {
        self.spec
            .deadline
            .is_some_and(|d| self.submitted.elapsed() >= d)
    }

    /// Whether the job ended more than `retention` before `now_ms`.
    fn expired(&self, now_ms: u64, retention: Duration) -> bool {
        let t = self.finished_ms.load(Ordering::Relaxed);
        t != 0 && now_ms.saturating_sub(t) >= ms(retention)
    }
}

/// Now, in ms since the Unix epoch.
fn unix_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(ms)
        .unwrap_or(0)
}

#[derive(Default)]
struct Inner {
    /// (Reverse(priority), arrival) -> job: most urgent, then oldest first.
    queue: BTreeMap<(Reverse<Priority>, u64), Arc<JobEntry>>,
    running: HashMap<u64, Arc<JobEntry>>,
    all: HashMap<u64, Arc<JobEntry>>,
    finished: VecDeque<u64>,
    draining: bool,
    stopping: bool,
}

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

pub struct Jobs {
    inner: Mutex<Inner>,
    work: Condvar,
    idle: Condvar,
    next_id: AtomicU64,
    /// This daemon run's half of every job id (`job_id`).
    instance: u64,
    engine: Arc<Engine>,
    keys: Arc<Keys>,
    #[cfg(feature = "filecoin")]
    filecoin: Option<Arc<crate::filecoin::FilecoinJobs>>,
    pub metrics: Arc<Metrics>,
    /// Partitions proved per device (engine order).
    pub device_partitions: Vec<AtomicU64>,
    max_queue: usize,
    keep_finished: usize,
    /// A finished job is forgotten (and dropped from the journal) this long
    /// after it ended.
    retention: Duration,
    journal: Option<Arc<crate::journal::Journal>>,
}

/// How many jobs the table queues, runs at once and keeps once finished, and
/// for how long it keeps them (`serve`'s `--max-queue`, `--max-running`,
/// `--keep-finished`, `--retention`).
#[derive(Clone, Copy, Debug)]
pub struct JobLimits {
    pub max_queue: usize,
    pub max_running: usize,
    pub keep_finished: usize,
    pub retention: Duration,
}

impl Jobs {
    /// Starts `limits.max_running` runners and the deadline watch.
    pub fn start(
        engine: Arc<Engine>,
        keys: Arc<Keys>,
        #[cfg(feature = "filecoin")] filecoin: Option<Arc<crate::filecoin::FilecoinJobs>>,
        metrics: Arc<Metrics>,
        limits: JobLimits,
        instance: u64,
        journal: Option<Arc<crate::journal::Journal>>,
    ) -> Arc<Self> {
        let JobLimits {
            max_queue,
            max_running,
            keep_finished,
            retention,
        } = limits;
        let device_partitions = engine.devices().iter().map(|_| AtomicU64::new(0)).collect();
        let jobs = Arc::new(Self {
            inner: Mutex::new(Inner::default()),
            work: Condvar::new(),
            idle: Condvar::new(),
            next_id: AtomicU64::new(1),
            instance,
            engine,
            keys,
            #[cfg(feature = "filecoin")]
            filecoin,
            metrics,
            device_partitions,
            max_queue,
            keep_finished,
            retention,
            journal,
        });
        for i in 0..max_running.max(1) {
            let j = jobs.clone();
            std::thread::Builder::new()
                .name(format!("job-runner-{i}"))
                .spawn(move || j.runner())
                .expect("spawn a runner");
        }
        let j = jobs.clone();
        std::thread::Builder::new()
            .name("job-deadlines".into())
            .spawn(move || j.watch_deadlines())
            .expect("spawn the deadline watch");
        jobs
    }

    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    pub fn keys(&self) -> &Keys {
        &self.keys
    }

    /// The Filecoin prover, when the daemon takes Filecoin jobs.
    #[cfg(feature = "filecoin")]
    pub fn filecoin(&self) -> Option<&crate::filecoin::FilecoinJobs> {
        self.filecoin.as_deref()
    }

    /// The Filecoin prover, shared (for work off the runtime's threads).
    #[cfg(feature = "filecoin")]
    pub fn filecoin_handle(&self) -> Option<Arc<crate::filecoin::FilecoinJobs>> {
        self.filecoin.clone()
    }

    /// Finished jobs remembered for await and status.
    pub fn keep_finished(&self) -> usize {
        self.keep_finished
    }

    /// Jobs queued or running at most.
    pub fn max_queue(&self) -> usize {
        self.max_queue
    }

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

    fn new_entry(&self, instance: u64, id: u64, spec: JobSpec) -> Arc<JobEntry> {
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

    /// Whether accepted jobs are journaled.
    pub fn journaling(&self) -> bool {
        self.journal.is_some()
    }

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

    fn finish_locked(&self, g: &mut Inner, entry: &JobEntry, mut result: JobResult) {
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

    fn runner(self: Arc<Self>) {
        loop {
            let entry = {
                let mut g = self.inner.lock();
                loop {
                    if g.stopping {
                        return;
                    }
                    if let Some((_, e)) = g.queue.pop_first() {
                        *e.started.lock() = Some(Instant::now());
                        g.running.insert(e.id, e.clone());
                        break e;
                    }
                    self.work.wait(&mut g);
                }
            };
            let result = if entry.deadline_passed() {
                cancelled_result(Some(CancelReason::DeadlineBeforeStart))
            } else {
                entry.tx.send_modify(|s| s.state = JobState::Running);
                self.run(&entry)
            };
            let mut g = self.inner.lock();
            self.finish_locked(&mut g, &entry, result);
        }
    }

    fn run(&self, entry: &JobEntry) -> JobResult {
        let spec = &entry.spec;
        match &spec.work {
            Work::BuiltIn => {}
            #[cfg(feature = "filecoin")]
            Work::FilecoinC2(c2) => {
                return self.run_filecoin(entry, |f, engine, priority, cancel| {
                    f.run_c2(engine, c2, priority, cancel)
                })
            }
            #[cfg(feature = "filecoin")]
            Work::FilecoinPost(post) => {
                return self.run_filecoin(entry, |f, engine, priority, cancel| {
                    f.run_post(engine, post, priority, cancel)
                })
            }
            #[cfg(feature = "filecoin")]
            Work::FilecoinSnap(snap) => {
                return self.run_filecoin(entry, |f, engine, priority, cancel| {
                    f.run_snap(engine, snap, priority, cancel)
                })
            }
        }
        let mut key_load = Duration::ZERO;
        let outcome = (|| {
            let t_key = Instant::now();
            let (key, _) =
                self.keys
                    .get(spec.kind, spec.log_constraints, &spec.params_dir, false)?;
            key_load = t_key.elapsed();
            let subset;
            let engine = if spec.devices.is_empty() {
                &*self.engine
            } else {
                subset = self.engine.subset(&spec.devices)?;
                &subset
            };
            let base = spec.seed.unwrap_or_else(|| {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_nanos() as u64)
                    .unwrap_or(0)
                    ^ entry.id.rotate_left(32)
            });
            let circuits = (0..spec.partitions)
                .map(|k| BuiltIn::new(spec.kind, spec.log_constraints, base.wrapping_add(k as u64)))
                .collect::<Result<Vec<_>, _>>()
                .map_err(EngineError::Setup)?;
            let job = Job {
                name: spec.name.clone(),
                partitions: circuits,
                blinding: spec
                    .seed
                    .map(BlindingSource::Seeded)
                    .unwrap_or(BlindingSource::Random),
                trim_after: false,
                synthesis: spec.synthesis,
                shape: (spec.synthesis != SynthesisMode::Full)
                    .then(|| key.shape())
                    .flatten(),
            };
            let ticket = engine
                .gate()
                .register(spec.priority, spec.partitions as usize);
            let control = RunControl {
                cancel: Some(&*entry.cancel),
                ticket: Some(&ticket),
            };
            let all = self.engine.devices();
            engine.run_with(job, key.key(), control, |p| {
                if let Some(i) = all.iter().position(|d| d.ordinal == p.device) {
                    self.device_partitions[i].fetch_add(1, Ordering::Relaxed);
                }
                entry.tx.send_modify(|s| s.done = p.done as u32);
            })
        })();
        match outcome {
            Ok(out) => {
                let mut proofs = Vec::with_capacity(out.proofs.len());
                for p in &out.proofs {
                    let mut bytes = Vec::with_capacity(192);
                    if let Err(e) = p.output.proof.write(&mut bytes) {
                        return failed(ServiceError::Internal(format!("encoding a proof: {e}")));
                    }
                    proofs.push(bytes);
                }
                JobResult {
                    state: JobState::Done,
                    verified: out.report.verified && proofs.len() == spec.partitions as usize,
                    proofs,
                    error: String::new(),
                    code: ErrorCode::Unspecified,
                    report_json: out.report.to_json(),
                    timings: Timings {
                        srs_load_ms: ms(key_load),
                        ..Timings::from_report(&out.report)
                    },
                }
            }
            Err(EngineError::Cancelled) => cancelled_result(entry.cancel_reason()),
            Err(e) => failed(e.into()),
        }
    }

    /// A Filecoin job (C2, PoSt, SnapDeals): the proof bytes only once
    /// filecoin-proofs' verifier accepted them (the filecoin crate never
    /// returns others). A panic of the proving code (filecoin-proofs on
    /// inputs it did not expect) fails the job, not the runner.
    #[cfg(feature = "filecoin")]
    fn run_filecoin<F>(&self, entry: &JobEntry, prove: F) -> JobResult
    where
        F: FnOnce(
            &crate::filecoin::FilecoinJobs,
            Engine,
            Priority,
            Arc<std::sync::atomic::AtomicBool>,
        ) -> Result<
            (Vec<u8>, cuda_prover_filecoin::JobTimes),
            cuda_prover_filecoin::FilecoinError,
        >,
    {
        use cuda_prover_filecoin::FilecoinError;
        use std::panic::{catch_unwind, AssertUnwindSafe};
        let spec = &entry.spec;
        let Some(filecoin) = &self.filecoin else {
            return failed(ServiceError::NotEnabled(
                "this daemon takes no Filecoin jobs".into(),
            ));
        };
        let ordinals: Vec<u32> = if spec.devices.is_empty() {
            self.engine.devices().iter().map(|d| d.ordinal).collect()
        } else {
            spec.devices.clone()
        };
        let engine = match self.engine.subset(&ordinals) {
            Ok(e) => e,
            Err(e) => return failed(e.into()),
        };
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            prove(filecoin, engine, spec.priority, entry.cancel.clone())
        }))
        .unwrap_or_else(|p| {
            Err(FilecoinError::Input(format!(
                "the prover stopped on these inputs: {}",
                cuda_prover_pipeline::panic_message(&*p)
            )))
        });
        match outcome {
            Ok((proof, times)) => {
                let report = &times.report;
                let all = self.engine.devices();
                for p in &report.per_partition {
                    if let Some(i) = all.iter().position(|d| d.ordinal == p.device) {
                        self.device_partitions[i].fetch_add(1, Ordering::Relaxed);
                    }
                }
                entry.tx.send_modify(|s| s.done = s.total);
                JobResult {
                    state: JobState::Done,
                    verified: true,
                    proofs: vec![proof],
                    error: String::new(),
                    code: ErrorCode::Unspecified,
                    report_json: report.to_json(),
                    timings: Timings {
                        srs_load_ms: ms(times.key_load),
                        ..Timings::from_report(report)
                    },
                }
            }
            Err(FilecoinError::Engine(EngineError::Cancelled)) => {
                cancelled_result(entry.cancel_reason())
            }
            Err(e) => failed(e.into()),
        }
    }

    /// Cancels running jobs past their deadline; forgets finished jobs past
    /// their retention time (checked each second).
    fn watch_deadlines(self: Arc<Self>) {
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

/// How a cancelled job ends (`None`: cancelled without a reason given).
fn cancelled_result(reason: Option<CancelReason>) -> JobResult {
    let e = reason
        .map(CancelReason::error)
        .unwrap_or_else(|| ServiceError::Cancelled("cancelled".into()));
    JobResult {
        state: JobState::Cancelled,
        verified: false,
        proofs: Vec::new(),
        error: e.to_string(),
        code: error_code(&e),
        report_json: String::new(),
        timings: Timings::default(),
    }
}

/// How a failed job ends: the error's message and code.
fn failed(e: ServiceError) -> JobResult {
    JobResult {
        state: JobState::Failed,
        verified: false,
        proofs: Vec::new(),
        error: e.to_string(),
        code: error_code(&e),
        report_json: String::new(),
        timings: Timings::default(),
    }
}
