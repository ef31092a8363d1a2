//! grpc.health.v1 on the daemon's listener: NOT_SERVING while a preloaded
//! key is not in place (its `.lock` held here, as by another process
//! making the key), SERVING once it is, for the daemon as a whole and both
//! APIs; NOT_SERVING again when it drains. A preload that cannot be loaded
//! ends `serve` with an error naming the key; a preload that names nothing
//! this daemon has is refused at start. The CLI's `health --wait-s` waits
//! for SERVING. With the feature `filecoin`, the same for a WinningPoSt
//! key (SERVING only once it is loaded, the key cuzk's PreloadSRS names)
//! and, in the daemon binary, a WindowPoSt key named by cuzk's circuit id.

use crate::common;

use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::time::Duration;

use common::process::BIN;
use common::{job, start_with_params, temp_dir};
use cuda_prover_engine::{Engine, EngineConfig};
use cuda_prover_pipeline::circuits::{BuiltIn, Kind};
use cuda_prover_pipeline::Context;
use cuda_prover_service::health::{service_names, Preload};
use cuda_prover_service::{Client, Service, ServiceConfig};
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_client::HealthClient;
use tonic_health::pb::HealthCheckRequest;

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
        let mut name = cuda_prover_groth16::params::key_name(&c);
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
    let key = params.join(cuda_prover_groth16::params::key_name(&c));
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

/// `f`'s output, or a panic naming `what` after 60 s.
#[cfg(feature = "filecoin")]
async fn in_60_s<F: std::future::Future>(what: &str, f: F) -> F::Output {
    tokio::time::timeout(Duration::from_secs(60), f)
        .await
        .unwrap_or_else(|_| panic!("{what}: no answer within 60 s"))
}

/// `--preload winning-post:2KiB` (a Filecoin WinningPoSt key, 2 KiB TEST
/// parameters): while its load cannot run (the runtime's one blocking
/// thread, where the preload runs, held here) every name is NOT_SERVING
/// and no key is loaded; once it is let go, SERVING comes only with the
/// key loaded, and it is the key cuzk's PreloadSRS `winning-2k` names
/// (already loaded, listed by GetStatus as pinned).
#[cfg(feature = "filecoin")]
#[test]
fn a_winning_post_preload_is_loaded_before_serving() {
    use cuda_prover_filecoin::test_params::{parameter_files, TestCircuit};
    use cuda_prover_filecoin::SectorSize;
    use cuda_prover_service::cuzk_proto as pb;
    use cuda_prover_service::cuzk_proto::proving_engine_client::ProvingEngineClient;

    let circuit = TestCircuit::WinningPost(SectorSize::KIB_2);
    let test_params = common::filecoin::test_params(&[circuit]);
    let key = parameter_files(circuit).unwrap().params;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .max_blocking_threads(1)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let (release, held) = std::sync::mpsc::channel::<()>();
        let (holding, is_held) = tokio::sync::oneshot::channel();
        let holder = tokio::task::spawn_blocking(move || {
            let _ = holding.send(());
            let _ = held.recv();
        });
        is_held.await.unwrap();
        let params = temp_dir("health-winning");
        let d = start_with_params(1, params.clone(), |c| {
            c.filecoin_test_params = Some(test_params);
            c.preload = vec!["winning-post:2KiB".parse().unwrap()];
        })
        .await;
        let filecoin = d.service.jobs().filecoin_handle().unwrap();
        let mut cl = health(&d.addr).await;
        let not_serving = ServingStatus::NotServing as i32;
        let serving = ServingStatus::Serving as i32;
        assert_eq!(
            in_60_s("Check", statuses(&mut cl)).await,
            vec![not_serving; 3]
        );
        let mut watch = cl
            .watch(HealthCheckRequest {
                service: String::new(),
            })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(watch.message().await.unwrap().unwrap().status, not_serving);
        assert!(filecoin.loaded_keys().is_empty());

        release.send(()).unwrap();
        holder.await.unwrap();
        let next = in_60_s("Watch", watch.message()).await.unwrap().unwrap();
        assert_eq!(next.status, serving, "{:?}", d.service.readiness().stage());
        assert_eq!(filecoin.loaded_keys(), vec![key.clone()]);
        assert_eq!(statuses(&mut cl).await, vec![serving; 3]);

        let ch = cuda_prover_service::client::channel(&d.addr).await.unwrap();
        let mut cuzk = ProvingEngineClient::new(ch);
        let p = cuzk
            .preload_srs(pb::PreloadSrsRequest {
                circuit_id: "winning-2k".into(),
            })
            .await
            .unwrap()
            .into_inner();
        assert!(p.already_loaded && p.load_time_ms == 0, "{p:?}");
        let st = cuzk
            .get_status(pb::GetStatusRequest {})
            .await
            .unwrap()
            .into_inner();
        let listed: Vec<_> = st
            .loaded_srs
            .iter()
            .map(|k| (k.circuit_id.clone(), k.tier))
            .collect();
        // Listed by the id PreloadSRS took, not its params file.
        assert_eq!(
            listed,
            vec![("winning-2k".to_string(), pb::srs_status::Tier::Hot as i32)]
        );
        drop(d);
        std::fs::remove_dir_all(&params).ok();
    });
}

/// The daemon binary with `--preload wpost-2k` (cuzk's circuit id of the
/// 2 KiB WindowPoSt key): `health --wait-s` ends with SERVING, and by then
/// GetStatus lists the key by that id (cuda_prover.v1's Status with its
/// params file).
#[cfg(feature = "filecoin")]
#[test]
fn serve_preloads_a_window_post_key_named_as_cuzk_names_it() {
    use common::process::{cli, serve_cmd, spawn};
    use cuda_prover_filecoin::test_params::{parameter_files, TestCircuit};
    use cuda_prover_filecoin::SectorSize;
    use cuda_prover_service::cuzk_proto as pb;
    use cuda_prover_service::cuzk_proto::proving_engine_client::ProvingEngineClient;

    let circuit = TestCircuit::WindowPost(SectorSize::KIB_2);
    let test_params = common::filecoin::test_params(&[circuit]);
    let key = parameter_files(circuit).unwrap().params;
    let dir = temp_dir("health-wpost");
    let addr = format!("unix://{}", dir.join("cuzk.sock").display());
    let mut cmd = serve_cmd(&addr, 1);
    cmd.arg("--filecoin-test-params")
        .arg(&test_params)
        .arg("--params-dir")
        .arg(dir.join("params"))
        .args(["--preload", "wpost-2k"]);
    let daemon = spawn(cmd, None);
    assert_eq!(daemon.addr, addr);
    let (ok, out, err) = cli(&["health", "--server", &addr, "--wait-s", "120"]);
    assert!(ok, "{out} {err}");
    assert_eq!(out.trim(), "SERVING");
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (loaded, ours) = rt.block_on(async {
        let ch = cuda_prover_service::client::channel(&addr).await.unwrap();
        let loaded = ProvingEngineClient::new(ch)
            .get_status(pb::GetStatusRequest {})
            .await
            .unwrap()
            .into_inner()
            .loaded_srs;
        let ours = cuda_prover_service::Client::connect(&addr, None)
            .await
            .unwrap()
            .status()
            .await
            .unwrap()
            .filecoin_keys;
        (loaded, ours)
    });
    assert_eq!(loaded.len(), 1, "{loaded:?}");
    assert_eq!(loaded[0].circuit_id, "wpost-2k");
    assert_eq!(ours.len(), 1, "{ours:?}");
    assert_eq!(ours[0].circuit_id, "wpost-2k");
    assert_eq!(ours[0].params_file, key.display().to_string());
    drop(daemon);
    std::fs::remove_dir_all(&dir).ok();
}
