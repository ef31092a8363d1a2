//! Readiness: the standard gRPC health service (`grpc.health.v1.Health`)
//! on every listener, and the keys preloaded at start (`--preload`).
//!
//! The overall service (`""`), `cuda_prover.v1.Prover` and
//! `cuzk.v1.ProvingEngine` are NOT_SERVING until every preloaded key is
//! in place, then SERVING; NOT_SERVING again once the daemon drains or
//! stops. The daemon answers its own RPCs meanwhile (a job submitted
//! before the keys are in place waits for its key like any job): the
//! health status is what supervisors (systemd, Kubernetes, Curio) wait
//! for. The health service needs no token: probes send none, and it says
//! nothing but these statuses.

use std::str::FromStr;
use std::sync::Arc;
use std::time::Instant;

use cuda_prover_pipeline::circuits::Kind;
use parking_lot::Mutex;
use tonic::server::NamedService;
use tonic_health::server::HealthReporter;
use tonic_health::ServingStatus;

use crate::cuzk_proto::proving_engine_server::ProvingEngineServer;
use crate::proto::prover_server::ProverServer;
use crate::server::Service;

/// The names the health service answers for: the overall service and both
/// APIs.
pub fn service_names() -> [&'static str; 3] {
    [
        "",
        <ProverServer<Arc<Service>> as NamedService>::NAME,
        <ProvingEngineServer<Arc<crate::cuzk::Cuzk>> as NamedService>::NAME,
    ]
}

/// A key loaded and pinned before the daemon reports ready.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Preload {
    /// A built-in circuit's key: `chain:12`, `bits:20@SUBDIR` (a params dir
    /// as a request names it; none: the first).
    BuiltIn {
        kind: Kind,
        log_constraints: u32,
        params_dir: String,
    },
    /// A Filecoin key: its kind and the argument after the colon, a
    /// sector size (`c2:32GiB`, the V1_1 key; `winning-post:32GiB`,
    /// `window-post:32GiB`, `snapdeals:32GiB`) or, for C2, a seal proof's
    /// name (`c2:StackedDrg32GiBV1_1`).
    Filecoin(FilecoinPreload, String),
}

/// The kinds of Filecoin keys `--preload` names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FilecoinPreload {
    C2,
    WinningPost,
    WindowPost,
    SnapDeals,
}

impl FilecoinPreload {
    const ALL: [Self; 4] = [
        Self::C2,
        Self::WinningPost,
        Self::WindowPost,
        Self::SnapDeals,
    ];

    /// The name before the colon.
    pub fn name(self) -> &'static str {
        match self {
            Self::C2 => "c2",
            Self::WinningPost => "winning-post",
            Self::WindowPost => "window-post",
            Self::SnapDeals => "snapdeals",
        }
    }
}

/// `32GiB`, `512MiB`, `2KiB`: a size in bytes as sector sizes are written.
fn size_name(bytes: u64) -> String {
    match bytes {
        b if b % (1 << 30) == 0 => format!("{}GiB", b >> 30),
        b if b % (1 << 20) == 0 => format!("{}MiB", b >> 20),
        b if b % (1 << 10) == 0 => format!("{}KiB", b >> 10),
        b => b.to_string(),
    }
}

impl FromStr for Preload {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let form = "chain:LOG, bits:LOG[@DIR], c2:SECTOR-SIZE|REGISTERED-PROOF, \
                    winning-post:SECTOR-SIZE, window-post:SECTOR-SIZE, snapdeals:SECTOR-SIZE \
                    or a cuzk circuit id (porep-32g, winning-32g, wpost-32g, snap-32g)";
        let Some((what, arg)) = s.split_once(':') else {
            // cuzk's circuit ids, as its `[srs] preload` list names them.
            use crate::cuzk::convert::{circuit, Circuit, KeyKind};
            return match circuit(s) {
                Ok(Circuit::Key(kind, bytes)) => {
                    let kind = match kind {
                        KeyKind::Porep => FilecoinPreload::C2,
                        KeyKind::WinningPost => FilecoinPreload::WinningPost,
                        KeyKind::WindowPost => FilecoinPreload::WindowPost,
                        KeyKind::SnapDeals => FilecoinPreload::SnapDeals,
                    };
                    Ok(Preload::Filecoin(kind, size_name(bytes)))
                }
                Ok(Circuit::Named(_)) => Err(format!("preload '{s}': expected {form}")),
                Err(e) => Err(format!("preload '{s}': {e}")),
            };
        };
        if let Some(kind) = FilecoinPreload::ALL.into_iter().find(|k| k.name() == what) {
            if arg.is_empty() {
                return Err(format!(
                    "preload '{s}': name the sector size ({what}:32GiB)"
                ));
            }
            return Ok(Preload::Filecoin(kind, arg.to_string()));
        }
        let kind: Kind = what
            .parse()
            .map_err(|e: String| format!("preload '{s}': {e} (expected {form})"))?;
        let (log, dir) = match arg.split_once('@') {
            Some((l, d)) => (l, d.to_string()),
            None => (arg, String::new()),
        };
        let log_constraints = log
            .parse()
            .map_err(|_| format!("preload '{s}': '{log}' is not a log2 of constraints"))?;
        Ok(Preload::BuiltIn {
            kind,
            log_constraints,
            params_dir: dir,
        })
    }
}

impl std::fmt::Display for Preload {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Preload::BuiltIn {
                kind,
                log_constraints,
                params_dir,
            } if params_dir.is_empty() => write!(f, "{}:{log_constraints}", kind.name()),
            Preload::BuiltIn {
                kind,
                log_constraints,
                params_dir,
            } => write!(f, "{}:{log_constraints}@{params_dir}", kind.name()),
            Preload::Filecoin(kind, arg) => write!(f, "{}:{arg}", kind.name()),
        }
    }
}

/// Where the daemon stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stage {
    /// Preloading keys: not serving yet.
    Loading,
    /// Every preloaded key is in place.
    Ready,
    /// A preload failed (the daemon stops with this error).
    Failed(String),
    /// Draining or stopping: not serving any more.
    Draining,
}

/// The daemon's readiness, published to the health service of every
/// listener.
pub struct Readiness {
    stage: Mutex<Stage>,
    /// One per listener's health service.
    reporters: tokio::sync::Mutex<Vec<HealthReporter>>,
    started: std::sync::atomic::AtomicBool,
    changed: tokio::sync::watch::Sender<Stage>,
}

impl Default for Readiness {
    fn default() -> Self {
        Self {
            stage: Mutex::new(Stage::Loading),
            reporters: tokio::sync::Mutex::new(Vec::new()),
            started: std::sync::atomic::AtomicBool::new(false),
            changed: tokio::sync::watch::channel(Stage::Loading).0,
        }
    }
}

impl Readiness {
    pub fn stage(&self) -> Stage {
        self.stage.lock().clone()
    }

    /// Follows the stage (for a server that stops on a failed preload).
    pub fn watch(&self) -> tokio::sync::watch::Receiver<Stage> {
        self.changed.subscribe()
    }

    fn status(stage: &Stage) -> ServingStatus {
        match stage {
            Stage::Ready => ServingStatus::Serving,
            _ => ServingStatus::NotServing,
        }
    }

    /// A listener's health service: its reporter gets the current status
    /// of every name before the listener serves, and each change after.
    pub async fn attach(&self, mut reporter: HealthReporter) {
        let mut all = self.reporters.lock().await;
        let status = Self::status(&self.stage());
        for name in service_names() {
            // A fresh entry: the reporter starts "" as SERVING, and a
            // watcher of a changed entry would see its first status twice.
            reporter.clear_service_status(name).await;
            reporter.set_service_status(name, status).await;
        }
        all.push(reporter);
    }

    /// Moves to `stage` (a daemon that drains never becomes ready again)
    /// and publishes it.
    pub async fn set(&self, stage: Stage) {
        let mut all = self.reporters.lock().await;
        {
            let mut s = self.stage.lock();
            if *s == Stage::Draining || matches!(*s, Stage::Failed(_)) {
                return;
            }
            *s = stage.clone();
        }
        let status = Self::status(&stage);
        for r in all.iter_mut() {
            for name in service_names() {
                r.set_service_status(name, status).await;
            }
        }
        self.changed.send_replace(stage);
    }

    /// Whether this call is the first (the preload runs once, whatever the
    /// number of listeners).
    pub(crate) fn first_start(&self) -> bool {
        !self.started.swap(true, std::sync::atomic::Ordering::SeqCst)
    }
}

/// Loads and pins every key of `service`'s `preload` list, in order, then
/// moves to Ready (to Failed at the first key that cannot be loaded).
pub async fn preload(service: Arc<Service>) {
    let list = service.config().preload.clone();
    for p in list {
        let s = service.clone();
        let shown = p.to_string();
        let t = Instant::now();
        let r = tokio::task::spawn_blocking(move || s.preload_key(&p))
            .await
            .map_err(|e| e.to_string())
            .and_then(|r| r);
        match r {
            Ok(()) => log::info!("preloaded {shown} in {:.2} s", t.elapsed().as_secs_f64()),
            Err(e) => {
                let e = format!("cannot preload {shown}: {e}");
                log::error!("{e}");
                service.readiness().set(Stage::Failed(e)).await;
                return;
            }
        }
    }
    service.readiness().set(Stage::Ready).await;
    log::info!("ready: every preloaded key is in place (grpc.health.v1: SERVING)");
}

/// The name grpc.health.v1 gives a status.
pub fn status_name(status: i32) -> &'static str {
    use tonic_health::pb::health_check_response::ServingStatus as S;
    match S::try_from(status) {
        Ok(s) => s.as_str_name(),
        Err(_) => "UNKNOWN",
    }
}

/// The health of `service` (`""`: the daemon as a whole) at `addr`, by
/// its grpc.health.v1 name (SERVING, NOT_SERVING). With `wait`, follows
/// the status (connecting again while the daemon is not up yet) until it
/// is SERVING, and fails once `wait` has passed.
pub async fn check(
    addr: &str,
    service: &str,
    wait: Option<std::time::Duration>,
) -> Result<&'static str, String> {
    use tonic_health::pb::health_check_response::ServingStatus as S;
    use tonic_health::pb::health_client::HealthClient;
    use tonic_health::pb::HealthCheckRequest;
    let request = || HealthCheckRequest {
        service: service.to_string(),
    };
    let once = async {
        let ch = crate::client::channel(addr).await?;
        let mut cl = HealthClient::new(ch);
        let rpc = |e: tonic::Status| format!("{}: {}", e.code(), e.message());
        if wait.is_none() {
            let r = cl.check(request()).await.map_err(rpc)?;
            return Ok(status_name(r.into_inner().status));
        }
        let mut stream = cl.watch(request()).await.map_err(rpc)?.into_inner();
        while let Some(m) = stream.message().await.map_err(rpc)? {
            if m.status == S::Serving as i32 {
                return Ok(status_name(m.status));
            }
        }
        Err("the daemon closed the health stream".to_string())
    };
    let Some(wait) = wait else {
        return once.await;
    };
    let end = tokio::time::Instant::now() + wait;
    let mut last = String::from("no answer");
    loop {
        let attempt = Box::pin(check(addr, service, None));
        // A daemon that is up: follow its status until SERVING.
        match tokio::time::timeout_at(end, attempt).await {
            Err(_) => break,
            Ok(Ok(_)) => {
                return match tokio::time::timeout_at(end, once).await {
                    Ok(r) => r,
                    Err(_) => Err(format!(
                        "{addr}: not SERVING within {:.0} s",
                        wait.as_secs_f64()
                    )),
                }
            }
            Ok(Err(e)) => last = e,
        }
        if tokio::time::Instant::now() >= end {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    Err(format!(
        "{addr}: not SERVING within {:.0} s ({last})",
        wait.as_secs_f64()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn preload_names_parse_and_print_back() {
        for s in [
            "chain:12",
            "bits:20@sub/dir",
            "c2:32GiB",
            "c2:StackedDrg2KiBV1_1",
            "winning-post:32GiB",
            "window-post:2KiB",
            "snapdeals:64GiB",
        ] {
            assert_eq!(s.parse::<Preload>().unwrap().to_string(), s);
        }
        // cuzk's circuit ids name the same keys.
        for (cuzk, ours) in [
            ("porep-32g", "c2:32GiB"),
            ("winning-32g", "winning-post:32GiB"),
            ("wpost-2k", "window-post:2KiB"),
            ("snap-512m", "snapdeals:512MiB"),
            ("snap-8MiB", "snapdeals:8MiB"),
        ] {
            assert_eq!(cuzk.parse::<Preload>().unwrap().to_string(), ours);
        }
        for bad in [
            "chain",
            "chain:x",
            "ring:12",
            "c2:",
            ":12",
            "winning-post:",
            "snapdeals:",
            "winning-32t",
            "window-32g",
        ] {
            assert!(bad.parse::<Preload>().is_err(), "{bad}");
        }
    }

    #[test]
    fn the_names_are_the_services_of_the_listener() {
        assert_eq!(
            service_names(),
            ["", "cuda_prover.v1.Prover", "cuzk.v1.ProvingEngine"]
        );
    }
}
