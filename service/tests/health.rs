//! grpc.health.v1 on the daemon's listener: NOT_SERVING while a preloaded
//! key is not in place (its `.lock` held here, as by another process
//! making the key), SERVING once it is, for the daemon as a whole and both
//! APIs; NOT_SERVING again when it drains. A preload that cannot be loaded
//! ends `serve` with an error naming the key; a preload that names nothing
//! this daemon has is refused at start. The CLI's `health --wait-s` waits
//! for SERVING.

mod common;

use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::time::Duration;

use common::{job, start_with_params, temp_dir};
use cuda_prover_engine::{Engine, EngineConfig};
use cuda_prover_pipeline::circuits::{BuiltIn, Kind};
use cuda_prover_pipeline::Context;
use cuda_prover_service::health::{service_names, Preload};
use cuda_prover_service::{Client, Service, ServiceConfig};
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_client::HealthClient;
use tonic_health::pb::HealthCheckRequest;

const BIN: &str = env!("CARGO_BIN_EXE_cuda-prover-service");

async fn health(addr: &str) -> HealthClient<tonic::transport::Channel> {
    HealthClient::new(cuda_prover_service::client::channel(addr).await.unwrap())
}

async fn statuses(cl: &mut HealthClient<tonic::transport::Channel>) -> Vec<i32> {
    let mut out = Vec::new();
    for name in service_names() {
        let r = cl
            .check(HealthCheckRequest {
                service: name.into(),
            })
            .await
            .unwrap();
        out.push(r.into_inner().status);
    }
    out
}

/// Holds `<key>.lock` of a built-in key in `dir`: whoever loads the key
/// waits, as for another process making it.
struct KeyLockHeld {
    _file: std::fs::File,
}

impl KeyLockHeld {
    fn take(dir: &std::path::Path, kind: Kind, log: u32) -> Self {
        let c = BuiltIn::new(kind, log, 0).unwrap();
        let mut name = cuda_prover_engine::params::key_name(&c);
        name.push(".lock");
        let f = std::fs::File::create(dir.join(name)).unwrap();
        // SAFETY: flock on a descriptor owned by `f`, alive for the call.
        assert_eq!(unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX) }, 0);
        Self { _file: f }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn health_is_serving_once_the_preloaded_keys_are_in_place() {
    let params = temp_dir("health");
    let held = KeyLockHeld::take(&params, Kind::Chain, 7);
    let d = start_with_params(1, params.clone(), |c| {
        c.preload = vec!["chain:7".parse().unwrap(), "bits:7".parse().unwrap()];
    })
    .await;
    let mut cl = health(&d.addr).await;
    let not_serving = ServingStatus::NotServing as i32;
    let serving = ServingStatus::Serving as i32;
    // The first key cannot be in place while its lock is held.
    assert_eq!(statuses(&mut cl).await, vec![not_serving; 3]);
    let mut watch = cl
        .watch(HealthCheckRequest {
            service: String::new(),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(watch.message().await.unwrap().unwrap().status, not_serving);
    assert!(d.service.jobs().keys().list().is_empty());
    // The CLI's check says the same, and fails.
    let out = std::process::Command::new(BIN)
        .args(["health", "--server", &d.addr])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "NOT_SERVING");
    // Its waiting form, started now, ends once the keys are in place.
    let waiting = std::process::Command::new(BIN)
        .args(["health", "--server", &d.addr, "--wait-s", "120"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();

    drop(held);
    let next = tokio::time::timeout(Duration::from_secs(120), watch.message())
        .await
        .expect("SERVING within 120 s of the lock's release")
        .unwrap()
        .unwrap();
    assert_eq!(next.status, serving, "{:?}", d.service.readiness().stage());
    assert_eq!(statuses(&mut cl).await, vec![serving; 3]);
    let keys = d.service.jobs().keys().list();
    assert_eq!(keys.len(), 2, "{keys:?}");
    assert!(keys.iter().all(|k| k.pinned), "{keys:?}");
    let out = tokio::task::spawn_blocking(|| waiting.wait_with_output().unwrap())
        .await
        .unwrap();
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "SERVING");

    // It proves with them, then drains: NOT_SERVING again.
    let c = Client::connect(&d.addr, None).await.unwrap();
    let id = c.submit(job("chain", 7, 2, 5, 0)).await.unwrap();
    assert!(c.await_job(&id, |_, _, _| {}).await.unwrap().ok());
    c.drain().await.unwrap();
    assert_eq!(watch.message().await.unwrap().unwrap().status, not_serving);
    assert_eq!(statuses(&mut cl).await, vec![not_serving; 3]);
    std::fs::remove_dir_all(&params).ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_preload_that_fails_ends_serve_naming_the_key() {
    let params = temp_dir("health-bad");
    let c = BuiltIn::new(Kind::Bits, 7, 0).unwrap();
    let key = params.join(cuda_prover_engine::params::key_name(&c));
    std::fs::write(&key, b"not a key").unwrap();
    let service = |preload: &str| {
        let ctx = Arc::new(Context::host(1).unwrap());
        let engine = Engine::new(ctx, EngineConfig::default()).unwrap();
        Service::new(
            Arc::new(engine),
            ServiceConfig {
                params_dirs: vec![params.clone()],
                preload: vec![preload.parse::<Preload>().unwrap()],
                ..Default::default()
            },
        )
    };
    // Checked at start: a directory outside, a size above the limit.
    let e = service("chain:7@/etc").err().unwrap();
    assert!(
        e.contains("preload chain:7@/etc") && e.contains("outside"),
        "{e}"
    );
    let e = service("chain:27").err().unwrap();
    assert!(e.contains("limit"), "{e}");
    // Loaded after the listener is up: the error ends serve.
    let s = service("bits:7").unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let r = tokio::time::timeout(
        Duration::from_secs(60),
        cuda_prover_service::serve(s.clone(), listener, std::future::pending()),
    )
    .await
    .expect("serve ends when the preload fails");
    let e = r.unwrap_err();
    assert!(
        e.contains("cannot preload bits:7") && e.contains(&key.display().to_string()),
        "{e}"
    );
    std::fs::remove_dir_all(&params).ok();
}
