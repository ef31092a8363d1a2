//! `cuzk.v1.ProvingEngine` (`proto/cuzk/v1/cuzk.proto`): the API Curio's
//! cuzk client speaks, served by the same daemon beside `cuda_prover.v1`.
//! Its jobs go into the same queue, at the same gate levels (WinningPoSt >
//! WindowPoSt > C2 = SnapDeals), and their proofs pass filecoin-proofs'
//! verifier before they are returned, as every Filecoin job's do.
//!
//! Proof kinds, each a Filecoin job of the cuda_prover.v1 API (and written
//! to the journal in that form), the prover id made from `miner_id`:
//! - POREP_SEAL_COMMIT: C2 (the C1 output in `vanilla_proof`).
//! - WINNING_POST and WINDOW_POST_PARTITION: PoSt from the challenged
//!   sectors' vanilla proofs (`vanilla_proof`: a JSON array of base64
//!   strings, each filecoin-proofs-api's bincode `FallbackPoStSectorProof`)
//!   and the 32-byte `randomness`; a window partition is the one
//!   `partition_index` names, its answer that partition's proof.
//! - SNAP_DEALS_UPDATE: the update's vanilla partition proofs (the same
//!   list form, each a bincode `PartitionProof`) and the three CIDs:
//!   `sector_key_cid` (comm_r_old), `new_sealed_cid` (comm_r_new),
//!   `new_unsealed_cid` (comm_d_new), binary CIDs or bare 32-byte
//!   commitments.
//! The sector size comes from `registered_proof` (the network's numbers of
//! the kind) or `sector_size`. Malformed inputs are INVALID_ARGUMENT at
//! submission, and nothing is queued.
//!
//! `request_id` is an idempotency key: a request whose id names a job this
//! daemon knows answers with that job (ALREADY_EXISTS when its inputs
//! differ from the first request's).

pub mod convert;

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use parking_lot::Mutex;
use tonic::{Request, Response, Status};

use crate::cuzk_proto::proving_engine_server::ProvingEngine;
use crate::cuzk_proto::{self as pb, await_proof_response::Status as AwaitStatus, ProofKind};
use crate::job_id::JobId;
use crate::jobs::{JobEntry, JobResult, JobState, Work};
use crate::server::{shown_id, Service};

/// The longest request id kept (Curio's are UUIDs or task ids).
pub const MAX_REQUEST_ID_BYTES: usize = 256;

/// A request id's job and a digest of the request's inputs.
struct Known {
    digest: u64,
    entry: Arc<JobEntry>,
}

/// The cuzk.v1 service over the daemon's [`Service`].
pub struct Cuzk {
    service: Arc<Service>,
    started: Instant,
    requests: Mutex<HashMap<String, Known>>,
}

impl Cuzk {
    /// The request ids of the jobs the daemon knows (read back from its
    /// journal after a restart) name their jobs again.
    pub fn new(service: Arc<Service>) -> Arc<Self> {
        let mut requests = HashMap::new();
        for entry in service.jobs().all() {
            let o = &entry.spec.origin;
            if !o.request_id.is_empty() {
                requests.insert(
                    o.request_id.clone(),
                    Known {
                        digest: o.digest,
                        entry: entry.clone(),
                    },
                );
            }
        }
        Arc::new(Self {
            service,
            started: Instant::now(),
            requests: Mutex::new(requests),
        })
    }

    /// The job of a request: the known one for its request id, or a new one.
    fn submit(
        &self,
        r: pb::SubmitProofRequest,
        wire: Option<usize>,
    ) -> Result<Arc<JobEntry>, Status> {
        let kind = convert::proof_kind(r.proof_kind).map_err(Status::invalid_argument)?;
        if r.request_id.len() > MAX_REQUEST_ID_BYTES {
            return Err(Status::invalid_argument(format!(
                "request_id has {} bytes (at most {MAX_REQUEST_ID_BYTES})",
                r.request_id.len()
            )));
        }
        let digest = digest(&r);
        if let Some(e) = self.known(&r.request_id, digest)? {
            return Ok(e);
        }
        let mut spec = self.filecoin_spec(&r, kind, wire)?;
        spec.origin.request_id = r.request_id.clone();
        spec.origin.digest = digest;
        // Checked again under the lock held across the submission: two
        // requests with one id racing give one job.
        let mut known = self.requests.lock();
        if let Some(k) = known.get(&r.request_id).filter(|k| self.remembered(k)) {
            return same_inputs(&r.request_id, k, digest);
        }
        let entry = self.service.submit_spec(spec)?;
        if !r.request_id.is_empty() {
            self.forget_old(&mut known);
            known.insert(
                r.request_id.clone(),
                Known {
                    digest,
                    entry: entry.clone(),
                },
            );
        }
        Ok(entry)
    }

    fn known(&self, request_id: &str, digest: u64) -> Result<Option<Arc<JobEntry>>, Status> {
        if request_id.is_empty() {
            return Ok(None);
        }
        let mut known = self.requests.lock();
        match known.get(request_id) {
            Some(k) if self.remembered(k) => same_inputs(request_id, k, digest).map(Some),
            Some(_) => {
                known.remove(request_id);
                Ok(None)
            }
            None => Ok(None),
        }
    }

    /// Whether the daemon still remembers a request id's job: running, or
    /// finished and neither past its retention time nor pushed out.
    fn remembered(&self, k: &Known) -> bool {
        !k.entry.snapshot().state.finished()
            || self
                .service
                .jobs()
                .get(k.entry.id)
                .is_some_and(|e| Arc::ptr_eq(&e, &k.entry))
    }

    /// Drops request ids whose jobs ended and left the daemon's memory of
    /// finished jobs, once there are more ids than it keeps.
    fn forget_old(&self, known: &mut HashMap<String, Known>) {
        let jobs = self.service.jobs();
        if known.len() < jobs.keep_finished() + jobs.max_queue() {
            return;
        }
        known.retain(|_, k| !k.entry.snapshot().state.finished() || jobs.get(k.entry.id).is_some());
    }

    /// The cuda_prover.v1 job of a request: C2, PoSt or SnapDeals, checked
    /// as that API checks them.
    fn filecoin_spec(
        &self,
        r: &pb::SubmitProofRequest,
        kind: ProofKind,
        wire: Option<usize>,
    ) -> Result<crate::jobs::JobSpec, Status> {
        let priority =
            convert::gate_priority(kind, r.priority).map_err(Status::invalid_argument)?;
        #[cfg(feature = "filecoin")]
        {
            use crate::proto::submit_request::Job;
            let bad = |m: String| Status::invalid_argument(m);
            let prover_id: String = convert::prover_id_of_miner(r.miner_id)
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect();
            let job = match kind {
                ProofKind::PorepSealCommit => {
                    if r.vanilla_proof.is_empty() {
                        return Err(Status::invalid_argument(
                            "vanilla_proof is empty: POREP_SEAL_COMMIT takes the C1 output there",
                        ));
                    }
                    // registered_proof 0 is StackedDrg2KiBV1, never a
                    // production seal; Curio leaves it 0 for C2 (the C1
                    // output names its proof).
                    let registered_proof = if r.registered_proof == 0 {
                        String::new()
                    } else {
                        convert::registered_seal_name(r.registered_proof).map_err(bad)?
                    };
                    Job::FilecoinC2(crate::proto::FilecoinC2Job {
                        c1_output: r.vanilla_proof.clone(),
                        prover_id,
                        sector_id: r.sector_number,
                        sector_size: r.sector_size,
                        registered_proof,
                    })
                }
                ProofKind::WinningPost | ProofKind::WindowPostPartition => {
                    let sector_size =
                        convert::post_sector_size(kind, r.registered_proof, r.sector_size)
                            .map_err(bad)?;
                    let winning = kind == ProofKind::WinningPost;
                    if winning && r.partition_index != 0 {
                        return Err(Status::invalid_argument(
                            "partition_index is for WINDOW_POST_PARTITION only",
                        ));
                    }
                    Job::FilecoinPost(crate::proto::FilecoinPostJob {
                        kind: if winning {
                            "winning"
                        } else {
                            "window-partition"
                        }
                        .into(),
                        sector_size,
                        randomness: r.randomness.clone(),
                        prover_id,
                        vanilla_proofs: convert::vanilla_list(&r.vanilla_proof).map_err(bad)?,
                        partition_index: r.partition_index,
                    })
                }
                ProofKind::SnapDealsUpdate => {
                    use convert::{commitment_of_cid, SEALED, UNSEALED};
                    let sector_size = convert::snap_sector_size(r.registered_proof, r.sector_size)
                        .map_err(bad)?;
                    let comm_r_old = commitment_of_cid(&r.sector_key_cid, "sector_key_cid", SEALED)
                        .map_err(bad)?;
                    let comm_r_new = commitment_of_cid(&r.new_sealed_cid, "new_sealed_cid", SEALED)
                        .map_err(bad)?;
                    let comm_d_new =
                        commitment_of_cid(&r.new_unsealed_cid, "new_unsealed_cid", UNSEALED)
                            .map_err(bad)?;
                    Job::FilecoinSnap(crate::proto::FilecoinSnapJob {
                        sector_size,
                        vanilla_proofs: convert::vanilla_list(&r.vanilla_proof).map_err(bad)?,
                        comm_r_old: comm_r_old.to_vec(),
                        comm_r_new: comm_r_new.to_vec(),
                        comm_d_new: comm_d_new.to_vec(),
                    })
                }
                ProofKind::Unspecified => {
                    return Err(Status::invalid_argument("proof_kind is unspecified"));
                }
            };
            let req = crate::proto::SubmitRequest {
                job: Some(job),
                priority,
                name: r.request_id.clone(),
                ..Default::default()
            };
            self.service.journaled_spec(req, wire)
        }
        #[cfg(not(feature = "filecoin"))]
        {
            let _ = (r, wire, priority);
            Err(Status::unimplemented(
                "this daemon was built without Filecoin jobs (feature filecoin)",
            ))
        }
    }

    /// The job a cuzk job id names: one of the daemon's, or one a request id
    /// still remembers.
    fn job(&self, id: &str) -> Result<Arc<JobEntry>, Status> {
        let wire: JobId = id.parse().map_err(|e| {
            Status::invalid_argument(format!("job id '{}' is not a job id ({e})", shown_id(id)))
        })?;
        if let Some(e) = self.service.jobs().get_wire(&wire) {
            return Ok(e);
        }
        self.requests
            .lock()
            .values()
            .find(|k| k.entry.wire_id == wire && self.remembered(k))
            .map(|k| k.entry.clone())
            .ok_or_else(|| {
                Status::not_found(format!("no job {} (unknown, or forgotten)", shown_id(id)))
            })
    }
}

fn same_inputs(request_id: &str, k: &Known, digest: u64) -> Result<Arc<JobEntry>, Status> {
    if k.digest == digest {
        Ok(k.entry.clone())
    } else {
        Err(Status::already_exists(format!(
            "request_id '{}' names job {} of other inputs",
            shown_id(request_id),
            k.entry.wire_id
        )))
    }
}

/// A digest of everything a request asks for but its id: a repeated id
/// with other inputs is a client's mistake, not the same job. FNV-1a over
/// the fields (each with its length), so that a digest the journal kept
/// means the same to a later build of the daemon.
fn digest(r: &pb::SubmitProofRequest) -> u64 {
    let mut h = Fnv::default();
    for v in [
        r.proof_kind as u64,
        r.sector_size,
        r.registered_proof,
        r.priority as u64,
        r.sector_number,
        r.miner_id,
        r.partition_index as u64,
    ] {
        h.u64(v);
    }
    for b in [
        &r.vanilla_proof,
        &r.randomness,
        &r.sector_key_cid,
        &r.new_sealed_cid,
        &r.new_unsealed_cid,
    ] {
        h.bytes(b);
    }
    h.0
}

struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

impl Fnv {
    fn byte(&mut self, b: u8) {
        self.0 = (self.0 ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3);
    }

    fn u64(&mut self, v: u64) {
        v.to_le_bytes().iter().for_each(|&b| self.byte(b));
    }

    fn bytes(&mut self, b: &[u8]) {
        self.u64(b.len() as u64);
        b.iter().for_each(|&x| self.byte(x));
    }
}

/// The cuzk proof kind a job counts under (built-in jobs: unspecified).
pub fn kind_of(work: &Work) -> ProofKind {
    match work {
        Work::BuiltIn => ProofKind::Unspecified,
        #[cfg(feature = "filecoin")]
        Work::FilecoinC2(_) => ProofKind::PorepSealCommit,
        #[cfg(feature = "filecoin")]
        Work::FilecoinPost(p) => match p.job {
            cuda_prover_filecoin::vanilla::PostJob::Winning => ProofKind::WinningPost,
            _ => ProofKind::WindowPostPartition,
        },
        #[cfg(feature = "filecoin")]
        Work::FilecoinSnap(_) => ProofKind::SnapDealsUpdate,
    }
}

/// Waits for the job's result.
async fn result(entry: &JobEntry) -> Result<Arc<JobResult>, Status> {
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

fn response(entry: &JobEntry, r: &JobResult) -> pb::AwaitProofResponse {
    let (status, proof, error) = match r.state {
        JobState::Done if r.verified && r.proofs.len() == 1 => {
            (AwaitStatus::Completed, r.proofs.concat(), String::new())
        }
        JobState::Done => (
            AwaitStatus::Failed,
            Vec::new(),
            "the job ended without one verified proof".to_string(),
        ),
        JobState::Cancelled if r.error.contains("deadline") => {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digests_are_fnv_1a_and_see_every_input() {
        let mut h = Fnv::default();
        h.byte(b'a');
        // FNV-1a 64 of "a".
        assert_eq!(h.0, 0xaf63_dc4c_8601_ec8c);
        let r = pb::SubmitProofRequest {
            request_id: "x".into(),
            proof_kind: 1,
            vanilla_proof: b"c1".to_vec(),
            miner_id: 1000,
            ..Default::default()
        };
        let other_id = pb::SubmitProofRequest {
            request_id: "y".into(),
            ..r.clone()
        };
        assert_eq!(digest(&r), digest(&other_id));
        let moved = pb::SubmitProofRequest {
            vanilla_proof: b"c".to_vec(),
            randomness: b"1".to_vec(),
            ..r.clone()
        };
        assert_ne!(digest(&r), digest(&moved));
        let miner = pb::SubmitProofRequest {
            miner_id: 1001,
            ..r.clone()
        };
        assert_ne!(digest(&r), digest(&miner));
    }
}

#[tonic::async_trait]
impl ProvingEngine for Arc<Cuzk> {
    async fn submit_proof(
        &self,
        req: Request<pb::SubmitProofRequest>,
    ) -> Result<Response<pb::SubmitProofResponse>, Status> {
        let wire = crate::wire_size::of(&req);
        let e = self.submit(req.into_inner(), wire)?;
        Ok(Response::new(pb::SubmitProofResponse {
            job_id: e.wire_id.to_string(),
        }))
    }

    async fn await_proof(
        &self,
        req: Request<pb::AwaitProofRequest>,
    ) -> Result<Response<pb::AwaitProofResponse>, Status> {
        let e = self.job(&req.into_inner().job_id)?;
        let r = result(&e).await?;
        Ok(Response::new(response(&e, &r)))
    }

    async fn prove(
        &self,
        req: Request<pb::SubmitProofRequest>,
    ) -> Result<Response<pb::AwaitProofResponse>, Status> {
        let wire = crate::wire_size::of(&req);
        let e = self.submit(req.into_inner(), wire)?;
        let r = result(&e).await?;
        Ok(Response::new(response(&e, &r)))
    }

    async fn cancel_proof(
        &self,
        req: Request<pb::CancelProofRequest>,
    ) -> Result<Response<pb::CancelProofResponse>, Status> {
        let e = self.job(&req.into_inner().job_id)?;
        let before = e.snapshot().state;
        let after = self.service.jobs().cancel(e.id, "cancelled by request");
        let cancelled = !before.finished()
            && matches!(after, Some(JobState::Cancelled) | Some(JobState::Running));
        Ok(Response::new(pb::CancelProofResponse { cancelled }))
    }

    async fn get_status(
        &self,
        _req: Request<pb::GetStatusRequest>,
    ) -> Result<Response<pb::GetStatusResponse>, Status> {
        let jobs = self.service.jobs();
        let (queued, running) = jobs.list();
        let kinds = [
            ProofKind::PorepSealCommit,
            ProofKind::SnapDealsUpdate,
            ProofKind::WindowPostPartition,
            ProofKind::WinningPost,
            ProofKind::Unspecified,
        ];
        let queues = kinds
            .iter()
            .map(|&k| pb::QueueStatus {
                proof_kind: k as i32,
                pending: queued.iter().filter(|e| kind_of(&e.spec.work) == k).count() as u32,
                in_progress: running
                    .iter()
                    .filter(|e| kind_of(&e.spec.work) == k)
                    .count() as u32,
            })
            .collect();
        let engine = jobs.engine();
        let gpus = engine
            .devices()
            .iter()
            .zip(&jobs.device_partitions)
            .map(|(d, n)| {
                let info = engine.context().device_info(d.ordinal).ok();
                pb::GpuInfo {
                    ordinal: d.ordinal,
                    name: d.name.clone(),
                    total_memory_bytes: info.as_ref().map(|i| i.total_bytes).unwrap_or(0),
                    free_memory_bytes: info.as_ref().map(|i| i.free_bytes).unwrap_or(0),
                    partitions_proved: n.load(Ordering::Relaxed),
                    simulated: d.simulated,
                }
            })
            .collect();
        let mut loaded_srs: Vec<pb::LoadedSrs> = jobs
            .keys()
            .list()
            .into_iter()
            .map(|k| pb::LoadedSrs {
                circuit_id: k.name,
                size_bytes: k.bytes,
                pinned: k.pinned,
            })
            .collect();
        #[cfg(feature = "filecoin")]
        if let Some(f) = jobs.filecoin() {
            for p in f.loaded_keys() {
                loaded_srs.push(pb::LoadedSrs {
                    size_bytes: std::fs::metadata(&p).map(|m| m.len()).unwrap_or(0),
                    circuit_id: p.display().to_string(),
                    pinned: true,
                });
            }
        }
        let (used, budget, _) = jobs.keys().usage();
        Ok(Response::new(pb::GetStatusResponse {
            gpus,
            loaded_srs,
            queues,
            total_completed: jobs.metrics.done.load(Ordering::Relaxed),
            total_failed: jobs.metrics.failed.load(Ordering::Relaxed),
            uptime_seconds: self.started.elapsed().as_secs(),
            pinned_memory_bytes: used,
            pinned_memory_limit_bytes: budget,
        }))
    }

    async fn get_metrics(
        &self,
        _req: Request<pb::GetMetricsRequest>,
    ) -> Result<Response<pb::GetMetricsResponse>, Status> {
        Ok(Response::new(pb::GetMetricsResponse {
            prometheus_text: self.service.prometheus(),
        }))
    }

    async fn preload_srs(
        &self,
        req: Request<pb::PreloadSrsRequest>,
    ) -> Result<Response<pb::PreloadSrsResponse>, Status> {
        let r = req.into_inner();
        let (filecoin, params) = self.porep_key(r.proof_kind, r.sector_size, r.registered_proof)?;
        #[cfg(feature = "filecoin")]
        {
            let path = params.clone();
            let took = tokio::task::spawn_blocking(move || filecoin.preload(&path))
                .await
                .map_err(|e| Status::internal(e.to_string()))?
                .map_err(|e| Status::failed_precondition(e.to_string()))?;
            Ok(Response::new(pb::PreloadSrsResponse {
                circuit_id: params.display().to_string(),
                load_ms: took.as_millis() as u64,
                already_loaded: took.is_zero(),
            }))
        }
        #[cfg(not(feature = "filecoin"))]
        {
            let _ = (filecoin, params);
            unreachable!("porep_key refuses every request without the filecoin feature")
        }
    }

    async fn evict_srs(
        &self,
        req: Request<pb::EvictSrsRequest>,
    ) -> Result<Response<pb::EvictSrsResponse>, Status> {
        let r = req.into_inner();
        let (filecoin, params) = self.porep_key(r.proof_kind, r.sector_size, r.registered_proof)?;
        #[cfg(feature = "filecoin")]
        let evicted = filecoin.evict(&params);
        #[cfg(not(feature = "filecoin"))]
        let evicted = {
            let _ = filecoin;
            false
        };
        Ok(Response::new(pb::EvictSrsResponse {
            evicted,
            circuit_id: params.display().to_string(),
        }))
    }
}

#[cfg(feature = "filecoin")]
type FilecoinHandle = Arc<crate::filecoin::FilecoinJobs>;
#[cfg(not(feature = "filecoin"))]
type FilecoinHandle = ();

impl Cuzk {
    /// The params file of a PreloadSRS or EvictSRS request: POREP_SEAL_COMMIT
    /// by registered_proof, or by sector_size (V1_1) when it is 0.
    fn porep_key(
        &self,
        kind: i32,
        sector_size: u64,
        registered_proof: u64,
    ) -> Result<(FilecoinHandle, std::path::PathBuf), Status> {
        let kind = convert::proof_kind(kind).map_err(Status::invalid_argument)?;
        if kind != ProofKind::PorepSealCommit {
            return Err(Status::unimplemented(format!(
                "{} keys are not loaded by this daemon yet (POREP_SEAL_COMMIT's are)",
                kind.as_str_name()
            )));
        }
        #[cfg(feature = "filecoin")]
        {
            use cuda_prover_filecoin::{RegisteredSeal, SealVersion, SectorSize};
            let filecoin = self.service.jobs().filecoin_handle().ok_or_else(|| {
                Status::failed_precondition(
                    "this daemon takes no Filecoin jobs (started without them)",
                )
            })?;
            let bad = |e: String| Status::invalid_argument(e);
            let registered = if registered_proof != 0 {
                let r: RegisteredSeal = convert::registered_seal_name(registered_proof)
                    .map_err(bad)?
                    .parse()
                    .map_err(|e: cuda_prover_filecoin::FilecoinError| bad(e.to_string()))?;
                if sector_size != 0 && sector_size != r.size.bytes() {
                    return Err(bad(format!(
                        "sector_size {sector_size} disagrees with registered_proof {registered_proof} ({r})"
                    )));
                }
                r
            } else if sector_size != 0 {
                let size = SectorSize::new(sector_size).map_err(|e| bad(e.to_string()))?;
                RegisteredSeal::new(size, SealVersion::V1_1)
            } else {
                return Err(bad("name the key: registered_proof or sector_size".into()));
            };
            let params = filecoin
                .porep_params(registered)
                .map_err(|e| Status::failed_precondition(e.to_string()))?;
            Ok((filecoin, params))
        }
        #[cfg(not(feature = "filecoin"))]
        {
            let _ = (sector_size, registered_proof);
            Err(Status::unimplemented(
                "this daemon was built without Filecoin jobs (feature filecoin)",
            ))
        }
    }
}
