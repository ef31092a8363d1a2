//! An in-process daemon on simulated host devices, for the service tests.
#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use cuda_prover_engine::{Engine, EngineConfig};
use cuda_prover_pipeline::circuits::{BuiltIn, Kind};
use cuda_prover_pipeline::{Context, Proof, ProvingKey};
use cuda_prover_service::listener::{ListenAddr, Listener, DEFAULT_SOCKET_MODE};
use cuda_prover_service::{proto, Client, Service, ServiceConfig};
use tokio::sync::oneshot;

#[cfg(feature = "filecoin")]
pub mod filecoin;
pub mod process;

pub struct Daemon {
    pub addr: String,
    pub service: Arc<Service>,
    pub ctx: Arc<Context>,
    pub params: PathBuf,
    stop: Option<oneshot::Sender<()>>,
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        self.service.jobs().stop_now();
    }
}

/// A fresh directory under the system's temp dir.
pub fn temp_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!(
        "cuda-prover-service-{tag}-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    ));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Params shared by the tests of one binary (keys are generated once).
pub fn shared_params() -> PathBuf {
    let d = std::env::temp_dir().join(format!("cuda-prover-service-params-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

pub async fn start(devices: u32, tweak: impl FnOnce(&mut ServiceConfig)) -> Daemon {
    start_with_params(devices, shared_params(), tweak).await
}

pub async fn start_with_params(
    devices: u32,
    params: PathBuf,
    tweak: impl FnOnce(&mut ServiceConfig),
) -> Daemon {
    let ctx = Arc::new(Context::host(devices).unwrap());
    let engine = Engine::new(ctx.clone(), EngineConfig::default()).unwrap();
    let mut config = ServiceConfig {
        params_dirs: vec![params.clone()],
        ..Default::default()
    };
    tweak(&mut config);
    let service = Service::new(Arc::new(engine), config).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let (tx, rx) = oneshot::channel();
    let svc = service.clone();
    tokio::spawn(async move {
        cuda_prover_service::serve(svc, listener, async {
            let _ = rx.await;
        })
        .await
        .unwrap();
    });
    Daemon {
        addr,
        service,
        ctx,
        params,
        stop: Some(tx),
    }
}

/// A daemon on a unix socket (`unix://` + its path in `addr`) with the
/// default socket mode.
pub async fn start_unix(devices: u32, tweak: impl FnOnce(&mut ServiceConfig)) -> Daemon {
    let ctx = Arc::new(Context::host(devices).unwrap());
    let engine = Engine::new(ctx.clone(), EngineConfig::default()).unwrap();
    let params = shared_params();
    let mut config = ServiceConfig {
        params_dirs: vec![params.clone()],
        ..Default::default()
    };
    tweak(&mut config);
    let service = Service::new(Arc::new(engine), config).unwrap();
    let path = temp_dir("sock").join("daemon.sock");
    let listener = Listener::bind(&ListenAddr::Unix(path), DEFAULT_SOCKET_MODE)
        .await
        .unwrap();
    let addr = listener.describe();
    let (tx, rx) = oneshot::channel();
    let svc = service.clone();
    tokio::spawn(async move {
        cuda_prover_service::serve(svc, listener, async {
            let _ = rx.await;
        })
        .await
        .unwrap();
    });
    Daemon {
        addr,
        service,
        ctx,
        params,
        stop: Some(tx),
    }
}

impl Daemon {
    /// Stops serving (the socket file of a unix daemon is removed).
    pub fn stop_serving(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
    }
}

/// The request that names a built-in circuit's key (Preload, Evict), in
/// the first params dir.
pub fn built_in_key(circuit: &str, log: u32) -> proto::KeyRequest {
    proto::KeyRequest {
        circuit: circuit.into(),
        log_constraints: log,
        params_dir: String::new(),
    }
}

/// A daemon's counter, from its Prometheus text.
pub fn metric(text: &str, name: &str) -> u64 {
    let prefix = format!("cuda_prover_service_{name} ");
    text.lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .unwrap_or_else(|| panic!("no {name} in {text}"))
        .trim()
        .parse::<f64>()
        .unwrap() as u64
}

pub async fn client(d: &Daemon) -> Client {
    Client::connect(&d.addr, None).await.unwrap()
}

pub fn job(
    circuit: &str,
    log: u32,
    partitions: u32,
    seed: u64,
    priority: u32,
) -> proto::SubmitRequest {
    proto::SubmitRequest {
        job: Some(proto::submit_request::Job::BuiltIn(proto::BuiltInJob {
            circuit: circuit.into(),
            log_constraints: log,
            partitions,
            seed: Some(seed),
            synthesis: String::new(),
        })),
        priority,
        devices: vec![],
        params_dir: String::new(),
        name: String::new(),
        deadline_ms: 0,
        request_id: String::new(),
    }
}

/// Checks every proof of a seeded built-in job with bellperson's verifier,
/// here in the client, against the key in the params dir.
pub fn verify_here(params: &std::path::Path, kind: Kind, log: u32, seed: u64, proofs: &[Vec<u8>]) {
    let c = BuiltIn::new(kind, log, 0).unwrap();
    let key = ProvingKey::from_file(&cuda_prover_groth16::params::key_path(params, &c)).unwrap();
    for (k, bytes) in proofs.iter().enumerate() {
        assert_eq!(bytes.len(), 192, "bellperson's proof encoding");
        let proof = Proof::read(&bytes[..]).unwrap();
        let input = BuiltIn::new(kind, log, seed + k as u64)
            .unwrap()
            .public_input();
        assert!(key.verify(&proof, &[input]).unwrap(), "proof {k} verifies");
    }
}

/// A cuzk.v1 client (Curio's stub) of a daemon, taking messages up to
/// 256 MiB.
pub async fn cuzk_client(
    addr: &str,
) -> cuda_prover_service::cuzk_proto::proving_engine_client::ProvingEngineClient<
    tonic::transport::Channel,
> {
    let ch = cuda_prover_service::client::channel(addr).await.unwrap();
    cuda_prover_service::cuzk_proto::proving_engine_client::ProvingEngineClient::new(ch)
        .max_decoding_message_size(256 << 20)
        .max_encoding_message_size(256 << 20)
}

/// A cuzk.v1 ProveRequest as Curio's client sends it: the submission
/// wrapped.
pub fn prove_request(
    submit: cuda_prover_service::cuzk_proto::SubmitProofRequest,
) -> cuda_prover_service::cuzk_proto::ProveRequest {
    cuda_prover_service::cuzk_proto::ProveRequest {
        submit: Some(submit),
    }
}

/// Submits `req` and returns its id once the daemon runs it (on a loaded
/// machine it may take a moment to start): a job that occupies a runner
/// while the jobs submitted after it queue.
pub async fn submit_running(cl: &Client, req: proto::SubmitRequest) -> String {
    let id = cl.submit(req).await.unwrap();
    let t = std::time::Instant::now();
    while !cl
        .status()
        .await
        .unwrap()
        .running
        .iter()
        .any(|j| j.job_id == id)
    {
        assert!(t.elapsed() < Duration::from_secs(60), "job {id} never ran");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    id
}

/// Slows every job's partitions 0..n on the device side.
pub fn slow_partitions(ctx: &Context, n: i64, each: Duration) {
    for k in 0..n {
        ctx.set_tag_delay(k, each).unwrap();
    }
}
