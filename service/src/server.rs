//! The gRPC service: checks every request (size, token, circuit, limits,
//! params dir), then hands jobs to [`Jobs`].

use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use cuda_prover_engine::gate::PRIORITY_DEFAULT;
use cuda_prover_engine::Engine;
use cuda_prover_pipeline::circuits::Kind;
use cuda_prover_pipeline::SynthesisMode;
use tokio::sync::{mpsc, Notify};
use tokio_stream::wrappers::ReceiverStream;
use tokio_stream::Stream;
use tonic::{Request, Response, Status};

use crate::config::ServiceConfig;
use crate::cuzk_proto::proving_engine_server::ProvingEngineServer;
use crate::errors::{job_state, ServiceError};
use crate::health::{Preload, Readiness, Stage};
use crate::job_id::JobId;
use crate::jobs::{CancelReason, JobEntry, JobLimits, JobSpec, JobState, Jobs, Origin, Work};
use crate::keys::Keys;
use crate::listener::{Acceptor, ConnectionLimits, Listener};
use crate::metrics::{Gauges, Metrics};
use crate::proto;
use crate::proto::prover_server::{Prover, ProverServer};

/// The daemon's state behind the RPCs.
pub struct Service {
    jobs: Arc<Jobs>,
    /// The request ids of both APIs.
    requests: crate::requests::RequestIds,
    config: ServiceConfig,
    shutdown: Arc<Notify>,
    readiness: Readiness,
}

type EventStream = Pin<Box<dyn Stream<Item = Result<proto::JobEvent, Status>> + Send>>;

impl Service {
    pub fn new(engine: Arc<Engine>, config: ServiceConfig) -> Result<Arc<Self>, String> {
        // The host memory the keys of every job may take, built-in and
        // Filecoin: one store for the daemon.
        let budget = match config.key_budget_bytes {
            Some(b) => b,
            None => cuda_prover_engine::host_memory::available_bytes()
                .map(|b| b / 2)
                .unwrap_or(u64::MAX),
        };
        let store = Arc::new(cuda_prover_groth16::KeyStore::new(budget));
        let keys = Arc::new(Keys::new(&config.params_dirs, store.clone())?);
        #[cfg(feature = "filecoin")]
        let filecoin = if config.filecoin {
            Some(Arc::new(crate::filecoin::FilecoinJobs::new(
                &engine,
                config.filecoin_test_params.as_deref(),
                store,
            )?))
        } else {
            None
        };
        let fresh = crate::job_id::new_instance();
        let (journal, restored) = match &config.state_dir {
            Some(dir) => {
                let (j, r) = crate::journal::Journal::open(dir, fresh)?;
                (Some(Arc::new(j)), Some(r))
            }
            None => (None, None),
        };
        let jobs = Jobs::start(
            engine,
            keys,
            #[cfg(feature = "filecoin")]
            filecoin,
            Arc::new(Metrics::default()),
            JobLimits {
                max_queue: config.max_queue,
                max_running: config.max_running,
                keep_finished: config.keep_finished,
                retention: config.retention,
            },
            restored.as_ref().map(|r| r.instance).unwrap_or(fresh),
            journal,
        );
        let service = Arc::new(Self {
            jobs,
            requests: Default::default(),
            config,
            shutdown: Arc::new(Notify::new()),
            readiness: Readiness::default(),
        });
        for p in &service.config.preload {
            service.preload_target(p)?;
        }
        if let Some(r) = restored {
            let n = r.records.len();
            service
                .jobs
                .restore(r.records, r.journal_instance, r.next_seq, |req| {
                    service.spec(req, None)
                });
            service.requests.read_back(&service.jobs);
            if n > 0 {
                log::info!("{n} jobs read back from the journal");
            }
        }
        Ok(service)
    }

    pub fn jobs(&self) -> &Arc<Jobs> {
        &self.jobs
    }

    /// The request ids of both APIs.
    pub fn requests(&self) -> &crate::requests::RequestIds {
        &self.requests
    }

    /// The job of a cuda_prover.v1 submission: the one its request id
    /// names, or a new one.
    fn submit_request(
        &self,
        mut r: proto::SubmitRequest,
        wire: Option<usize>,
    ) -> Result<Arc<JobEntry>, Status> {
        let request_id = std::mem::take(&mut r.request_id);
        let digest = if request_id.is_empty() {
            0
        } else {
            crate::requests::prover_digest(&r)
        };
        self.requests.submit(
            &self.jobs,
            crate::requests::Api::Prover,
            &request_id,
            digest,
            || Ok(self.journaled_spec(r, wire)?),
            |spec| self.submit_spec(spec),
        )
    }

    pub fn config(&self) -> &ServiceConfig {
        &self.config
    }

    /// What the health service reports.
    pub fn readiness(&self) -> &Readiness {
        &self.readiness
    }

    /// Checks a preload entry against this daemon (its limits, params
    /// dirs, Filecoin jobs) without loading anything.
    fn preload_target(&self, p: &Preload) -> Result<PreloadTarget, String> {
        match p {
            Preload::BuiltIn {
                kind,
                log_constraints,
                params_dir,
            } => {
                if *log_constraints > self.config.max_log_constraints {
                    return Err(format!(
                        "preload {p}: log_constraints {log_constraints} is above this daemon's \
                         limit of {}",
                        self.config.max_log_constraints
                    ));
                }
                cuda_prover_pipeline::circuits::BuiltIn::new(*kind, *log_constraints, 0)
                    .map_err(|e| format!("preload {p}: {e}"))?;
                let dir = self
                    .jobs
                    .keys()
                    .resolve_dir(params_dir)
                    .map_err(|e| format!("preload {p}: {e}"))?;
                Ok(PreloadTarget::BuiltIn(*kind, *log_constraints, dir))
            }
            #[cfg(feature = "filecoin")]
            Preload::Filecoin(kind, arg) => {
                use crate::filecoin::FilecoinKey;
                use crate::health::FilecoinPreload;
                use cuda_prover_filecoin::{RegisteredSeal, SealVersion, SectorSize};
                let filecoin = self.jobs.filecoin_handle().ok_or_else(|| {
                    format!("preload {p}: this daemon takes no Filecoin jobs (--no-filecoin)")
                })?;
                let e = |e: cuda_prover_filecoin::FilecoinError| format!("preload {p}: {e}");
                let key = if *kind == FilecoinPreload::C2 && arg.starts_with("StackedDrg") {
                    FilecoinKey::Porep(arg.parse::<RegisteredSeal>().map_err(e)?)
                } else {
                    let size: SectorSize = arg.parse().map_err(e)?;
                    match kind {
                        FilecoinPreload::C2 => {
                            FilecoinKey::Porep(RegisteredSeal::new(size, SealVersion::V1_1))
                        }
                        FilecoinPreload::WinningPost => FilecoinKey::WinningPost(size),
                        FilecoinPreload::WindowPost => FilecoinKey::WindowPost(size),
                        FilecoinPreload::SnapDeals => FilecoinKey::SnapDeals(size),
                    }
                };
                let params = filecoin.params_of(key).map_err(e)?;
                Ok(PreloadTarget::Filecoin(filecoin, params))
            }
            #[cfg(not(feature = "filecoin"))]
            Preload::Filecoin(..) => Err(format!(
                "preload {p}: this daemon was built without Filecoin jobs (feature filecoin)"
            )),
        }
    }

    /// Loads and pins a preload entry's key (blocking).
    pub(crate) fn preload_key(&self, p: &Preload) -> Result<(), String> {
        match self.preload_target(p)? {
            PreloadTarget::BuiltIn(kind, log, dir) => self
                .jobs
                .keys()
                .get(kind, log, &dir, true)
                .map(|_| ())
                .map_err(|e| e.to_string()),
            #[cfg(feature = "filecoin")]
            PreloadTarget::Filecoin(filecoin, params) => filecoin
                .preload(&params)
                .map(|_| ())
                .map_err(|e| e.to_string()),
        }
    }

    /// Prometheus text of the daemon's metrics.
    pub fn prometheus(&self) -> String {
        let (queued, running) = self.jobs.list();
        let usage = self.jobs.keys().usage();
        let (used, budget, evictions) = (usage.used, usage.budget, usage.evictions);
        let devices = self.jobs.engine().devices();
        let g = Gauges {
            queued: queued.len(),
            running: running.len(),
            key_bytes: used,
            key_budget: budget,
            key_evictions: evictions,
            resident_keys: self.jobs.keys().list().len(),
            device_partitions: devices
                .iter()
                .zip(&self.jobs.device_partitions)
                .map(|(d, n)| (d.ordinal, n.load(Ordering::Relaxed)))
                .collect(),
        };
        self.jobs.metrics.to_prometheus(&g)
    }

    /// Resolves when a Shutdown request asks the daemon to stop.
    pub fn shutdown_signal(&self) -> Arc<Notify> {
        self.shutdown.clone()
    }

    /// The job of a submit; `wire` is the message's size as received (it
    /// counts unknown fields, which decoding dropped), when known.
    pub(crate) fn spec(
        &self,
        mut r: proto::SubmitRequest,
        wire: Option<usize>,
    ) -> Result<JobSpec, ServiceError> {
        let bad = ServiceError::InvalidRequest;
        let size = prost::Message::encoded_len(&r).max(wire.unwrap_or(0));
        let b = match r.job.take() {
            Some(proto::submit_request::Job::BuiltIn(b)) => b,
            #[cfg(feature = "filecoin")]
            Some(proto::submit_request::Job::FilecoinC2(c2)) => {
                let limit = self.config.max_filecoin_request_bytes;
                crate::wire_size::check_limit("a Filecoin C2 job", size, limit)?;
                return self.c2_spec(r, c2);
            }
            #[cfg(feature = "filecoin")]
            Some(proto::submit_request::Job::FilecoinPost(post)) => {
                let limit = self.config.max_filecoin_request_bytes;
                crate::wire_size::check_limit("a Filecoin PoSt job", size, limit)?;
                return self.post_spec(r, post);
            }
            #[cfg(feature = "filecoin")]
            Some(proto::submit_request::Job::FilecoinSnap(snap)) => {
                let limit = self.config.max_filecoin_request_bytes;
                crate::wire_size::check_limit("a Filecoin SnapDeals job", size, limit)?;
                return self.snap_spec(r, snap);
            }
            #[cfg(not(feature = "filecoin"))]
            Some(
                proto::submit_request::Job::FilecoinC2(_)
                | proto::submit_request::Job::FilecoinPost(_)
                | proto::submit_request::Job::FilecoinSnap(_),
            ) => {
                return Err(ServiceError::NotBuilt(
                    "this daemon was built without Filecoin jobs (feature filecoin)".into(),
                ))
            }
            None => {
                return Err(bad("the request names no job (built_in, filecoin_c2, \
                     filecoin_post or filecoin_snap is required)"
                    .into()))
            }
        };
        // The decoder admits Filecoin-sized requests; others keep their limit.
        crate::wire_size::check_limit("a built-in job", size, self.config.max_request_bytes)?;
        let kind: Kind = b
            .circuit
            .parse()
            .map_err(|e: String| bad(format!("circuit: {e}")))?;
        if b.log_constraints > self.config.max_log_constraints {
            return Err(bad(format!(
                "log_constraints {} is above this daemon's limit of {}",
                b.log_constraints, self.config.max_log_constraints
            )));
        }
        cuda_prover_pipeline::circuits::BuiltIn::new(kind, b.log_constraints, 0)
            .map_err(|e| bad(format!("circuit: {e}")))?;
        if b.partitions == 0 || b.partitions > self.config.max_partitions {
            return Err(bad(format!(
                "partitions must be 1 to {}, not {}",
                self.config.max_partitions, b.partitions
            )));
        }
        let synthesis = if b.synthesis.is_empty() {
            SynthesisMode::Auto
        } else {
            b.synthesis
                .parse()
                .map_err(|e: String| bad(format!("synthesis: {e}")))?
        };
        if r.name.len() > 256 {
            return Err(bad("name: at most 256 bytes".into()));
        }
        self.check_devices(&r.devices)?;
        let params_dir = self
            .jobs
            .keys()
            .resolve_dir(&r.params_dir)
            .map_err(ServiceError::PermissionDenied)?;
        let name = if r.name.is_empty() {
            format!("{}-2^{}x{}", kind.name(), b.log_constraints, b.partitions)
        } else {
            r.name
        };
        Ok(JobSpec {
            work: Work::BuiltIn,
            origin: Origin::default(),
            name,
            kind,
            log_constraints: b.log_constraints,
            partitions: b.partitions,
            seed: b.seed,
            synthesis,
            priority: if r.priority == 0 {
                PRIORITY_DEFAULT
            } else {
                r.priority
            },
            devices: r.devices,
            params_dir,
            deadline: (r.deadline_ms > 0).then(|| Duration::from_millis(r.deadline_ms)),
        })
    }

    /// `spec`, with the request kept for the journal when there is one.
    pub(crate) fn journaled_spec(
        &self,
        r: proto::SubmitRequest,
        wire: Option<usize>,
    ) -> Result<JobSpec, ServiceError> {
        let copy = self.jobs.journaling().then(|| r.clone());
        let mut spec = self.spec(r, wire)?;
        spec.origin.request = copy;
        Ok(spec)
    }

    fn check_devices(&self, devices: &[u32]) -> Result<(), ServiceError> {
        let ordinals: Vec<u32> = self
            .jobs
            .engine()
            .devices()
            .iter()
            .map(|d| d.ordinal)
            .collect();
        for (i, d) in devices.iter().enumerate() {
            if !ordinals.contains(d) {
                return Err(ServiceError::InvalidRequest(format!(
                    "device {d} is not one of this daemon's devices {ordinals:?}"
                )));
            }
            if devices[..i].contains(d) {
                return Err(ServiceError::InvalidRequest(format!(
                    "device {d} is named twice in the request's devices {devices:?}"
                )));
            }
        }
        Ok(())
    }

    /// The checks every Filecoin job's request passes: the daemon takes
    /// Filecoin jobs, the request names no params_dir (the parameters are
    /// the daemon's), its name and devices are valid.
    #[cfg(feature = "filecoin")]
    fn filecoin_request(&self, r: &proto::SubmitRequest) -> Result<(), ServiceError> {
        if self.jobs.filecoin().is_none() {
            return Err(ServiceError::NotEnabled(
                "this daemon takes no Filecoin jobs (started without them)".into(),
            ));
        }
        if !r.params_dir.is_empty() {
            return Err(ServiceError::InvalidRequest(
                "params_dir: Filecoin jobs use the daemon's Filecoin parameters; leave it empty"
                    .into(),
            ));
        }
        if r.name.len() > 256 {
            return Err(ServiceError::InvalidRequest(
                "name: at most 256 bytes".into(),
            ));
        }
        self.check_devices(&r.devices)
    }

    /// A Filecoin job's spec from its checked request.
    #[cfg(feature = "filecoin")]
    fn filecoin_spec(
        r: proto::SubmitRequest,
        name: String,
        partitions: u32,
        level: cuda_prover_engine::gate::Priority,
        work: Work,
    ) -> JobSpec {
        JobSpec {
            name: if r.name.is_empty() { name } else { r.name },
            // Unused by Filecoin jobs.
            kind: Kind::Chain,
            log_constraints: 0,
            partitions,
            seed: None,
            synthesis: SynthesisMode::Auto,
            priority: if r.priority == 0 { level } else { r.priority },
            devices: r.devices,
            params_dir: std::path::PathBuf::new(),
            deadline: (r.deadline_ms > 0).then(|| Duration::from_millis(r.deadline_ms)),
            work,
            origin: Origin::default(),
        }
    }

    /// A Filecoin C2 job: the C1 output is parsed and checked against the
    /// request here, so a malformed one is refused at submission. The
    /// parameters are the daemon's (the request's params_dir must be empty).
    #[cfg(feature = "filecoin")]
    fn c2_spec(
        &self,
        r: proto::SubmitRequest,
        c2: proto::FilecoinC2Job,
    ) -> Result<JobSpec, ServiceError> {
        use cuda_prover_engine::gate::PRIORITY_C2;
        self.filecoin_request(&r)?;
        let c2 = crate::filecoin::C2Spec::check(c2).map_err(ServiceError::InvalidRequest)?;
        Ok(Self::filecoin_spec(
            r,
            c2.name(),
            c2.partitions,
            PRIORITY_C2,
            Work::FilecoinC2(Arc::new(c2)),
        ))
    }

    /// A Filecoin PoSt job: the vanilla proofs are decoded and their count
    /// and shape checked here, so malformed ones are refused at submission.
    #[cfg(feature = "filecoin")]
    fn post_spec(
        &self,
        r: proto::SubmitRequest,
        post: proto::FilecoinPostJob,
    ) -> Result<JobSpec, ServiceError> {
        use cuda_prover_engine::gate::{PRIORITY_WINDOW_POST, PRIORITY_WINNING_POST};
        use cuda_prover_filecoin::vanilla::PostJob;
        self.filecoin_request(&r)?;
        let post = crate::filecoin::PostSpec::check(post).map_err(ServiceError::InvalidRequest)?;
        let level = match post.job {
            PostJob::Winning => PRIORITY_WINNING_POST,
            PostJob::Window | PostJob::WindowPartition(_) => PRIORITY_WINDOW_POST,
        };
        Ok(Self::filecoin_spec(
            r,
            post.name(),
            1,
            level,
            Work::FilecoinPost(Arc::new(post)),
        ))
    }

    /// A Filecoin SnapDeals job: the vanilla proofs are decoded and counted
    /// and the commitments checked here.
    #[cfg(feature = "filecoin")]
    fn snap_spec(
        &self,
        r: proto::SubmitRequest,
        snap: proto::FilecoinSnapJob,
    ) -> Result<JobSpec, ServiceError> {
        use cuda_prover_engine::gate::PRIORITY_C2;
        self.filecoin_request(&r)?;
        let snap = crate::filecoin::SnapSpec::check(snap).map_err(ServiceError::InvalidRequest)?;
        Ok(Self::filecoin_spec(
            r,
            snap.name(),
            snap.partitions(),
            PRIORITY_C2,
            Work::FilecoinSnap(Arc::new(snap)),
        ))
    }

    pub(crate) fn submit_spec(&self, spec: JobSpec) -> Result<Arc<JobEntry>, Status> {
        Ok(self.jobs.submit(spec).map_err(ServiceError::Submit)?)
    }

    /// The key a preload or evict request names: its circuit, its params
    /// dir (within the configured ones) and its name among resident keys.
    fn key_ref(&self, r: &proto::KeyRequest) -> Result<(Kind, std::path::PathBuf, String), Status> {
        let kind: Kind = r
            .circuit
            .parse()
            .map_err(|e: String| ServiceError::InvalidRequest(format!("circuit: {e}")))?;
        let dir = self
            .jobs
            .keys()
            .resolve_dir(&r.params_dir)
            .map_err(ServiceError::PermissionDenied)?;
        let name = Keys::name(kind, r.log_constraints, &dir);
        Ok((kind, dir, name))
    }

    fn job(&self, id: &str) -> Result<Arc<JobEntry>, Status> {
        let wire: JobId = id.parse().map_err(|e| {
            ServiceError::InvalidRequest(format!("job id '{}' is not a number ({e})", shown_id(id)))
        })?;
        Ok(self.jobs.get_wire(&wire).ok_or_else(|| {
            ServiceError::NotFound(format!("no job {} (unknown, or forgotten)", shown_id(id)))
        })?)
    }
}

/// A preload entry resolved against the daemon.
enum PreloadTarget {
    BuiltIn(Kind, u32, std::path::PathBuf),
    #[cfg(feature = "filecoin")]
    /// A Filecoin key (C2, PoSt, SnapDeals): its params file.
    Filecoin(Arc<crate::filecoin::FilecoinJobs>, std::path::PathBuf),
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
fn events(entry: Arc<JobEntry>) -> EventStream {
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

fn job_status(e: &JobEntry) -> proto::JobStatus {
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

#[tonic::async_trait]
impl Prover for Arc<Service> {
    async fn submit(
        &self,
        req: Request<proto::SubmitRequest>,
    ) -> Result<Response<proto::SubmitReply>, Status> {
        let wire = crate::wire_size::of(&req);
        let e = self.submit_request(req.into_inner(), wire)?;
        Ok(Response::new(proto::SubmitReply {
            job_id: e.wire_id.to_string(),
        }))
    }

    type AwaitStream = EventStream;

    async fn r#await(
        &self,
        req: Request<proto::AwaitRequest>,
    ) -> Result<Response<EventStream>, Status> {
        let e = self.job(&req.into_inner().job_id)?;
        Ok(Response::new(events(e)))
    }

    type ProveStream = EventStream;

    async fn prove(
        &self,
        req: Request<proto::SubmitRequest>,
    ) -> Result<Response<EventStream>, Status> {
        let wire = crate::wire_size::of(&req);
        let e = self.submit_request(req.into_inner(), wire)?;
        Ok(Response::new(events(e)))
    }

    async fn cancel(
        &self,
        req: Request<proto::CancelRequest>,
    ) -> Result<Response<proto::CancelReply>, Status> {
        let id = req.into_inner().job_id;
        let e = self.job(&id)?;
        let state = self
            .jobs
            .cancel(e.id, CancelReason::Request)
            .unwrap_or(JobState::Cancelled);
        Ok(Response::new(proto::CancelReply {
            state: state.name().into(),
            job_state: job_state(state) as i32,
        }))
    }

    async fn status(
        &self,
        _req: Request<proto::StatusRequest>,
    ) -> Result<Response<proto::StatusReply>, Status> {
        let (queued, running) = self.jobs.list();
        let engine = self.jobs.engine();
        let devices = engine
            .devices()
            .iter()
            .zip(&self.jobs.device_partitions)
            .map(|(d, n)| {
                let info = engine.context().device_info(d.ordinal).ok();
                proto::DeviceStatus {
                    ordinal: d.ordinal,
                    name: d.name.clone(),
                    simulated: d.simulated,
                    free_bytes: info.as_ref().map(|i| i.free_bytes).unwrap_or(0),
                    total_bytes: info.as_ref().map(|i| i.total_bytes).unwrap_or(0),
                    partitions: n.load(Ordering::Relaxed),
                }
            })
            .collect();
        let budget = self.jobs.keys().usage().budget;
        #[cfg(feature = "filecoin")]
        let filecoin_keys = self
            .jobs
            .filecoin()
            .map(|f| {
                f.loaded_key_ids()
                    .into_iter()
                    .map(|(id, path)| proto::FilecoinKeyStatus {
                        circuit_id: id,
                        bytes: std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0),
                        params_file: path.display().to_string(),
                    })
                    .collect()
            })
            .unwrap_or_default();
        #[cfg(not(feature = "filecoin"))]
        let filecoin_keys = Vec::new();
        Ok(Response::new(proto::StatusReply {
            version: env!("CARGO_PKG_VERSION").into(),
            backend: engine.context().backend_name().into(),
            draining: self.jobs.draining(),
            queued: queued.iter().map(|e| job_status(e)).collect(),
            running: running.iter().map(|e| job_status(e)).collect(),
            devices,
            keys: self
                .jobs
                .keys()
                .list()
                .into_iter()
                .map(|k| proto::ResidentKey {
                    key: k.name,
                    bytes: k.bytes,
                    pinned: k.pinned,
                })
                .collect(),
            key_budget_bytes: budget,
            max_queue: self.config.max_queue as u32,
            max_running: self.config.max_running as u32,
            filecoin_keys,
        }))
    }

    async fn metrics(
        &self,
        _req: Request<proto::MetricsRequest>,
    ) -> Result<Response<proto::MetricsReply>, Status> {
        Ok(Response::new(proto::MetricsReply {
            prometheus_text: self.prometheus(),
        }))
    }

    async fn preload(
        &self,
        req: Request<proto::KeyRequest>,
    ) -> Result<Response<proto::KeyReply>, Status> {
        let r = req.into_inner();
        let (kind, dir, name) = self.key_ref(&r)?;
        if r.log_constraints > self.config.max_log_constraints {
            return Err(ServiceError::InvalidRequest(format!(
                "log_constraints {} is above this daemon's limit of {}",
                r.log_constraints, self.config.max_log_constraints
            ))
            .into());
        }
        let jobs = self.jobs.clone();
        let log = r.log_constraints;
        let (key, evicted) =
            tokio::task::spawn_blocking(move || jobs.keys().get(kind, log, &dir, true))
                .await
                .map_err(|e| ServiceError::Internal(e.to_string()))?
                .map_err(ServiceError::Engine)?;
        let bytes = key.bytes();
        Ok(Response::new(proto::KeyReply {
            key: name,
            bytes,
            evicted,
        }))
    }

    async fn evict(
        &self,
        req: Request<proto::KeyRequest>,
    ) -> Result<Response<proto::KeyReply>, Status> {
        let (_, _, name) = self.key_ref(&req.into_inner())?;
        if !self.jobs.keys().evict(&name) {
            return Err(ServiceError::NotFound(format!("key {name} is not resident")).into());
        }
        Ok(Response::new(proto::KeyReply {
            key: name.clone(),
            bytes: 0,
            evicted: vec![name],
        }))
    }

    async fn drain(
        &self,
        _req: Request<proto::DrainRequest>,
    ) -> Result<Response<proto::DrainReply>, Status> {
        self.readiness.set(Stage::Draining).await;
        let jobs = self.jobs.clone();
        tokio::task::spawn_blocking(move || jobs.drain())
            .await
            .map_err(|e| ServiceError::Internal(e.to_string()))?;
        Ok(Response::new(proto::DrainReply {}))
    }

    async fn shutdown(
        &self,
        req: Request<proto::ShutdownRequest>,
    ) -> Result<Response<proto::ShutdownReply>, Status> {
        let now = req.into_inner().now;
        self.readiness.set(Stage::Draining).await;
        let jobs = self.jobs.clone();
        tokio::task::spawn_blocking(move || if now { jobs.stop_now() } else { jobs.drain() })
            .await
            .map_err(|e| ServiceError::Internal(e.to_string()))?;
        self.shutdown.notify_one();
        Ok(Response::new(proto::ShutdownReply {}))
    }
}

/// Checks the bearer token of every request, when one is set.
#[derive(Clone)]
struct TokenCheck(Option<Arc<str>>);

impl tonic::service::Interceptor for TokenCheck {
    fn call(&mut self, req: Request<()>) -> Result<Request<()>, Status> {
        let Some(token) = &self.0 else {
            return Ok(req);
        };
        let given = req
            .metadata()
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "));
        match given {
            Some(t) if same_secret(t.as_bytes(), token.as_bytes()) => Ok(req),
            Some(_) => Err(Status::unauthenticated("wrong token")),
            None => Err(Status::unauthenticated(
                "this daemon requires a token (authorization: Bearer TOKEN; --token on the CLI)",
            )),
        }
    }
}

/// Compares in time that depends on the lengths only, not on where the
/// first difference is.
fn same_secret(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Serves both APIs (cuda_prover.v1 and cuzk.v1) and the gRPC health
/// service (`grpc.health.v1`, see [`crate::health`]) on `listener` (TCP,
/// or a unix socket whose file is removed when this returns) until
/// `shutdown` resolves or a Shutdown request arrives; the first call starts
/// the preload of the configured keys, and a key that cannot be loaded ends
/// it with an error naming the key. Refuses a TCP address other than
/// loopback without a token.
pub async fn serve(
    service: Arc<Service>,
    listener: impl Into<Listener>,
    shutdown: impl std::future::Future<Output = ()> + Send,
) -> Result<(), String> {
    let (acceptor, _socket_file) = match listener.into() {
        Listener::Tcp(l) => {
            let addr: SocketAddr = l.local_addr().map_err(|e| e.to_string())?;
            check_listen(&addr, service.config.token.as_deref())?;
            (Acceptor::Tcp(l), None)
        }
        Listener::Unix(l, file) => (Acceptor::Unix(l), Some(file)),
    };
    let mut limit = service.config.max_request_bytes;
    if cfg!(feature = "filecoin") && service.config.filecoin {
        limit = limit.max(service.config.max_filecoin_request_bytes);
    }
    let check = TokenCheck(service.config.token.as_deref().map(Arc::from));
    let stop = service.shutdown_signal();
    let limits = ConnectionLimits::within_file_limit(
        service.config.max_connections,
        service.config.idle_timeout,
    );
    if limits.max_connections < service.config.max_connections {
        log::warn!(
            "at most {} connections at once: the open-file limit leaves no more",
            limits.max_connections
        );
    }
    let cuzk = tonic::service::interceptor::InterceptedService::new(
        ProvingEngineServer::new(crate::cuzk::Cuzk::new(service.clone()))
            .max_decoding_message_size(limit),
        check.clone(),
    );
    let svc = tonic::service::interceptor::InterceptedService::new(
        ProverServer::new(service.clone()).max_decoding_message_size(limit),
        check,
    );
    // grpc.health.v1 on this listener: NOT_SERVING until the preloaded
    // keys are in place (the preload starts with the first listener).
    let (reporter, health) = tonic_health::server::health_reporter();
    service.readiness.attach(reporter).await;
    if service.readiness.first_start() {
        tokio::spawn(crate::health::preload(service.clone()));
    }
    let preload_failed = parking_lot::Mutex::new(None::<String>);
    let mut stage = service.readiness.watch();
    let failed = async move {
        loop {
            if let Stage::Failed(e) = &*stage.borrow_and_update() {
                return e.clone();
            }
            if stage.changed().await.is_err() {
                std::future::pending::<()>().await;
            }
        }
    };
    let incoming = crate::listener::incoming(acceptor, limits);
    // Pings keep a live client's connection busy well within the idle time.
    let ping = limits.idle_timeout / 3;
    tonic::transport::Server::builder()
        .layer(crate::wire_size::CountWireBytes)
        .http2_keepalive_interval(Some(ping))
        .http2_keepalive_timeout(Some(ping))
        .add_service(svc)
        .add_service(cuzk)
        .add_service(health)
        .serve_with_incoming_shutdown(incoming, async {
            tokio::select! {
                _ = shutdown => {}
                _ = stop.notified() => {}
                e = failed => *preload_failed.lock() = Some(e),
            }
            service.readiness.set(Stage::Draining).await;
        })
        .await
        .map_err(|e| e.to_string())?;
    match preload_failed.into_inner() {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// Loopback needs nothing; any other address needs a token (a unix
/// socket needs none: its file's mode decides who connects).
pub fn check_listen(addr: &SocketAddr, token: Option<&str>) -> Result<(), String> {
    if addr.ip().is_loopback() || token.is_some_and(|t| !t.is_empty()) {
        Ok(())
    } else {
        Err(format!(
            "listening on {addr} (not loopback) needs a token: pass --token or set CUDA_PROVER_TOKEN"
        ))
    }
}
