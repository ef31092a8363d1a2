//! The daemon over gRPC on simulated host devices: concurrent clients,
//! priorities, cancellation, key residency, limits and bad requests.

use crate::common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{client, job, slow_partitions, start, submit_running, verify_here};
use cuda_prover_pipeline::circuits::Kind;
use cuda_prover_service::{proto, Client, ClientError};
use parking_lot::Mutex;

fn code(e: &ClientError) -> tonic::Code {
    match e {
        ClientError::Rpc(s) => s.code(),
        other => panic!("expected an RPC error, got {other}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_clients_get_verified_proofs() {
    let d = start(2, |_| {}).await;
    let mut tasks = Vec::new();
    for c in 0..8u64 {
        let addr = d.addr.clone();
        tasks.push(tokio::spawn(async move {
            let client = Client::connect(&addr, None).await.unwrap();
            let mut outs = Vec::new();
            // Two keys on the same devices at once.
            let (name, kind) = if c % 2 == 0 {
                ("chain", Kind::Chain)
            } else {
                ("bits", Kind::Bits)
            };
            for j in 0..3u64 {
                let seed = 1000 * c + 10 * j;
                let id = client.submit(job(name, 7, 3, seed, 0)).await.unwrap();
                let out = client.await_job(&id, |_, _, _| {}).await.unwrap();
                outs.push((seed, kind, out));
            }
            outs
        }));
    }
    let mut n = 0;
    for t in tasks {
        for (seed, kind, out) in t.await.unwrap() {
            assert!(out.ok(), "{}: {}", out.state, out.error);
            assert_eq!(out.proofs.len(), 3);
            verify_here(&d.params, kind, 7, seed, &out.proofs);
            n += 1;
        }
    }
    assert_eq!(n, 24);
    let st = client(&d).await.status().await.unwrap();
    assert!(st.queued.is_empty() && st.running.is_empty());
    // Both devices proved: 24 jobs x 3 partitions, round-robin.
    let per: Vec<u64> = st.devices.iter().map(|d| d.partitions).collect();
    assert_eq!(per.iter().sum::<u64>(), 72, "{per:?}");
    assert!(per.iter().all(|&p| p > 0), "{per:?}");
    let m = client(&d).await.metrics().await.unwrap();
    assert!(m.contains("cuda_prover_service_jobs_done_total 24"), "{m}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn higher_priority_jobs_finish_before_lower_ones_queued_earlier() {
    let d = start(1, |c| c.max_running = 1).await;
    slow_partitions(&d.ctx, 4, Duration::from_millis(80));
    let cl = client(&d).await;
    // A job occupies the daemon while the others queue: it is running
    // before they are submitted (on a loaded machine the daemon may take a
    // moment to start it).
    let blocker = submit_running(&cl, job("bits", 7, 4, 1, 0)).await;
    let mut ids = Vec::new();
    for (i, prio) in [100u32, 100, 100, 300, 300, 300].iter().enumerate() {
        ids.push((
            *prio,
            cl.submit(job("bits", 7, 1, 10 + i as u64, *prio))
                .await
                .unwrap(),
        ));
    }
    let st = cl.status().await.unwrap();
    let queued: Vec<u32> = st.queued.iter().map(|j| j.priority).collect();
    assert_eq!(
        queued,
        vec![300, 300, 300, 100, 100, 100],
        "most urgent first"
    );
    let order = Arc::new(Mutex::new(Vec::new()));
    let mut tasks = Vec::new();
    for (prio, id) in ids {
        let (cl, order) = (cl.clone(), order.clone());
        tasks.push(tokio::spawn(async move {
            let out = cl.await_job(&id, |_, _, _| {}).await.unwrap();
            assert!(out.ok(), "{}", out.error);
            order.lock().push((Instant::now(), prio));
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    assert!(cl.await_job(&blocker, |_, _, _| {}).await.unwrap().ok());
    let mut order = order.lock().clone();
    order.sort_by_key(|o| o.0);
    let prios: Vec<u32> = order.iter().map(|o| o.1).collect();
    assert_eq!(prios, vec![300, 300, 300, 100, 100, 100]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_urgent_job_overtakes_a_running_one_at_partition_boundaries() {
    // Both jobs run at once; the engine's gate gives the urgent one the
    // device as soon as it arrives.
    let d = start(1, |c| c.max_running = 2).await;
    let cl = client(&d).await;
    // The urgent job's key made and resident first: the turns at partition
    // boundaries are what is measured, not the making of its key.
    let warm = cl.submit(job("chain", 7, 1, 2, 300)).await.unwrap();
    assert!(cl.await_job(&warm, |_, _, _| {}).await.unwrap().ok());
    slow_partitions(&d.ctx, 16, Duration::from_millis(25));
    let low = cl.submit(job("bits", 7, 16, 1, 100)).await.unwrap();
    let t = Instant::now();
    loop {
        let st = cl.status().await.unwrap();
        if st.running.iter().any(|j| j.job_id == low && j.done >= 1) {
            break;
        }
        assert!(
            t.elapsed() < Duration::from_secs(60),
            "the low job never ran"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let high = cl.submit(job("chain", 7, 6, 2, 300)).await.unwrap();
    let out = cl.await_job(&high, |_, _, _| {}).await.unwrap();
    assert!(out.ok(), "{}", out.error);
    let st = cl.status().await.unwrap();
    let low_state = st
        .running
        .iter()
        .find(|j| j.job_id == low)
        .expect("the low job is still running when the urgent one is done");
    // At most the low job's partitions already taken (two in flight on one
    // worker, one more seen by the poll) were proved meanwhile; interleaved
    // turns would have proved about six.
    assert!(
        low_state.done <= 5,
        "the urgent job waited for the low one: {} of 16 done",
        low_state.done
    );
    assert!(cl.await_job(&low, |_, _, _| {}).await.unwrap().ok());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn cancel_stops_one_job_and_leaves_the_others_alone() {
    let d = start(2, |c| c.max_running = 3).await;
    slow_partitions(&d.ctx, 40, Duration::from_millis(20));
    let cl = client(&d).await;
    let long = cl.submit(job("chain", 7, 40, 100, 0)).await.unwrap();
    let other = cl.submit(job("chain", 7, 6, 200, 0)).await.unwrap();
    let queued_then_cancelled = {
        // Fill the runners so the third job queues... it may also start;
        // either way cancel must end it and nothing else.
        cl.submit(job("chain", 7, 6, 300, 0)).await.unwrap()
    };
    // Wait until the long job is under way.
    let t = Instant::now();
    loop {
        let st = cl.status().await.unwrap();
        if st.running.iter().any(|j| j.job_id == long && j.done >= 2) {
            break;
        }
        assert!(
            t.elapsed() < Duration::from_secs(60),
            "the long job never ran"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(cl.cancel(&long).await.unwrap(), "running");
    cl.cancel(&queued_then_cancelled).await.unwrap();
    let mut done_at_cancel = 0;
    let out = cl
        .await_job(&long, |done, _, _| done_at_cancel = done)
        .await
        .unwrap();
    assert_eq!(out.state, "cancelled", "{}", out.error);
    assert!(!out.ok() && out.proofs.is_empty());
    assert!(
        done_at_cancel < 40,
        "cancelled mid-job: {done_at_cancel} of 40 done"
    );
    let third = cl
        .await_job(&queued_then_cancelled, |_, _, _| {})
        .await
        .unwrap();
    assert_eq!(third.state, "cancelled");
    let out = cl.await_job(&other, |_, _, _| {}).await.unwrap();
    assert!(out.ok(), "the other job is untouched: {}", out.error);
    verify_here(&d.params, Kind::Chain, 7, 200, &out.proofs);
    // The daemon keeps working after a cancellation.
    let after = cl.submit(job("chain", 7, 2, 400, 0)).await.unwrap();
    assert!(cl.await_job(&after, |_, _, _| {}).await.unwrap().ok());
    // A deadline cancels a job that runs past it.
    let mut late = job("chain", 7, 40, 500, 0);
    late.deadline_ms = 100;
    let id = cl.submit(late).await.unwrap();
    let out = cl.await_job(&id, |_, _, _| {}).await.unwrap();
    assert_eq!(out.state, "cancelled");
    assert!(out.error.contains("deadline"), "{}", out.error);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn keys_are_evicted_least_recently_used_under_the_memory_limit() {
    // Learn the keys' sizes from a daemon without a limit.
    let sizes = {
        let d = start(1, |_| {}).await;
        let cl = client(&d).await;
        let mut s = Vec::new();
        for (c, log) in [("chain", 7), ("bits", 7), ("chain", 8)] {
            let r = cl.preload(common::built_in_key(c, log)).await.unwrap();
            s.push(r.bytes);
        }
        s
    };
    // Room for the two larger keys only.
    let mut two = sizes.clone();
    two.sort();
    let budget = two[1] + two[2];
    let d = start(1, |c| c.key_budget_bytes = Some(budget)).await;
    let cl = client(&d).await;
    let names = |st: &proto::StatusReply| st.keys.iter().map(|k| k.key.clone()).collect::<Vec<_>>();
    for (i, (c, log)) in [("chain", 7), ("bits", 7), ("chain", 8)].iter().enumerate() {
        let id = cl.submit(job(c, *log, 1, i as u64, 0)).await.unwrap();
        assert!(cl.await_job(&id, |_, _, _| {}).await.unwrap().ok());
    }
    let st = cl.status().await.unwrap();
    let resident = names(&st);
    assert!(
        resident
            .iter()
            .map(|k| st.keys.iter().find(|x| &x.key == k).unwrap().bytes)
            .sum::<u64>()
            <= budget
    );
    assert!(
        !resident.iter().any(|k| k.starts_with("chain-2^7@")),
        "the least recently used key went first: {resident:?}"
    );
    assert!(
        resident.iter().any(|k| k.starts_with("chain-2^8@")),
        "{resident:?}"
    );
    let m = cl.metrics().await.unwrap();
    assert!(
        !m.contains("cuda_prover_service_key_evictions_total 0\n"),
        "{m}"
    );
    // Preload pins: a pinned key survives later loads.
    let pinned = cl.preload(common::built_in_key("chain", 7)).await.unwrap();
    for (c, log) in [("bits", 7), ("chain", 8)] {
        let id = cl.submit(job(c, log, 1, 9, 0)).await.unwrap();
        let out = cl.await_job(&id, |_, _, _| {}).await.unwrap();
        // Either it fits beside the pinned key or it is a clear error.
        assert!(
            out.ok() || out.error.contains("key budget"),
            "{}",
            out.error
        );
    }
    let st = cl.status().await.unwrap();
    let k = st
        .keys
        .iter()
        .find(|k| k.key == pinned.key)
        .expect("the pinned key stays");
    assert!(k.pinned);
    // Evict drops it; evicting again is a clear error.
    let req = common::built_in_key("chain", 7);
    cl.evict(req.clone()).await.unwrap();
    let e = cl.evict(req).await.unwrap_err();
    assert_eq!(code(&e), tonic::Code::NotFound, "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn bad_requests_are_clear_errors() {
    let d = start(1, |c| {
        c.max_request_bytes = 4096;
        c.max_partitions = 64;
        c.max_log_constraints = 12;
    })
    .await;
    let cl = client(&d).await;
    let expect = |r: Result<String, ClientError>, want: tonic::Code, text: &str| {
        let e = r.expect_err("a bad request");
        assert_eq!(code(&e), want, "{e}");
        assert!(e.to_string().contains(text), "'{e}' should say '{text}'");
    };
    expect(
        cl.submit(job("sha256", 7, 1, 0, 0)).await,
        tonic::Code::InvalidArgument,
        "circuit",
    );
    let mut none = job("chain", 7, 1, 0, 0);
    none.job = None;
    expect(
        cl.submit(none).await,
        tonic::Code::InvalidArgument,
        "names no job",
    );
    expect(
        cl.submit(job("chain", 7, 0, 0, 0)).await,
        tonic::Code::InvalidArgument,
        "partitions",
    );
    expect(
        cl.submit(job("chain", 7, 65, 0, 0)).await,
        tonic::Code::InvalidArgument,
        "partitions",
    );
    expect(
        cl.submit(job("chain", 20, 1, 0, 0)).await,
        tonic::Code::InvalidArgument,
        "limit",
    );
    expect(
        cl.submit(job("chain", 3, 1, 0, 0)).await,
        tonic::Code::InvalidArgument,
        "circuit",
    );
    let mut synth = job("chain", 7, 1, 0, 0);
    synth.job = Some(proto::submit_request::Job::BuiltIn(proto::BuiltInJob {
        circuit: "chain".into(),
        log_constraints: 7,
        partitions: 1,
        seed: None,
        synthesis: "sometimes".into(),
    }));
    expect(
        cl.submit(synth).await,
        tonic::Code::InvalidArgument,
        "synthesis",
    );
    let mut dev = job("chain", 7, 1, 0, 0);
    dev.devices = vec![5];
    expect(
        cl.submit(dev).await,
        tonic::Code::InvalidArgument,
        "device 5",
    );
    // The daemon has one device (0): naming it twice is refused at submit.
    let mut twice = job("chain", 7, 1, 0, 0);
    twice.devices = vec![0, 0];
    expect(
        cl.submit(twice).await,
        tonic::Code::InvalidArgument,
        "named twice",
    );
    // A params dir that is a file inside the params dirs is refused at submit.
    let file = d.params.join(format!("a-file-{}", std::process::id()));
    std::fs::write(&file, b"not a directory").unwrap();
    let mut j = job("chain", 7, 1, 0, 0);
    j.params_dir = file.file_name().unwrap().to_string_lossy().into();
    expect(
        cl.submit(j).await,
        tonic::Code::PermissionDenied,
        "not a directory",
    );
    std::fs::remove_file(&file).unwrap();
    for dir in ["../", "/etc", "../../tmp"] {
        let mut j = job("chain", 7, 1, 0, 0);
        j.params_dir = dir.into();
        expect(
            cl.submit(j).await,
            tonic::Code::PermissionDenied,
            "params dir",
        );
    }
    // A link inside the params dir that leads outside is refused too.
    let link = d.params.join(format!("escape-{}", std::process::id()));
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink("/etc", &link).unwrap();
    let mut j = job("chain", 7, 1, 0, 0);
    j.params_dir = link.file_name().unwrap().to_string_lossy().into();
    expect(cl.submit(j).await, tonic::Code::PermissionDenied, "outside");
    std::fs::remove_file(&link).unwrap();
    let mut big = job("chain", 7, 1, 0, 0);
    big.name = "x".repeat(10_000);
    let e = cl.submit(big).await.expect_err("oversized");
    assert_eq!(code(&e), tonic::Code::OutOfRange, "{e}");
    assert!(e.to_string().contains("too large"), "{e}");
    expect(
        cl.await_job("12345", |_, _, _| {}).await.map(|o| o.state),
        tonic::Code::NotFound,
        "no job 12345",
    );
    expect(
        cl.cancel("not-an-id").await,
        tonic::Code::InvalidArgument,
        "not a number",
    );
    // A 100 KB id is named by its start and length, not echoed in full.
    for long in ["7".repeat(100_000), "z".repeat(100_000)] {
        let e = cl.cancel(&long).await.expect_err("an id of 100 KB");
        let text = e.to_string();
        assert!(text.contains("(100000 bytes)"), "{text}");
        assert!(text.len() < 400, "the error echoes {} bytes", text.len());
    }
    // The daemon still works.
    let id = cl.submit(job("chain", 7, 1, 0, 0)).await.unwrap();
    assert!(cl.await_job(&id, |_, _, _| {}).await.unwrap().ok());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_full_queue_answers_busy() {
    let d = start(1, |c| {
        c.max_queue = 2;
        c.max_running = 1;
    })
    .await;
    slow_partitions(&d.ctx, 8, Duration::from_millis(30));
    let cl = client(&d).await;
    let a = cl.submit(job("bits", 7, 8, 1, 0)).await.unwrap();
    let b = cl.submit(job("bits", 7, 1, 2, 0)).await.unwrap();
    let e = cl.submit(job("bits", 7, 1, 3, 0)).await.unwrap_err();
    assert_eq!(code(&e), tonic::Code::ResourceExhausted, "{e}");
    assert!(e.to_string().contains("busy"), "{e}");
    assert!(cl.await_job(&a, |_, _, _| {}).await.unwrap().ok());
    assert!(cl.await_job(&b, |_, _, _| {}).await.unwrap().ok());
    // Room again.
    let c = cl.submit(job("bits", 7, 1, 3, 0)).await.unwrap();
    assert!(cl.await_job(&c, |_, _, _| {}).await.unwrap().ok());
    // Drain answers once nothing is left, then refuses new jobs.
    cl.drain().await.unwrap();
    let e = cl.submit(job("bits", 7, 1, 4, 0)).await.unwrap_err();
    assert_eq!(code(&e), tonic::Code::Unavailable, "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_token_is_required_when_set_and_off_loopback() {
    use cuda_prover_service::server::check_listen;
    let any: std::net::SocketAddr = "0.0.0.0:7411".parse().unwrap();
    let err = check_listen(&any, None).unwrap_err();
    assert!(err.contains("needs a token"), "{err}");
    assert!(check_listen(&any, Some("s3cret")).is_ok());
    assert!(check_listen(&"127.0.0.1:7411".parse().unwrap(), None).is_ok());
    let d = start(1, |c| c.token = Some("s3cret".into())).await;
    let anon = Client::connect(&d.addr, None).await.unwrap();
    let e = anon.status().await.unwrap_err();
    assert_eq!(code(&e), tonic::Code::Unauthenticated, "{e}");
    assert!(e.to_string().contains("requires a token"), "{e}");
    let wrong = Client::connect(&d.addr, Some("guess")).await.unwrap();
    assert_eq!(
        code(&wrong.status().await.unwrap_err()),
        tonic::Code::Unauthenticated
    );
    let ok = Client::connect(&d.addr, Some("s3cret")).await.unwrap();
    let id = ok.submit(job("chain", 7, 1, 5, 0)).await.unwrap();
    assert!(ok.await_job(&id, |_, _, _| {}).await.unwrap().ok());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn several_daemons_behind_one_client_share_the_jobs() {
    let a = start(1, |_| {}).await;
    let b = start(1, |_| {}).await;
    for d in [&a, &b] {
        slow_partitions(&d.ctx, 2, Duration::from_millis(30));
    }
    let hosts = cuda_prover_service::Hosts::connect(&[a.addr.clone(), b.addr.clone()], None)
        .await
        .unwrap();
    let mut placed = Vec::new();
    for i in 0..8u64 {
        placed.push((
            i,
            hosts.submit(job("chain", 7, 2, 50 * i, 0)).await.unwrap(),
        ));
    }
    let mut per_host = [0; 2];
    for (i, p) in &placed {
        let out = hosts.await_job(p).await.unwrap();
        assert!(out.ok(), "{}", out.error);
        verify_here(&a.params, Kind::Chain, 7, 50 * i, &out.proofs);
        per_host[p.host] += 1;
    }
    assert!(
        per_host[0] >= 2 && per_host[1] >= 2,
        "spread by load: {per_host:?}"
    );
}

/// A SubmitRequest as the daemon decodes it (field 1: the built-in job)
/// plus a field the daemon does not know, which its decoder drops.
#[derive(Clone, PartialEq, prost::Message)]
struct PaddedSubmit {
    #[prost(message, optional, tag = "1")]
    built_in: Option<proto::BuiltInJob>,
    #[prost(bytes = "vec", tag = "999")]
    pad: Vec<u8>,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_size_limit_counts_the_bytes_received() {
    let d = start(1, |c| c.max_request_bytes = 4096).await;
    let Some(proto::submit_request::Job::BuiltIn(b)) = job("chain", 7, 1, 0, 0).job else {
        unreachable!()
    };
    let channel = tonic::transport::Endpoint::from_shared(format!("http://{}", d.addr))
        .unwrap()
        .connect()
        .await
        .unwrap();
    let mut grpc = tonic::client::Grpc::new(channel);
    let send = |pad: usize| {
        let mut grpc = grpc.clone();
        let b = b.clone();
        async move {
            grpc.ready().await.unwrap();
            let codec = tonic::codec::ProstCodec::<PaddedSubmit, proto::SubmitReply>::default();
            let path = tonic::codegen::http::uri::PathAndQuery::from_static(
                "/cuda_prover.v1.Prover/Submit",
            );
            let req = PaddedSubmit {
                built_in: Some(b),
                pad: vec![7; pad],
            };
            grpc.unary(tonic::Request::new(req), path, codec).await
        }
    };
    // Unpadded, the job is accepted; padded past the limit with a field
    // decoding drops, it is refused by its size on the wire.
    assert!(send(0).await.is_ok());
    let e = send(100_000).await.expect_err("a padded request");
    assert_eq!(e.code(), tonic::Code::OutOfRange, "{e}");
    assert!(e.message().contains("too large"), "{e}");
    // The error names the kind of job and its limit.
    assert!(
        e.message().contains("for a built-in job") && e.message().contains("(4 KiB)"),
        "{e}"
    );
    grpc.ready().await.unwrap();
}

/// Params dirs are confined at the time of use, not only at submission:
/// a subdirectory swapped for a link after the request was checked, a key
/// file that is a link to a key elsewhere, and a `<key>.lock` that is a
/// link each fail the job with a clear error, and nothing outside the
/// params dir is read, created or written.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn params_dir_links_are_refused_at_the_time_of_use() {
    let root = common::temp_dir("confined");
    let outside = common::temp_dir("outside");
    let d = common::start_with_params(1, root.clone(), |c| c.max_running = 1).await;
    let cl = client(&d).await;
    let fails_with = |out: cuda_prover_service::JobOutcome, says: &str| {
        assert_eq!(out.state, "failed", "{}", out.error);
        assert!(out.proofs.is_empty());
        assert!(
            out.error.contains(says),
            "'{}' should say '{says}'",
            out.error
        );
    };

    // A subdirectory checked at submission, swapped for a link to a
    // directory outside while the job waits behind a slow one.
    std::fs::create_dir(root.join("sub")).unwrap();
    slow_partitions(&d.ctx, 1, Duration::from_millis(1500));
    let slow = cl.submit(job("chain", 7, 1, 1, 0)).await.unwrap();
    let mut j = job("bits", 7, 1, 1, 0);
    j.params_dir = "sub".into();
    let swapped = cl.submit(j).await.unwrap();
    std::fs::rename(root.join("sub"), root.join("sub-was")).unwrap();
    std::os::unix::fs::symlink(&outside, root.join("sub")).unwrap();
    let out = cl.await_job(&slow, |_, _, _| {}).await.unwrap();
    assert!(out.ok(), "{}", out.error);
    slow_partitions(&d.ctx, 1, Duration::ZERO);
    fails_with(
        cl.await_job(&swapped, |_, _, _| {}).await.unwrap(),
        "symbolic link",
    );
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0);

    // A key file that is a link to a valid key outside.
    let c = cuda_prover_pipeline::circuits::BuiltIn::new(Kind::Chain, 8, 0).unwrap();
    cuda_prover_groth16::params::load_or_create(&outside, &c, &|_| {}).unwrap();
    let name = cuda_prover_groth16::params::key_name(&c);
    std::os::unix::fs::symlink(outside.join(&name), root.join(&name)).unwrap();
    let before: Vec<_> = std::fs::read_dir(&outside).unwrap().collect();
    fails_with(
        cl.await_job(
            &cl.submit(job("chain", 8, 1, 1, 0)).await.unwrap(),
            |_, _, _| {},
        )
        .await
        .unwrap(),
        "symbolic link",
    );
    assert_eq!(
        std::fs::read_dir(&outside).unwrap().count(),
        before.len(),
        "no record written beside the outside key"
    );

    // A lock file that is a link (to a file that does not exist yet).
    let c9 = cuda_prover_pipeline::circuits::BuiltIn::new(Kind::Chain, 9, 0).unwrap();
    let mut lock = cuda_prover_groth16::params::key_name(&c9);
    lock.push(".lock");
    let target = outside.join("made-by-the-daemon");
    std::os::unix::fs::symlink(&target, root.join(&lock)).unwrap();
    fails_with(
        cl.await_job(
            &cl.submit(job("chain", 9, 1, 1, 0)).await.unwrap(),
            |_, _, _| {},
        )
        .await
        .unwrap(),
        "symbolic link",
    );
    assert!(!target.exists(), "the daemon created a file outside");
    assert!(!root
        .join(cuda_prover_groth16::params::key_name(&c9))
        .exists());

    // The daemon keeps serving from its params dir.
    let out = cl
        .await_job(
            &cl.submit(job("chain", 7, 1, 2, 0)).await.unwrap(),
            |_, _, _| {},
        )
        .await
        .unwrap();
    assert!(out.ok(), "{}", out.error);
    std::fs::remove_dir_all(&root).ok();
    std::fs::remove_dir_all(&outside).ok();
}
