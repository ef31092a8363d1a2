//! The cuzk.v1 API (what Curio's cuzk client calls) over a unix socket:
//! Prove of a 2 KiB C2 in Curio's C1 wrapper returns a proof that
//! filecoin-proofs' `verify_seal` accepts, with its timings; GetStatus
//! counts the job under POREP_SEAL_COMMIT while it runs; a request id is
//! one job; a queued job and a running one cancel; unknown kinds and bad
//! inputs are clear gRPC statuses and queue nothing; jobs survive kill -9,
//! and a damaged journal is set aside. Host backend, 2 KiB TEST parameters.
#![cfg(feature = "filecoin")]

use crate::common;

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::Duration;

use common::filecoin::{seal_for_miner, test_params, MINER, REGISTERED_2KIB_V1_1};
use common::process::{serve_cmd, try_spawn, ChildDaemon};
use common::{cuzk_client, job, prove_request, slow_partitions, start_unix, temp_dir};
use cuda_prover_filecoin::sealing::{verify_commit, SealedSector};
use cuda_prover_filecoin::test_c1::wrapper::wrap;
use cuda_prover_filecoin::test_params::TestCircuit;
use cuda_prover_filecoin::SectorSize;
use cuda_prover_service::cuzk_proto as pb;
use cuda_prover_service::cuzk_proto::await_proof_response::Status as AwaitStatus;
use cuda_prover_service::cuzk_proto::proving_engine_client::ProvingEngineClient;
use cuda_prover_service::cuzk_proto::ProofKind;
use tonic::transport::Channel;

/// The 2 KiB C2 TEST parameters.
fn c2_params() -> PathBuf {
    test_params(&[TestCircuit::Porep(SectorSize::KIB_2)])
}

/// A 2 KiB sector sealed for the miner's prover id, once per test binary.
fn sealed() -> &'static SealedSector {
    static S: OnceLock<SealedSector> = OnceLock::new();
    S.get_or_init(|| seal_for_miner(11))
}

/// A C2 request as Curio sends it: the C1 output in its wrapper.
fn c2_request(request_id: &str) -> pb::SubmitProofRequest {
    let s = sealed();
    pb::SubmitProofRequest {
        request_id: request_id.into(),
        proof_kind: ProofKind::PorepSealCommit as i32,
        sector_size: 2048,
        registered_proof: REGISTERED_2KIB_V1_1,
        priority: pb::Priority::Normal as i32,
        vanilla_proof: wrap(&s.c1_json, s.sector_id, SectorSize::KIB_2).unwrap(),
        sector_number: s.sector_id,
        miner_id: MINER,
        ..Default::default()
    }
}

async fn open_jobs(cl: &mut ProvingEngineClient<Channel>) -> (u32, u32) {
    let st = cl
        .get_status(pb::GetStatusRequest {})
        .await
        .unwrap()
        .into_inner();
    let c2 = st
        .queues
        .iter()
        .find(|q| q.proof_kind == "porep-c2")
        .map(|q| (q.pending, q.in_progress))
        .unwrap();
    let all: u32 = st.queues.iter().map(|q| q.pending + q.in_progress).sum();
    assert_eq!(all, c2.0 + c2.1, "only C2 jobs were submitted: {st:?}");
    c2
}

fn socket_path(addr: &str) -> PathBuf {
    PathBuf::from(addr.strip_prefix("unix://").unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn prove_over_the_unix_socket_returns_a_verified_c2_and_status_counts_it() {
    let s = sealed();
    let mut d = start_unix(2, |c| c.filecoin_test_params = Some(c2_params())).await;
    let path = socket_path(&d.addr);
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o660, "the socket file's default mode");
    let mut cl = cuzk_client(&d.addr).await;

    // While a slowed job runs, GetStatus counts it under POREP_SEAL_COMMIT.
    slow_partitions(&d.ctx, 2, Duration::from_millis(400));
    let prove = {
        let mut cl = cl.clone();
        tokio::spawn(async move { cl.prove(prove_request(c2_request(""))).await })
    };
    let mut seen = false;
    for _ in 0..200 {
        let (pending, running) = open_jobs(&mut cl).await;
        if pending + running == 1 {
            seen = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(seen, "GetStatus never counted the running C2");
    // While it runs, every device names it.
    let st = cl
        .get_status(pb::GetStatusRequest {})
        .await
        .unwrap()
        .into_inner();
    if st
        .queues
        .iter()
        .any(|q| q.proof_kind == "porep-c2" && q.in_progress == 1)
    {
        assert!(
            st.gpus
                .iter()
                .all(|g| g.current_proof_kind == "porep-c2" && g.current_job_id.len() == 32),
            "{:?}",
            st.gpus
        );
    }
    let r = prove.await.unwrap().unwrap().into_inner().result.unwrap();
    assert_eq!(
        r.status,
        AwaitStatus::Completed as i32,
        "{}",
        r.error_message
    );
    assert!(r.error_message.is_empty());
    assert_eq!(r.job_id.len(), 32);
    assert!(
        verify_commit(s, &r.proof).unwrap(),
        "verify_seal rejected the proof"
    );
    let mut bad = r.proof.clone();
    bad[7] ^= 1;
    assert!(!verify_commit(s, &bad).unwrap_or(false));
    // Timings from the job's report: the device part of the slowed
    // partition, within the total.
    assert!(r.gpu_compute_ms >= 400, "{r:?}");
    assert!(r.synthesis_ms > 0, "{r:?}");
    assert!(
        r.total_ms >= r.queue_wait_ms + r.gpu_compute_ms / 2,
        "{r:?}"
    );

    let st = cl
        .get_status(pb::GetStatusRequest {})
        .await
        .unwrap()
        .into_inner();
    assert_eq!(open_jobs(&mut cl).await, (0, 0));
    for k in ["porep-c2", "snap-update", "window-post", "winning-post"] {
        assert!(
            st.queues.iter().any(|q| q.proof_kind == k),
            "queue of kind {k}"
        );
    }
    assert_eq!(st.gpus.len(), 2);
    assert!(
        st.gpus
            .iter()
            .all(|g| g.current_job_id.is_empty() && g.current_proof_kind.is_empty()),
        "{:?}",
        st.gpus
    );
    // Partitions per device are in the metrics (GPUStatus has no field
    // for them).
    let partitions = s.registered.porep_config().unwrap().partitions.0 as u64;
    let metrics = cl
        .get_metrics(pb::GetMetricsRequest {})
        .await
        .unwrap()
        .into_inner()
        .prometheus_text;
    let proved: u64 = metrics
        .lines()
        .filter(|l| l.starts_with("cuda_prover_service_device_partitions_total{"))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
        .sum();
    assert_eq!(proved, partitions, "{metrics}");
    // The key the job loaded is listed by the id PreloadSRS / EvictSRS
    // take (cuzk's `porep-2k`, not its params file), which our own Status
    // lists with the params file.
    let listed = st
        .loaded_srs
        .iter()
        .find(|k| k.size_bytes > 0 && k.tier == pb::srs_status::Tier::Hot as i32)
        .unwrap_or_else(|| panic!("{:?}", st.loaded_srs));
    assert_eq!(listed.circuit_id, "porep-2k", "{:?}", st.loaded_srs);
    let v1_status = common::client(&d).await.status().await.unwrap();
    assert_eq!(v1_status.filecoin_keys.len(), 1, "{v1_status:?}");
    let fk = &v1_status.filecoin_keys[0];
    assert_eq!(fk.circuit_id, "porep-2k");
    assert!(fk.params_file.ends_with(".params"), "{fk:?}");
    assert_eq!(
        std::fs::metadata(&fk.params_file).unwrap().len(),
        listed.size_bytes
    );
    assert_eq!(st.total_proofs_completed, 1);
    assert_eq!(st.total_proofs_failed, 0);

    // PreloadSRS / EvictSRS name the C2 key as cuzk does.
    let preload = |id: &str| pb::PreloadSrsRequest {
        circuit_id: id.into(),
    };
    let evict = |id: &str| pb::EvictSrsRequest {
        circuit_id: id.into(),
    };
    let p = cl
        .preload_srs(preload("porep-2k"))
        .await
        .unwrap()
        .into_inner();
    assert!(p.already_loaded, "{p:?}");
    // GetStatus's id round-trips: EvictSRS of it drops that key.
    let e = cl
        .evict_srs(evict(&listed.circuit_id))
        .await
        .unwrap()
        .into_inner();
    assert!(e.was_loaded && e.freed_bytes == listed.size_bytes, "{e:?}");
    let after = cl
        .get_status(pb::GetStatusRequest {})
        .await
        .unwrap()
        .into_inner();
    assert!(
        !after.loaded_srs.iter().any(|k| k.circuit_id == "porep-2k"),
        "{:?}",
        after.loaded_srs
    );
    let e = cl
        .evict_srs(evict("StackedDrg2KiBV1_1"))
        .await
        .unwrap()
        .into_inner();
    assert!(!e.was_loaded && e.freed_bytes == 0, "{e:?}");
    let p = cl
        .preload_srs(preload("porep-2k"))
        .await
        .unwrap()
        .into_inner();
    assert!(!p.already_loaded, "{p:?}");
    // The other kinds' ids name their keys (tests/cuzk_kinds.rs); a size
    // without TEST parameters has no file to load.
    let e = cl.preload_srs(preload("snap-64g")).await.unwrap_err();
    assert_eq!(e.code(), tonic::Code::FailedPrecondition, "{e:?}");
    let e = cl.preload_srs(preload("porep-2t")).await.unwrap_err();
    assert_eq!(e.code(), tonic::Code::InvalidArgument, "{e:?}");

    // The cuda_prover.v1 API is served on the same socket.
    let v1 = common::client(&d).await;
    assert!(v1.status().await.unwrap().queued.is_empty());

    // The socket file goes with the server.
    d.stop_serving();
    for _ in 0..100 {
        if !path.exists() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(!path.exists(), "{} left behind", path.display());
}

/// Cancel of a running job: a C2 job that a runner took, whose partition
/// waits its turn behind a more urgent job's partitions (the engine's
/// priority gate; the urgent job has a minute of them), stops on
/// CancelProof: CANCELLED with the reason and no proof, while the urgent
/// job still had partitions to take (so the C2's partition was never
/// proved); the urgent job keeps running, and a later C2 proves.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn cancel_of_a_running_job() {
    let s = sealed();
    let d = start_unix(1, |c| {
        c.filecoin_test_params = Some(c2_params());
        c.max_running = 2;
    })
    .await;
    let own = cuda_prover_service::Client::connect(&d.addr, None)
        .await
        .unwrap();
    let mut cl = cuzk_client(&d.addr).await;
    // The urgent job's key first, so that its partitions flow at once.
    own.preload(common::built_in_key("chain", 7)).await.unwrap();
    const URGENT: u32 = 600;
    slow_partitions(&d.ctx, URGENT as i64, Duration::from_millis(100));
    let urgent = own.submit(job("chain", 7, URGENT, 1, 1000)).await.unwrap();
    let urgent_done = |st: &cuda_prover_service::proto::StatusReply| {
        st.running
            .iter()
            .find(|j| j.job_id == urgent)
            .map(|j| j.done)
    };
    let t = std::time::Instant::now();
    while urgent_done(&own.status().await.unwrap()).unwrap_or(0) < 1 {
        assert!(
            t.elapsed() < Duration::from_secs(60),
            "the urgent job never ran"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let c2 = cl
        .submit_proof(c2_request("running"))
        .await
        .unwrap()
        .into_inner();
    let running = |st: &pb::GetStatusResponse| {
        st.queues
            .iter()
            .find(|q| q.proof_kind == "porep-c2")
            .map(|q| q.in_progress)
            .unwrap_or(0)
    };
    loop {
        let st = cl.get_status(pb::GetStatusRequest {}).await.unwrap();
        if running(&st.into_inner()) == 1 {
            break;
        }
        assert!(
            t.elapsed() < Duration::from_secs(60),
            "the C2 job never ran"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let c = cl
        .cancel_proof(pb::CancelProofRequest {
            job_id: c2.job_id.clone(),
        })
        .await
        .unwrap()
        .into_inner();
    assert!(c.was_running, "a running job cancels");
    let left = urgent_done(&own.status().await.unwrap());
    assert!(
        left.is_some_and(|done| done + 3 <= URGENT),
        "the urgent job had partitions left when the C2 was cancelled: {left:?} of {URGENT} \
         done"
    );
    let r = cl
        .await_proof(pb::AwaitProofRequest {
            job_id: c2.job_id.clone(),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(r.status, AwaitStatus::Cancelled as i32, "{r:?}");
    assert!(r.proof.is_empty());
    assert!(r.error_message.contains("cancelled by request"), "{r:?}");
    let st = own.status().await.unwrap();
    assert!(
        urgent_done(&st).is_some(),
        "the urgent job is not touched: {st:?}"
    );
    // The C2 proves once the urgent job is gone (its request id still
    // names the cancelled job).
    slow_partitions(&d.ctx, URGENT as i64, Duration::ZERO);
    assert_eq!(own.cancel(&urgent).await.unwrap(), "running");
    let again = cl
        .submit_proof(c2_request("running"))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(again.job_id, c2.job_id);
    let r = cl
        .prove(prove_request(c2_request("after")))
        .await
        .unwrap()
        .into_inner()
        .result
        .unwrap();
    assert_eq!(
        r.status,
        AwaitStatus::Completed as i32,
        "{}",
        r.error_message
    );
    assert!(verify_commit(s, &r.proof).unwrap());
    let st = cl
        .get_status(pb::GetStatusRequest {})
        .await
        .unwrap()
        .into_inner();
    assert_eq!(running(&st), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn unknown_kinds_and_bad_inputs_are_clear_statuses_and_queue_nothing() {
    let d = start_unix(1, |c| c.filecoin_test_params = Some(c2_params())).await;
    let mut cl = cuzk_client(&d.addr).await;
    let refused = |mut r: pb::SubmitProofRequest, f: &dyn Fn(&mut pb::SubmitProofRequest)| {
        f(&mut r);
        r
    };
    let cases: Vec<(pb::SubmitProofRequest, tonic::Code, &str)> = vec![
        (
            refused(c2_request("a"), &|r| r.proof_kind = 9),
            tonic::Code::InvalidArgument,
            "proof_kind 9",
        ),
        (
            refused(c2_request("b"), &|r| r.proof_kind = 0),
            tonic::Code::InvalidArgument,
            "unspecified",
        ),
        (
            refused(c2_request("c"), &|r| {
                r.vanilla_proof = b"{\"not\": 1}".to_vec()
            }),
            tonic::Code::InvalidArgument,
            "C1 output",
        ),
        (
            refused(c2_request("d"), &|r| r.vanilla_proof.clear()),
            tonic::Code::InvalidArgument,
            "vanilla_proof is empty",
        ),
        (
            refused(c2_request("e"), &|r| r.sector_size = 4096),
            tonic::Code::InvalidArgument,
            "sector size",
        ),
        (
            refused(c2_request("f"), &|r| r.registered_proof = 8),
            tonic::Code::InvalidArgument,
            "32GiB",
        ),
        (
            refused(c2_request("g"), &|r| r.registered_proof = 99),
            tonic::Code::InvalidArgument,
            "registered_proof 99",
        ),
        (
            refused(c2_request("h"), &|r| r.priority = 7),
            tonic::Code::InvalidArgument,
            "priority 7",
        ),
        (
            refused(c2_request("i"), &|r| r.request_id = "x".repeat(300)),
            tonic::Code::InvalidArgument,
            "request_id",
        ),
        (
            refused(c2_request("j"), &|r| {
                r.proof_kind = ProofKind::WinningPost as i32
            }),
            tonic::Code::InvalidArgument,
            "not a winning PoSt proof",
        ),
    ];
    for (req, code, says) in cases {
        let e = cl.submit_proof(req.clone()).await.unwrap_err();
        assert_eq!(e.code(), code, "{says}: {e:?}");
        assert!(e.message().contains(says), "{says}: {e:?}");
        let e = cl.prove(prove_request(req)).await.unwrap_err();
        assert_eq!(e.code(), code, "{says}: {e:?}");
    }
    assert_eq!(open_jobs(&mut cl).await, (0, 0));
    assert_eq!(
        d.service
            .jobs()
            .metrics
            .submitted
            .load(std::sync::atomic::Ordering::Relaxed),
        0,
        "nothing was queued"
    );
}

/// A daemon process with a journal, on a unix socket, its log in
/// `dir/daemon.log`; what it logged when it did not start.
fn serve_journaled(dir: &std::path::Path) -> Result<ChildDaemon, String> {
    let mut cmd = serve_cmd(&format!("unix://{}", dir.join("cuzk.sock").display()), 1);
    cmd.args(["--max-running", "1"])
        .arg("--filecoin-test-params")
        .arg(c2_params())
        .arg("--params-dir")
        .arg(dir.join("params"))
        .arg("--state-dir")
        .arg(dir.join("state"));
    try_spawn(cmd, Some(&dir.join("daemon.log")))
}

/// A request id is one job, a queued job cancels, and jobs survive kill -9,
/// on a daemon process with a journal and one runner.
///
/// Requests refused under an id (an unknown kind, a bad C1 output) leave it
/// free for a good request. Four C2 jobs accepted: the first runs while the
/// others wait; its id, submitted twice, names one job; AwaitProof with
/// timeout_ms answers TIMEOUT while it goes on; a queued job cancels
/// without running; the running one is not touched: Prove with its id
/// waits for it and returns AwaitProof's proof; after it ended the id still
/// names it (one job completed), with other inputs it is ALREADY_EXISTS,
/// and the finished job cancels to nothing.
///
/// Then the daemon dies with one job finished, one running and one queued
/// (and the cancelled one); the next start on the same state directory and
/// socket keeps the finished proof (not proved again), runs the other two
/// once under their ids, and their request ids name them; the cancelled
/// job stays cancelled. A file there that is not a journal is set aside,
/// named in the log, and the daemon starts with a new one.
#[test]
fn a_request_id_is_one_job_a_queued_job_cancels_and_jobs_survive_kill_9() {
    let s = sealed();
    let dir = temp_dir("cuzk-journal");
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mut d = serve_journaled(&dir).unwrap();
    let (ids, cancelled, first_proof) = rt.block_on(async {
        let mut cl = cuzk_client(&d.addr).await;
        let mut unknown_kind = c2_request("j1");
        unknown_kind.proof_kind = 9;
        let mut bad_c1 = c2_request("j1");
        bad_c1.vanilla_proof = b"{\"not\": 1}".to_vec();
        for refused in [unknown_kind, bad_c1] {
            let e = cl.submit_proof(refused.clone()).await.unwrap_err();
            assert_eq!(e.code(), tonic::Code::InvalidArgument, "{e:?}");
            let e = cl.prove(prove_request(refused)).await.unwrap_err();
            assert_eq!(e.code(), tonic::Code::InvalidArgument, "{e:?}");
        }
        let mut ids = Vec::new();
        for r in ["j1", "j2", "j3"] {
            ids.push(
                cl.submit_proof(c2_request(r))
                    .await
                    .unwrap()
                    .into_inner()
                    .job_id,
            );
        }
        let same = cl
            .submit_proof(c2_request("j1"))
            .await
            .unwrap()
            .into_inner();
        assert_eq!(same.job_id, ids[0], "a request id is one job");
        let queued = cl
            .submit_proof(c2_request("queued"))
            .await
            .unwrap()
            .into_inner()
            .job_id;
        let mut open = (0, 0);
        for _ in 0..500 {
            open = open_jobs(&mut cl).await;
            if open == (3, 1) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert_eq!(open, (3, 1), "one job runs, the others wait");
        // AwaitProof with timeout_ms answers TIMEOUT while the job goes on.
        let t = cl
            .await_proof(pb::AwaitProofRequest {
                job_id: ids[0].clone(),
                timeout_ms: 1,
            })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(t.status, AwaitStatus::Timeout as i32, "{t:?}");
        assert_eq!(t.job_id, ids[0]);
        assert!(t.proof.is_empty());
        let c = cl
            .cancel_proof(pb::CancelProofRequest {
                job_id: queued.clone(),
            })
            .await
            .unwrap()
            .into_inner();
        assert!(!c.was_running, "a queued job cancels without running");
        let r = cl
            .await_proof(pb::AwaitProofRequest {
                job_id: queued.clone(),
                ..Default::default()
            })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(r.status, AwaitStatus::Cancelled as i32, "{r:?}");
        assert!(r.proof.is_empty());
        assert!(r.error_message.contains("cancelled by request"), "{r:?}");
        // The running job is not touched. Prove with its id waits for that
        // job: the same proof as AwaitProof's.
        let proved = cl
            .prove(prove_request(c2_request("j1")))
            .await
            .unwrap()
            .into_inner()
            .result
            .unwrap();
        let first = cl
            .await_proof(pb::AwaitProofRequest {
                job_id: ids[0].clone(),
                ..Default::default()
            })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(proved.job_id, ids[0]);
        assert_eq!(
            proved.status,
            AwaitStatus::Completed as i32,
            "{}",
            proved.error_message
        );
        assert_eq!(first.status, AwaitStatus::Completed as i32, "{first:?}");
        assert_eq!(proved.proof, first.proof);
        assert!(verify_commit(s, &first.proof).unwrap());
        // After the job ended, the id still names it.
        let again = cl
            .submit_proof(c2_request("j1"))
            .await
            .unwrap()
            .into_inner();
        assert_eq!(again.job_id, ids[0]);
        let st = cl
            .get_status(pb::GetStatusRequest {})
            .await
            .unwrap()
            .into_inner();
        assert_eq!(st.total_proofs_completed, 1, "one job for one request id");
        // The id with other inputs is the client's mistake.
        let mut other = c2_request("j1");
        other.priority = pb::Priority::High as i32;
        let e = cl.submit_proof(other).await.unwrap_err();
        assert_eq!(e.code(), tonic::Code::AlreadyExists, "{e:?}");
        assert!(e.message().contains(&ids[0]), "{e:?}");
        // A finished job cancels to nothing.
        let c = cl
            .cancel_proof(pb::CancelProofRequest {
                job_id: ids[0].clone(),
            })
            .await
            .unwrap()
            .into_inner();
        assert!(!c.was_running);
        let e = cl
            .cancel_proof(pb::CancelProofRequest {
                job_id: "not-a-job".into(),
            })
            .await
            .unwrap_err();
        assert_eq!(e.code(), tonic::Code::InvalidArgument);

        let mut running = false;
        for _ in 0..500 {
            if open_jobs(&mut cl).await == (1, 1) {
                running = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert!(running, "the second job runs, the third waits");
        (ids, queued, first.proof)
    });
    d.kill9();
    drop(d);

    let d = serve_journaled(&dir).unwrap();
    rt.block_on(async {
        let mut cl = cuzk_client(&d.addr).await;
        for (k, id) in ids.iter().enumerate() {
            let r = cl
                .await_proof(pb::AwaitProofRequest {
                    job_id: id.clone(),
                    ..Default::default()
                })
                .await
                .unwrap()
                .into_inner();
            assert_eq!(r.status, AwaitStatus::Completed as i32, "job {k}: {r:?}");
            assert!(verify_commit(s, &r.proof).unwrap(), "job {k}");
            if k == 0 {
                assert_eq!(r.proof, first_proof, "the finished proof is kept");
            }
        }
        for (k, r) in ["j1", "j2", "j3"].iter().enumerate() {
            let again = cl.submit_proof(c2_request(r)).await.unwrap().into_inner();
            assert_eq!(again.job_id, ids[k], "{r} names its job after the restart");
        }
        let st = cl
            .get_status(pb::GetStatusRequest {})
            .await
            .unwrap()
            .into_inner();
        assert_eq!(
            st.total_proofs_completed, 2,
            "two jobs ran after the restart, once each"
        );
        let r = cl
            .await_proof(pb::AwaitProofRequest {
                job_id: cancelled.clone(),
                ..Default::default()
            })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(r.status, AwaitStatus::Cancelled as i32, "{r:?}");
        assert_eq!(open_jobs(&mut cl).await, (0, 0));
    });
    drop(d);

    // A journal that is not one: an error naming the file, which is set
    // aside; the daemon starts with a new journal (the old ids are unknown).
    let journal = dir.join("state").join("jobs.journal");
    std::fs::write(&journal, vec![0x5a; 8192]).unwrap();
    let mut d = serve_journaled(&dir).expect("the daemon starts with a new journal");
    rt.block_on(async {
        let mut cl = cuzk_client(&d.addr).await;
        let e = cl
            .await_proof(pb::AwaitProofRequest {
                job_id: ids[0].clone(),
                ..Default::default()
            })
            .await
            .unwrap_err();
        assert_eq!(e.code(), tonic::Code::NotFound, "{e:?}");
        assert_eq!(open_jobs(&mut cl).await, (0, 0));
    });
    d.kill9();
    common::process::assert_not_a_journal(&dir.join("daemon.log"), &journal);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oversized_request_is_refused_and_queues_nothing() {
    let d = start_unix(1, |c| {
        c.filecoin_test_params = Some(c2_params());
        c.max_filecoin_request_bytes = 256 << 10;
    })
    .await;
    let mut cl = cuzk_client(&d.addr).await;
    let req = pb::SubmitProofRequest {
        request_id: "too-big".into(),
        proof_kind: ProofKind::PorepSealCommit as i32,
        vanilla_proof: vec![b' '; 300 << 10],
        sector_number: 1,
        miner_id: MINER,
        ..Default::default()
    };
    let e = cl.prove(prove_request(req)).await.unwrap_err();
    assert_eq!(e.code(), tonic::Code::OutOfRange, "{e:?}");
    assert_eq!(open_jobs(&mut cl).await, (0, 0));
    assert_eq!(
        d.service
            .jobs()
            .metrics
            .submitted
            .load(std::sync::atomic::Ordering::Relaxed),
        0
    );
}
