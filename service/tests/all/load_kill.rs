//! A load run on loopback with a kill: 2,000 small jobs from 32 concurrent
//! clients on both APIs against the daemon as a child process with a job
//! journal (`--state-dir`), killed with SIGKILL once about half the jobs
//! were accepted and started again on the same address and state
//! directory. The clients reconnect and wait for their jobs; none is lost,
//! every job completes exactly once with a verified result, and the
//! latency distribution and the number of jobs run again after the
//! restart are printed.
//!
//! The jobs: cuda_prover.v1 carries the smallest built-in circuit (bits,
//! 2^7 constraints, one partition), each checked here against its proving
//! key. cuzk.v1 carries only Filecoin kinds, so its share is the cheapest
//! of them at 2 KiB, a WindowPoSt partition (Prove, as Curio calls it),
//! checked by filecoin-proofs' `verify_window_post`; at about a second of
//! proving each on 2 cores, it is every 100th job (20 of the 2,000), which
//! keeps the run within a minute of CI.
//!
//! How a client gets past the kill: every job carries a request id
//! (cuzk.v1's request_id, cuda_prover.v1's request_id), journaled before
//! the submission answers, so a Submit or Prove cut by the kill (accepted
//! or not, the client cannot tell) is sent again, to no daemon or to the
//! new one, until the new one answers, and names the same job. Nothing
//! holds the clients off the moment of the kill: Submits, Proves, awaits,
//! queued and running jobs are all cut wherever they are.
//!
//! Exactly once: the job ids the clients hold are distinct, of one journal
//! instance, and their sequence numbers (with the warm-up job's) leave no
//! gap, so no job was accepted that no client holds; and the new daemon
//! proved exactly the jobs it took back open from the journal plus the
//! ones submitted to it (its done counter), so no finished job ran again.
#![cfg(feature = "filecoin")]

use crate::common;

use std::collections::{BTreeMap, HashSet};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::filecoin::{seal_for_miner, test_params, MINER, WINDOW_2KIB_V1_1};
use common::process::{serve_cmd, spawn, ChildDaemon};
use common::{job, metric, temp_dir};
use cuda_prover_filecoin::sealing::SealedSector;
use cuda_prover_filecoin::test_params::TestCircuit;
use cuda_prover_filecoin::vanilla::post_vanilla_bytes_for;
use cuda_prover_filecoin::{post_config, PostKind, SectorSize};
use cuda_prover_pipeline::circuits::{BuiltIn, Kind};
use cuda_prover_pipeline::{Proof, ProvingKey};
use cuda_prover_service::cuzk_proto as pb;
use cuda_prover_service::cuzk_proto::await_proof_response::Status as AwaitStatus;
use cuda_prover_service::cuzk_proto::proving_engine_client::ProvingEngineClient;
use cuda_prover_service::cuzk_proto::ProofKind;
use cuda_prover_service::{Client, ClientError};
use filecoin_proofs::constants::SectorShape2KiB;
use filecoin_proofs::{verify_window_post, PublicReplicaInfo};
use storage_proofs_core::sector::SectorId;
use tonic::transport::Channel;

const JOBS: usize = 2000;
const CLIENTS: usize = 32;
/// Every CUZK_EVERY-th job goes through cuzk.v1.
const CUZK_EVERY: usize = 100;
const BITS_LOG: u32 = 7;
/// How long a client keeps trying to reach the daemon again.
const REACH: Duration = Duration::from_secs(60);

fn randomness() -> [u8; 32] {
    let mut r = [0x5au8; 32];
    r[31] &= 0x3f;
    r
}

/// The daemon on `listen` with its journal under `dir`, its log in `log`.
fn serve(listen: &str, dir: &Path, fc_params: &Path, log: &Path) -> ChildDaemon {
    let mut cmd = serve_cmd(listen, 2);
    cmd.arg("--params-dir")
        .arg(dir.join("params"))
        .arg("--state-dir")
        .arg(dir.join("state"))
        .arg("--filecoin-test-params")
        .arg(fc_params)
        // The count of jobs taken back is read from the log.
        .env("RUST_LOG", "info");
    spawn(cmd, Some(log))
}

struct Fixture {
    sector: SealedSector,
    window: Vec<u8>,
}

fn window_request(f: &Fixture, request_id: String) -> pb::ProveRequest {
    pb::ProveRequest {
        submit: Some(pb::SubmitProofRequest {
            request_id,
            proof_kind: ProofKind::WindowPostPartition as i32,
            registered_proof: WINDOW_2KIB_V1_1,
            vanilla_proofs: vec![f.window.clone()],
            miner_id: MINER,
            randomness: randomness().to_vec(),
            partition_index: 0,
            ..Default::default()
        }),
    }
}

fn window_ok(f: &Fixture, proof: &[u8]) -> bool {
    let config = post_config(SectorSize::KIB_2, PostKind::Window).unwrap();
    let replicas: BTreeMap<_, _> = [(
        SectorId::from(f.sector.sector_id),
        PublicReplicaInfo::new(f.sector.comm_r).unwrap(),
    )]
    .into_iter()
    .collect();
    verify_window_post::<SectorShape2KiB>(
        &config,
        &randomness(),
        &replicas,
        f.sector.prover_id,
        proof,
    )
    .unwrap_or(false)
}

/// What a client saw of one job.
struct Done {
    job: usize,
    job_id: String,
    latency_ms: f64,
    /// The job's first try was cut by the kill.
    cut: bool,
    /// cuda_prover.v1: the built-in proof; cuzk.v1: the WindowPoSt proof.
    proof: Vec<u8>,
}

struct Shared {
    addr: String,
    fixture: Arc<Fixture>,
    accepted: AtomicUsize,
    /// Submits and Proves sent again after the kill cut them.
    resent: AtomicUsize,
}

/// A cuda_prover.v1 error that the daemon's death or absence explains.
fn v1_cut(e: &ClientError) -> bool {
    match e {
        ClientError::Lost(_) | ClientError::Connect { .. } => true,
        ClientError::Rpc(s) => cut_code(s.code()),
        ClientError::Invalid(_) => false,
    }
}

fn cut_code(c: tonic::Code) -> bool {
    matches!(
        c,
        tonic::Code::Unavailable | tonic::Code::Unknown | tonic::Code::Cancelled
    )
}

async fn v1_client(addr: &str, since: Instant) -> Client {
    loop {
        match Client::connect(addr, None).await {
            Ok(c) => return c,
            Err(e) => {
                assert!(
                    since.elapsed() < REACH,
                    "cannot reach the daemon again: {e}"
                );
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    }
}

async fn cuzk_client(addr: &str, since: Instant) -> ProvingEngineClient<Channel> {
    loop {
        match cuda_prover_service::client::channel(addr).await {
            Ok(ch) => return ProvingEngineClient::new(ch),
            Err(e) => {
                assert!(
                    since.elapsed() < REACH,
                    "cannot reach the daemon again: {e}"
                );
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    }
}

async fn run_v1(sh: &Shared, cl: &mut Client, j: usize) -> Done {
    let t = Instant::now();
    let mut cut = false;
    let req = cuda_prover_service::proto::SubmitRequest {
        request_id: format!("load-{j}"),
        ..job("bits", BITS_LOG, 1, seed(j), 0)
    };
    let id = loop {
        match cl.submit(req.clone()).await {
            Ok(id) => break id,
            Err(e) if v1_cut(&e) => {
                cut = true;
                sh.resent.fetch_add(1, Ordering::SeqCst);
                *cl = v1_client(&sh.addr, t).await;
            }
            Err(e) => panic!("job {j}: submit: {e}"),
        }
    };
    sh.accepted.fetch_add(1, Ordering::SeqCst);
    let out = loop {
        match cl.await_job(&id, |_, _, _| {}).await {
            Ok(out) => break out,
            Err(e) if v1_cut(&e) => {
                cut = true;
                *cl = v1_client(&sh.addr, t).await;
            }
            Err(e) => panic!("job {j} ({id}): await: {e}"),
        }
    };
    assert!(out.ok(), "job {j} ({id}): {} {}", out.state, out.error);
    assert_eq!(out.proofs.len(), 1, "job {j}");
    Done {
        job: j,
        job_id: id,
        latency_ms: t.elapsed().as_secs_f64() * 1e3,
        cut,
        proof: out.proofs.into_iter().next().unwrap(),
    }
}

async fn run_cuzk(sh: &Shared, cl: &mut ProvingEngineClient<Channel>, j: usize) -> Done {
    let t = Instant::now();
    let mut cut = false;
    sh.accepted.fetch_add(1, Ordering::SeqCst);
    let r = loop {
        match cl
            .prove(window_request(&sh.fixture, format!("load-{j}")))
            .await
        {
            Ok(r) => break r.into_inner().result.unwrap(),
            Err(e) if cut_code(e.code()) => {
                cut = true;
                sh.resent.fetch_add(1, Ordering::SeqCst);
                *cl = cuzk_client(&sh.addr, t).await;
            }
            Err(e) => panic!("job {j}: Prove: {e:?}"),
        }
    };
    assert_eq!(
        r.status,
        AwaitStatus::Completed as i32,
        "job {j}: {}",
        r.error_message
    );
    Done {
        job: j,
        job_id: r.job_id,
        latency_ms: t.elapsed().as_secs_f64() * 1e3,
        cut,
        proof: r.proof,
    }
}

fn seed(j: usize) -> u64 {
    1000 + j as u64
}

fn is_cuzk(j: usize) -> bool {
    j.is_multiple_of(CUZK_EVERY)
}

fn quantiles(lat: &mut [f64]) -> String {
    lat.sort_by(|a, b| a.total_cmp(b));
    let q = |p: f64| lat[((lat.len() - 1) as f64 * p).round() as usize];
    format!(
        "p50 {:.1} p90 {:.1} p99 {:.1} max {:.1}",
        q(0.5),
        q(0.9),
        q(0.99),
        lat[lat.len() - 1]
    )
}

#[test]
fn two_thousand_jobs_from_32_clients_on_both_apis_survive_a_kill_9() {
    let t_setup = Instant::now();
    let fc_params = test_params(&[
        TestCircuit::Porep(SectorSize::KIB_2),
        TestCircuit::WindowPost(SectorSize::KIB_2),
    ]);
    let sector = seal_for_miner(31);
    let window = post_vanilla_bytes_for(&sector, PostKind::Window, randomness()).unwrap();
    let fixture = Arc::new(Fixture { sector, window });
    let dir = temp_dir("load-kill");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_all()
        .build()
        .unwrap();
    let mut d = serve("127.0.0.1:0", &dir, &fc_params, &dir.join("daemon-1.log"));
    let addr = d.addr.clone();
    // Both kinds' keys exist and are loaded before the clock starts.
    let warm = rt.block_on(async {
        let cl = Client::connect(&addr, None).await.unwrap();
        let id = cl.submit(job("bits", BITS_LOG, 1, 1, 0)).await.unwrap();
        assert!(cl.await_job(&id, |_, _, _| {}).await.unwrap().ok());
        let mut z = cuzk_client(&addr, Instant::now()).await;
        let r = z
            .prove(window_request(&fixture, "warm".into()))
            .await
            .unwrap()
            .into_inner()
            .result
            .unwrap();
        assert_eq!(r.status, AwaitStatus::Completed as i32, "{r:?}");
        assert!(window_ok(&fixture, &r.proof));
        vec![id, r.job_id]
    });
    eprintln!(
        "load-kill: set up in {:.1} s",
        t_setup.elapsed().as_secs_f64()
    );

    let sh = Arc::new(Shared {
        addr: addr.clone(),
        fixture: fixture.clone(),
        accepted: AtomicUsize::new(0),
        resent: AtomicUsize::new(0),
    });
    let t0 = Instant::now();
    let clients: Vec<_> = (0..CLIENTS)
        .map(|c| {
            let sh = sh.clone();
            rt.spawn(async move {
                let since = Instant::now();
                let mut v1 = v1_client(&sh.addr, since).await;
                let mut cuzk = cuzk_client(&sh.addr, since).await;
                let mut done = Vec::new();
                for j in (c..JOBS).step_by(CLIENTS) {
                    done.push(if is_cuzk(j) {
                        run_cuzk(&sh, &mut cuzk, j).await
                    } else {
                        run_v1(&sh, &mut v1, j).await
                    });
                }
                done
            })
        })
        .collect();

    // The kill, wherever the clients are, once half were accepted.
    let (killed_at, accepted_at_kill, down) = rt.block_on(async {
        while sh.accepted.load(Ordering::SeqCst) < JOBS / 2 {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        let accepted = sh.accepted.load(Ordering::SeqCst);
        d.kill9();
        (t0.elapsed(), accepted, Instant::now())
    });
    drop(d);
    let d = serve(&addr, &dir, &fc_params, &dir.join("daemon-2.log"));
    let restarted_in = down.elapsed();
    let mut done: Vec<Done> = rt.block_on(async {
        let mut all = Vec::new();
        for c in clients {
            all.extend(c.await.unwrap());
        }
        all
    });
    let wall = t0.elapsed().as_secs_f64();

    // None lost, each once: one result per job, distinct ids of the
    // journal's instance, no gap in their sequence numbers.
    assert_eq!(done.len(), JOBS, "every job came back");
    done.sort_by_key(|x| x.job);
    assert!(done.iter().enumerate().all(|(k, x)| x.job == k));
    let ids: HashSet<&str> = done.iter().map(|x| x.job_id.as_str()).collect();
    assert_eq!(ids.len(), JOBS, "one job per client job");
    let instance = &warm[0][..16];
    let mut seqs: Vec<u64> = warm
        .iter()
        .map(String::as_str)
        .chain(ids.iter().copied())
        .map(|id| {
            assert_eq!(&id[..16], instance, "{id}: one journal, one instance");
            u64::from_str_radix(&id[16..], 16).unwrap()
        })
        .collect();
    seqs.sort_unstable();
    assert!(
        seqs.windows(2).all(|w| w[1] == w[0] + 1),
        "a job was accepted that no client holds (a gap in the ids)"
    );

    // Every result verified here.
    let c = BuiltIn::new(Kind::Bits, BITS_LOG, 0).unwrap();
    let key = ProvingKey::from_file(&cuda_prover_groth16::params::key_path(
        &dir.join("params"),
        &c,
    ))
    .unwrap();
    for x in &done {
        if is_cuzk(x.job) {
            assert!(window_ok(&fixture, &x.proof), "job {}: WindowPoSt", x.job);
        } else {
            let proof = Proof::read(&x.proof[..]).unwrap();
            let input = BuiltIn::new(Kind::Bits, BITS_LOG, seed(x.job))
                .unwrap()
                .public_input();
            assert!(key.verify(&proof, &[input]).unwrap(), "job {}", x.job);
        }
    }

    // The new daemon ran the jobs it took back open from the journal and
    // those submitted to it, each once; nothing failed.
    let log2 = std::fs::read_to_string(dir.join("daemon-2.log")).unwrap();
    let requeued: Vec<&str> = log2
        .lines()
        .filter_map(|l| {
            l.strip_suffix(" queued again from the journal")?
                .rsplit(' ')
                .next()
        })
        .collect();
    for id in &requeued {
        assert!(
            ids.contains(id),
            "{id} was taken back but no client holds it"
        );
    }
    let m = rt.block_on(async {
        Client::connect(&d.addr, None)
            .await
            .unwrap()
            .metrics()
            .await
            .unwrap()
    });
    let (submitted, finished) = (
        metric(&m, "jobs_submitted_total"),
        metric(&m, "jobs_done_total"),
    );
    assert_eq!(metric(&m, "jobs_failed_total"), 0, "{m}");
    assert_eq!(metric(&m, "jobs_cancelled_total"), 0, "{m}");
    assert_eq!(
        finished,
        requeued.len() as u64 + submitted,
        "the new daemon proved the jobs it took back and the new ones, once each"
    );
    let st = rt.block_on(async {
        Client::connect(&d.addr, None)
            .await
            .unwrap()
            .status()
            .await
            .unwrap()
    });
    assert!(st.queued.is_empty() && st.running.is_empty(), "{st:?}");
    let cut = done.iter().filter(|x| x.cut).count();
    assert!(
        cut > 0 && !requeued.is_empty(),
        "the kill cut jobs in flight"
    );

    let cuzk_n = done.iter().filter(|x| is_cuzk(x.job)).count();
    let mut lat: Vec<f64> = done.iter().map(|x| x.latency_ms).collect();
    let mut v1_lat: Vec<f64> = done
        .iter()
        .filter(|x| !is_cuzk(x.job))
        .map(|x| x.latency_ms)
        .collect();
    let mut cuzk_lat: Vec<f64> = done
        .iter()
        .filter(|x| is_cuzk(x.job))
        .map(|x| x.latency_ms)
        .collect();
    println!(
        "load-kill: {JOBS} jobs ({} cuda_prover.v1 bits-2^{BITS_LOG}, {cuzk_n} cuzk.v1 WindowPoSt 2 KiB) \
         from {CLIENTS} clients in {wall:.2} s; killed at {:.2} s with {accepted_at_kill} accepted, \
         serving again {:.2} s later",
        JOBS - cuzk_n,
        killed_at.as_secs_f64(),
        restarted_in.as_secs_f64()
    );
    println!(
        "load-kill: after the restart: {} jobs taken back from the journal and run again, \
         {submitted} submitted to the new daemon, {cut} jobs cut by the kill on the client side \
         ({} Submits or Proves sent again under their request ids)",
        requeued.len(),
        sh.resent.load(Ordering::SeqCst)
    );
    println!("load-kill: latency ms, all: {}", quantiles(&mut lat));
    println!(
        "load-kill: latency ms, cuda_prover.v1: {}",
        quantiles(&mut v1_lat)
    );
    println!(
        "load-kill: latency ms, cuzk.v1: {}",
        quantiles(&mut cuzk_lat)
    );
    drop(d);
    std::fs::remove_dir_all(&dir).ok();
}
