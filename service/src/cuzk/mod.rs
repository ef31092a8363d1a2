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
//!   sectors' vanilla proofs (`vanilla_proofs`, each filecoin-proofs-api's
//!   bincode `FallbackPoStSectorProof`) and the 32-byte `randomness`; a
//!   window partition is the one `partition_index` names, its answer that
//!   partition's proof.
//! - SNAP_DEALS_UPDATE: the update's vanilla partition proofs
//!   (`vanilla_proofs`, each a bincode `PartitionProof`) and the three
//!   commitments `comm_r_old`, `comm_r_new`, `comm_d_new` (32 bytes each,
//!   or binary CIDs).
//!
//! With `vanilla_proofs` empty, those kinds read the list from
//! `vanilla_proof` as a JSON array of base64 strings.
//! The sector size comes from `registered_proof` (the network's numbers of
//! the kind) or `sector_size`. Malformed inputs are INVALID_ARGUMENT at
//! submission, and nothing is queued.
//!
//! `request_id` is an idempotency key: a request whose id names a job this
//! daemon knows answers with that job (ALREADY_EXISTS when its inputs
//! differ from the first request's).

pub mod convert;

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use tonic::{Request, Response, Status};

use crate::cuzk_proto::proving_engine_server::ProvingEngine;
use crate::cuzk_proto::{
    self as pb, await_proof_response::Status as AwaitStatus, srs_status::Tier as SrsTier, ProofKind,
};
use crate::job_id::JobId;
use crate::jobs::{JobEntry, JobResult, JobState, Work};
use crate::server::{shown_id, Service};

/// The longest request id kept (Curio's are UUIDs or task ids).
pub use crate::requests::MAX_REQUEST_ID_BYTES;

/// The cuzk.v1 service over the daemon's [`Service`].
pub struct Cuzk {
    service: Arc<Service>,
    started: Instant,
}

impl Cuzk {
    pub fn new(service: Arc<Service>) -> Arc<Self> {
        Arc::new(Self {
            service,
            started: Instant::now(),
        })
    }

    /// The job of a request: the known one for its request id (the
    /// daemon's request ids of this API, read back from its journal after
    /// a restart), or a new one.
    fn submit(
        &self,
        r: pb::SubmitProofRequest,
        wire: Option<usize>,
    ) -> Result<Arc<JobEntry>, Status> {
        let kind = convert::proof_kind(r.proof_kind).map_err(Status::invalid_argument)?;
        crate::requests::check_id(&r.request_id)?;
        let digest = digest(&r);
        self.service.requests().submit(
            self.service.jobs(),
            crate::requests::Api::Cuzk,
            &r.request_id,
            digest,
            || self.filecoin_spec(&r, kind, wire),
            |spec| self.service.submit_spec(spec),
        )
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
                        vanilla_proofs: vanillas(r).map_err(bad)?,
                        partition_index: r.partition_index,
                    })
                }
                ProofKind::SnapDealsUpdate => {
                    use convert::{commitment_of_cid, SEALED, UNSEALED};
                    let sector_size = convert::snap_sector_size(r.registered_proof, r.sector_size)
                        .map_err(bad)?;
                    let comm_r_old =
                        commitment_of_cid(&r.comm_r_old, "comm_r_old", SEALED).map_err(bad)?;
                    let comm_r_new =
                        commitment_of_cid(&r.comm_r_new, "comm_r_new", SEALED).map_err(bad)?;
                    let comm_d_new =
                        commitment_of_cid(&r.comm_d_new, "comm_d_new", UNSEALED).map_err(bad)?;
                    Job::FilecoinSnap(crate::proto::FilecoinSnapJob {
                        sector_size,
                        vanilla_proofs: vanillas(r).map_err(bad)?,
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
            Ok(self.service.journaled_spec(req, wire)?)
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
        let jobs = self.service.jobs();
        if let Some(e) = jobs.get_wire(&wire) {
            return Ok(e);
        }
        self.service.requests().find(jobs, &wire).ok_or_else(|| {
            Status::not_found(format!("no job {} (unknown, or forgotten)", shown_id(id)))
        })
    }
}

/// The vanilla proofs of a PoSt or SnapDeals request: `vanilla_proofs`,
/// or, when that is empty, the JSON array of base64 strings in
/// `vanilla_proof`.
#[cfg(feature = "filecoin")]
fn vanillas(r: &pb::SubmitProofRequest) -> Result<Vec<Vec<u8>>, String> {
    if !r.vanilla_proofs.is_empty() {
        return Ok(r.vanilla_proofs.clone());
    }
    if r.vanilla_proof.is_empty() {
        return Err(
            "vanilla_proofs is empty (and so is vanilla_proof): this proof kind \
                    takes its vanilla proofs there"
                .into(),
        );
    }
    convert::vanilla_list(&r.vanilla_proof)
}

/// A digest of everything a request asks for but its id: a repeated id
/// with other inputs is a client's mistake, not the same job. FNV-1a over
/// the fields (each with its length), so that a digest the journal kept
/// means the same to a later build of the daemon.
fn digest(r: &pb::SubmitProofRequest) -> u64 {
    let mut h = crate::requests::Fnv::default();
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
        &r.comm_r_old,
        &r.comm_r_new,
        &r.comm_d_new,
    ] {
        h.bytes(b);
    }
    // Only when present, so that a request without the list keeps the
    // digest earlier builds journaled.
    if !r.vanilla_proofs.is_empty() {
        h.u64(r.vanilla_proofs.len() as u64);
        r.vanilla_proofs.iter().for_each(|b| h.bytes(b));
    }
    h.finish()
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

/// The kinds GetStatus lists a queue of, in its order.
const QUEUE_KINDS: [ProofKind; 5] = [
    ProofKind::PorepSealCommit,
    ProofKind::SnapDealsUpdate,
    ProofKind::WindowPostPartition,
    ProofKind::WinningPost,
    ProofKind::Unspecified,
];

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digests_see_every_input() {
        // (The digest is FNV-1a: `requests`' tests check it.)
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
        let listed = pb::SubmitProofRequest {
            vanilla_proofs: vec![b"v".to_vec()],
            ..r.clone()
        };
        let listed_other = pb::SubmitProofRequest {
            vanilla_proofs: vec![b"w".to_vec()],
            ..r.clone()
        };
        assert_ne!(digest(&r), digest(&listed));
        assert_ne!(digest(&listed), digest(&listed_other));
    }
}

/// cuzk.v1 on the wire: messages as Curio's Go client builds them, their
/// bytes written out by hand from the field numbers and types of cuzk's
/// proto (fields in number order, as both protobuf runtimes emit them).
#[cfg(test)]
mod wire {
    use super::pb;
    use prost::Message;

    /// A length-delimited field: its tag, the length as a varint (one
    /// byte under 128, two under 16,384) and the bytes.
    fn field(tag: &[u8], body: &[u8]) -> Vec<u8> {
        let n = body.len();
        assert!(n < 1 << 14);
        let mut out = tag.to_vec();
        if n < 128 {
            out.push(n as u8);
        } else {
            out.extend([(n & 0x7f) as u8 | 0x80, (n >> 7) as u8]);
        }
        out.extend_from_slice(body);
        out
    }

    /// Decodes `bytes` as `M`, checks it is `expected`, and that encoding
    /// it gives the same bytes back.
    fn both_ways<M: Message + Default + PartialEq + std::fmt::Debug>(bytes: &[u8], expected: &M) {
        let decoded = M::decode(bytes).expect("decodes");
        assert_eq!(&decoded, expected);
        assert_eq!(expected.encode_to_vec(), bytes, "{expected:?}");
    }

    #[test]
    fn a_prove_request_as_curio_sends_it() {
        let mut inner = Vec::new();
        inner.extend(field(&[0x0a], b"snap-1000-7")); // 1 request_id
        inner.extend([0x10, 0x02]); // 2 proof_kind SNAP_DEALS_UPDATE
        inner.extend([0x18, 0x80, 0x10]); // 3 sector_size 2048
        inner.extend([0x20, 0x05]); // 4 registered_proof 5
        inner.extend([0x28, 0x02]); // 5 priority NORMAL
        inner.extend(field(&[0x52], b"{}")); // 10 vanilla_proof
        inner.extend(field(&[0x5a], b"a")); // 11 vanilla_proofs[0]
        inner.extend(field(&[0x5a], b"bc")); // 11 vanilla_proofs[1]
        inner.extend([0xa0, 0x01, 0x07]); // 20 sector_number 7
        inner.extend([0xa8, 0x01, 0xe8, 0x07]); // 21 miner_id 1000
        inner.extend(field(&[0xb2, 0x01], &[1, 2])); // 22 randomness
        inner.extend([0xb8, 0x01, 0x03]); // 23 partition_index 3
        inner.extend(field(&[0xf2, 0x01], &[0xaa; 32])); // 30 comm_r_old
        inner.extend(field(&[0xfa, 0x01], &[0xbb; 32])); // 31 comm_r_new
        inner.extend(field(&[0x82, 0x02], &[0xcc; 32])); // 32 comm_d_new
        assert_eq!(inner.len(), 153);
        let bytes = field(&[0x0a], &inner); // ProveRequest 1 submit
        assert_eq!(&bytes[..3], &[0x0a, 0x99, 0x01]);
        let expected = pb::ProveRequest {
            submit: Some(pb::SubmitProofRequest {
                request_id: "snap-1000-7".into(),
                proof_kind: pb::ProofKind::SnapDealsUpdate as i32,
                sector_size: 2048,
                registered_proof: 5,
                priority: pb::Priority::Normal as i32,
                vanilla_proof: b"{}".to_vec(),
                vanilla_proofs: vec![b"a".to_vec(), b"bc".to_vec()],
                sector_number: 7,
                miner_id: 1000,
                randomness: vec![1, 2],
                partition_index: 3,
                comm_r_old: vec![0xaa; 32],
                comm_r_new: vec![0xbb; 32],
                comm_d_new: vec![0xcc; 32],
            }),
        };
        both_ways(&bytes, &expected);
    }

    #[test]
    fn the_answers_curio_reads() {
        // ProveResponse { result: AwaitProofResponse }.
        let mut inner = Vec::new();
        inner.extend(field(&[0x0a], b"j")); // 1 job_id
        inner.extend([0x10, 0x01]); // 2 status COMPLETED
        inner.extend(field(&[0x1a], &[1, 2, 3])); // 3 proof
        inner.extend(field(&[0x22], b"e")); // 4 error_message
        inner.extend([0x50, 0x05]); // 10 queue_wait_ms
        inner.extend([0x58, 0x06]); // 11 srs_load_ms
        inner.extend([0x60, 0x07]); // 12 synthesis_ms
        inner.extend([0x68, 0x08]); // 13 gpu_compute_ms
        inner.extend([0x70, 0xac, 0x02]); // 14 total_ms 300
        both_ways(
            &field(&[0x0a], &inner),
            &pb::ProveResponse {
                result: Some(pb::AwaitProofResponse {
                    job_id: "j".into(),
                    status: super::AwaitStatus::Completed as i32,
                    proof: vec![1, 2, 3],
                    error_message: "e".into(),
                    queue_wait_ms: 5,
                    srs_load_ms: 6,
                    synthesis_ms: 7,
                    gpu_compute_ms: 8,
                    total_ms: 300,
                }),
            },
        );

        // GetStatusResponse with a device, a key and a queue.
        let mut gpu = vec![0x08, 0x01]; // 1 ordinal
        gpu.extend(field(&[0x12], b"g")); // 2 name
        gpu.extend([0x18, 0x10, 0x20, 0x08]); // 3 vram_total 16, 4 vram_free 8
        gpu.extend(field(&[0x2a], b"x")); // 5 current_job_id
        gpu.extend(field(&[0x32], b"porep-c2")); // 6 current_proof_kind
        let mut srs = field(&[0x0a], b"porep-2k"); // 1 circuit_id
        srs.extend([0x10, 0x01, 0x18, 0x64, 0x20, 0x02]); // 2 WARM, 3 100, 4 2
        let mut queue = field(&[0x0a], b"porep-c2"); // 1 proof_kind (a string)
        queue.extend([0x10, 0x02, 0x18, 0x01]); // 2 pending, 3 in_progress
        let mut status = field(&[0x0a], &gpu);
        status.extend(field(&[0x12], &srs));
        status.extend(field(&[0x1a], &queue));
        // 4 completed, 5 failed, 6 uptime, 7 pinned, 8 limit.
        status.extend([0x20, 0x05, 0x28, 0x01, 0x30, 0x09, 0x38, 0x0a, 0x40, 0x0b]);
        both_ways(
            &status,
            &pb::GetStatusResponse {
                gpus: vec![pb::GpuStatus {
                    ordinal: 1,
                    name: "g".into(),
                    vram_total_bytes: 16,
                    vram_free_bytes: 8,
                    current_job_id: "x".into(),
                    current_proof_kind: "porep-c2".into(),
                }],
                loaded_srs: vec![pb::SrsStatus {
                    circuit_id: "porep-2k".into(),
                    tier: super::SrsTier::Warm as i32,
                    size_bytes: 100,
                    ref_count: 2,
                }],
                queues: vec![pb::QueueStatus {
                    proof_kind: "porep-c2".into(),
                    pending: 2,
                    in_progress: 1,
                }],
                total_proofs_completed: 5,
                total_proofs_failed: 1,
                uptime_seconds: 9,
                pinned_memory_bytes: 10,
                pinned_memory_limit_bytes: 11,
            },
        );
    }

    #[test]
    fn the_other_messages() {
        let mut b = field(&[0x0a], b"j");
        b.extend([0x10, 0xe8, 0x07]); // 2 timeout_ms 1000
        both_ways(
            &b,
            &pb::AwaitProofRequest {
                job_id: "j".into(),
                timeout_ms: 1000,
            },
        );
        let mut b = field(&[0x0a], b"j");
        b.extend([0x10, 0x03]); // 2 queue_position
        b.extend(field(&[0x1a], b"0")); // 3 assigned_gpu
        both_ways(
            &b,
            &pb::SubmitProofResponse {
                job_id: "j".into(),
                queue_position: 3,
                assigned_gpu: "0".into(),
            },
        );
        both_ways(
            &field(&[0x0a], b"j"),
            &pb::CancelProofRequest { job_id: "j".into() },
        );
        both_ways(
            &[0x08, 0x01],
            &pb::CancelProofResponse { was_running: true },
        );
        both_ways(
            &field(&[0x0a], b"porep-32g"),
            &pb::PreloadSrsRequest {
                circuit_id: "porep-32g".into(),
            },
        );
        both_ways(
            &[0x08, 0x01, 0x10, 0xac, 0x02],
            &pb::PreloadSrsResponse {
                already_loaded: true,
                load_time_ms: 300,
            },
        );
        both_ways(
            &field(&[0x0a], b"snap-32g"),
            &pb::EvictSrsRequest {
                circuit_id: "snap-32g".into(),
            },
        );
        both_ways(
            &[0x08, 0x01, 0x10, 0xac, 0x02],
            &pb::EvictSrsResponse {
                was_loaded: true,
                freed_bytes: 300,
            },
        );
        both_ways(
            &field(&[0x0a], b"m 1\n"),
            &pb::GetMetricsResponse {
                prometheus_text: "m 1\n".into(),
            },
        );
    }

    #[test]
    fn the_service_is_cuzks() {
        use tonic::server::NamedService;
        assert_eq!(
            <crate::cuzk_proto::proving_engine_server::ProvingEngineServer<
                std::sync::Arc<super::Cuzk>,
            > as NamedService>::NAME,
            "cuzk.v1.ProvingEngine"
        );
        // The gRPC paths Curio's stubs call.
        let generated = include_str!(concat!(env!("OUT_DIR"), "/cuzk.v1.rs"));
        for method in [
            "SubmitProof",
            "AwaitProof",
            "Prove",
            "CancelProof",
            "GetStatus",
            "GetMetrics",
            "PreloadSRS",
            "EvictSRS",
        ] {
            let path = format!("\"/cuzk.v1.ProvingEngine/{method}\"");
            assert!(generated.contains(&path), "{path}");
        }
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
            queue_position: self.queue_position(&e),
            assigned_gpu: String::new(),
        }))
    }

    async fn await_proof(
        &self,
        req: Request<pb::AwaitProofRequest>,
    ) -> Result<Response<pb::AwaitProofResponse>, Status> {
        let r = req.into_inner();
        let e = self.job(&r.job_id)?;
        if r.timeout_ms == 0 {
            let done = result(&e).await?;
            return Ok(Response::new(response(&e, &done)));
        }
        let wait = std::time::Duration::from_millis(r.timeout_ms);
        match tokio::time::timeout(wait, result(&e)).await {
            Ok(done) => {
                let done = done?;
                Ok(Response::new(response(&e, &done)))
            }
            Err(_) => Ok(Response::new(pb::AwaitProofResponse {
                job_id: e.wire_id.to_string(),
                status: AwaitStatus::Timeout as i32,
                error_message: format!(
                    "job {} has not ended after {} ms; it goes on",
                    e.wire_id, r.timeout_ms
                ),
                ..Default::default()
            })),
        }
    }

    async fn prove(
        &self,
        req: Request<pb::ProveRequest>,
    ) -> Result<Response<pb::ProveResponse>, Status> {
        let wire = crate::wire_size::of(&req);
        let submit = req.into_inner().submit.ok_or_else(|| {
            Status::invalid_argument("ProveRequest has no submit (the SubmitProofRequest)")
        })?;
        let e = self.submit(submit, wire)?;
        let r = result(&e).await?;
        Ok(Response::new(pb::ProveResponse {
            result: Some(response(&e, &r)),
        }))
    }

    async fn cancel_proof(
        &self,
        req: Request<pb::CancelProofRequest>,
    ) -> Result<Response<pb::CancelProofResponse>, Status> {
        let e = self.job(&req.into_inner().job_id)?;
        let before = e.snapshot().state;
        let after = self
            .service
            .jobs()
            .cancel(e.id, crate::jobs::CancelReason::Request);
        let was_running = !before.finished() && after == Some(JobState::Running);
        Ok(Response::new(pb::CancelProofResponse { was_running }))
    }

    async fn get_status(
        &self,
        _req: Request<pb::GetStatusRequest>,
    ) -> Result<Response<pb::GetStatusResponse>, Status> {
        let jobs = self.service.jobs();
        let (queued, running) = jobs.list();
        let queues = QUEUE_KINDS
            .iter()
            .map(|&k| pb::QueueStatus {
                proof_kind: convert::queue_name(k).to_string(),
                pending: queued.iter().filter(|e| kind_of(&e.spec.work) == k).count() as u32,
                in_progress: running
                    .iter()
                    .filter(|e| kind_of(&e.spec.work) == k)
                    .count() as u32,
            })
            .collect();
        // Every device serves every running job's partitions.
        let current_job_id = running
            .iter()
            .map(|e| e.wire_id.to_string())
            .collect::<Vec<_>>()
            .join(",");
        let mut running_kinds: Vec<&str> = running
            .iter()
            .map(|e| convert::queue_name(kind_of(&e.spec.work)))
            .collect();
        running_kinds.dedup();
        let current_proof_kind = running_kinds.join(",");
        let engine = jobs.engine();
        let gpus = engine
            .devices()
            .iter()
            .map(|d| {
                let info = engine.context().device_info(d.ordinal).ok();
                pb::GpuStatus {
                    ordinal: d.ordinal,
                    name: d.name.clone(),
                    vram_total_bytes: info.as_ref().map(|i| i.total_bytes).unwrap_or(0),
                    vram_free_bytes: info.as_ref().map(|i| i.free_bytes).unwrap_or(0),
                    current_job_id: current_job_id.clone(),
                    current_proof_kind: current_proof_kind.clone(),
                }
            })
            .collect();
        let tier = |pinned: bool| {
            if pinned {
                SrsTier::Hot
            } else {
                SrsTier::Warm
            }
        };
        // Filecoin keys are listed below, by their circuit ids.
        #[cfg_attr(not(feature = "filecoin"), allow(unused_mut))]
        let mut loaded_srs: Vec<pb::SrsStatus> = jobs
            .keys()
            .list_built_in()
            .into_iter()
            .map(|k| pb::SrsStatus {
                circuit_id: k.name,
                tier: tier(k.pinned) as i32,
                size_bytes: k.bytes,
                ref_count: 0,
            })
            .collect();
        #[cfg(feature = "filecoin")]
        if let Some(f) = jobs.filecoin() {
            for (id, p) in f.loaded_key_ids() {
                loaded_srs.push(pb::SrsStatus {
                    size_bytes: std::fs::metadata(&p).map(|m| m.len()).unwrap_or(0),
                    circuit_id: id,
                    tier: SrsTier::Hot as i32,
                    ref_count: 0,
                });
            }
        }
        let usage = jobs.keys().usage();
        let (used, budget) = (usage.used, usage.budget);
        Ok(Response::new(pb::GetStatusResponse {
            gpus,
            loaded_srs,
            queues,
            total_proofs_completed: jobs.metrics.done.load(Ordering::Relaxed),
            total_proofs_failed: jobs.metrics.failed.load(Ordering::Relaxed),
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
        let (filecoin, params) = self.filecoin_key(&r.circuit_id, false)?;
        #[cfg(feature = "filecoin")]
        {
            let took = tokio::task::spawn_blocking(move || filecoin.preload(&params))
                .await
                .map_err(|e| Status::internal(e.to_string()))?
                .map_err(crate::errors::ServiceError::Filecoin)?;
            // A load that happened shows at least 1 ms: 0 is "loaded
            // already" only.
            Ok(Response::new(pb::PreloadSrsResponse {
                already_loaded: took.is_zero(),
                load_time_ms: took.as_micros().div_ceil(1000) as u64,
            }))
        }
        #[cfg(not(feature = "filecoin"))]
        {
            let _ = (filecoin, params);
            unreachable!("filecoin_key refuses every request without the filecoin feature")
        }
    }

    async fn evict_srs(
        &self,
        req: Request<pb::EvictSrsRequest>,
    ) -> Result<Response<pb::EvictSrsResponse>, Status> {
        let r = req.into_inner();
        let (filecoin, params) = self.filecoin_key(&r.circuit_id, true)?;
        #[cfg(feature = "filecoin")]
        let (was_loaded, freed_bytes) = {
            let size = std::fs::metadata(&params).map(|m| m.len()).unwrap_or(0);
            let was_loaded = filecoin.evict(&params);
            (was_loaded, if was_loaded { size } else { 0 })
        };
        #[cfg(not(feature = "filecoin"))]
        let (was_loaded, freed_bytes) = {
            let _ = (filecoin, params);
            (false, 0)
        };
        Ok(Response::new(pb::EvictSrsResponse {
            was_loaded,
            freed_bytes,
        }))
    }
}

#[cfg(feature = "filecoin")]
type FilecoinHandle = Arc<crate::filecoin::FilecoinJobs>;
#[cfg(not(feature = "filecoin"))]
type FilecoinHandle = ();

impl Cuzk {
    /// Jobs ahead of a queued job (0 once it runs or ended).
    fn queue_position(&self, e: &Arc<JobEntry>) -> u32 {
        let (queued, _) = self.service.jobs().list();
        queued.iter().position(|q| Arc::ptr_eq(q, e)).unwrap_or(0) as u32
    }

    /// The params file a PreloadSRS or EvictSRS circuit id names: a key as
    /// `<kind>-<size>` (`porep-32g`, `snap-32g`, `wpost-32g`,
    /// `winning-32g`, as GetStatus lists it) or a seal proof's name; for
    /// EvictSRS also a params file whose key is loaded (as cuda_prover.v1's
    /// Status lists it).
    fn filecoin_key(
        &self,
        circuit_id: &str,
        loaded_path: bool,
    ) -> Result<(FilecoinHandle, std::path::PathBuf), Status> {
        let circuit = convert::circuit(circuit_id).map_err(Status::invalid_argument)?;
        #[cfg(feature = "filecoin")]
        {
            use crate::filecoin::FilecoinKey;
            use convert::{Circuit, KeyKind};
            use cuda_prover_filecoin::{FilecoinError, RegisteredSeal, SealVersion, SectorSize};
            let filecoin = self.service.jobs().filecoin_handle().ok_or_else(|| {
                Status::failed_precondition(
                    "this daemon takes no Filecoin jobs (started without them)",
                )
            })?;
            let bad = |e: String| Status::invalid_argument(e);
            let key = match circuit {
                Circuit::Key(kind, bytes) => {
                    let size = SectorSize::new(bytes)
                        .map_err(|e| bad(format!("circuit_id '{}': {e}", shown_id(circuit_id))))?;
                    match kind {
                        KeyKind::Porep => {
                            FilecoinKey::Porep(RegisteredSeal::new(size, SealVersion::V1_1))
                        }
                        KeyKind::SnapDeals => FilecoinKey::SnapDeals(size),
                        KeyKind::WindowPost => FilecoinKey::WindowPost(size),
                        KeyKind::WinningPost => FilecoinKey::WinningPost(size),
                    }
                }
                Circuit::Named(name) => match name.parse() {
                    Ok(r) => FilecoinKey::Porep(r),
                    Err(e) => {
                        let e: FilecoinError = e;
                        let path = std::path::PathBuf::from(&name);
                        if loaded_path && filecoin.loaded_keys().contains(&path) {
                            return Ok((filecoin, path));
                        }
                        return Err(bad(format!(
                            "circuit_id '{}' is neither {} nor a seal proof's name ({e})",
                            shown_id(&name),
                            convert::CIRCUIT_FORMS
                        )));
                    }
                },
            };
            // A size the kind's proofs do not have is the client's error.
            let params = filecoin.params_of(key).map_err(|e| match e {
                FilecoinError::SectorSize(m) => {
                    bad(format!("circuit_id '{}': {m}", shown_id(circuit_id)))
                }
                e => Status::failed_precondition(format!("{key}: {e}")),
            })?;
            Ok((filecoin, params))
        }
        #[cfg(not(feature = "filecoin"))]
        {
            let _ = (circuit, loaded_path);
            Err(Status::unimplemented(
                "this daemon was built without Filecoin jobs (feature filecoin)",
            ))
        }
    }
}
