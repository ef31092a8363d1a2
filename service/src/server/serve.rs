//! Serving: both APIs and the health service on one listener (`serve`),
//! and who may reach them: a bearer token on every request when one is set
//! (`TokenCheck`), and no address other than loopback without one
//! (`check_listen`).

use std::net::SocketAddr;
use std::sync::Arc;

use tonic::{Request, Status};

use crate::cuzk_proto::proving_engine_server::ProvingEngineServer;
use crate::health::Stage;
use crate::listener::{Acceptor, ConnectionLimits, Listener};
use crate::proto::prover_server::ProverServer;

use super::Service;

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
