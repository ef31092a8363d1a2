//! A client of the proving service: submit, await (with progress), prove,
//! cancel, status, metrics, preload, evict, drain, shutdown.

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use tonic::metadata::MetadataValue;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::{Channel, Endpoint};
use tonic::{Request, Status};

use crate::proto;
use crate::proto::prover_client::ProverClient;

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("cannot connect to {addr}: {message}")]
    Connect { addr: String, message: String },
    /// The server refused or failed the call (busy, bad request, ...).
    #[error("{}: {}", code_name(.0.code()), .0.message())]
    Rpc(#[from] Status),
    #[error("the server closed the stream of job {0} before its result (did the daemon stop?)")]
    Lost(String),
    #[error("{0}")]
    Invalid(String),
}

fn code_name(c: tonic::Code) -> &'static str {
    match c {
        tonic::Code::ResourceExhausted => "busy",
        tonic::Code::InvalidArgument => "bad request",
        tonic::Code::PermissionDenied => "not allowed",
        tonic::Code::Unauthenticated => "unauthenticated",
        tonic::Code::NotFound => "not found",
        tonic::Code::Unavailable => "unavailable",
        tonic::Code::OutOfRange => "too large",
        tonic::Code::DeadlineExceeded => "deadline exceeded",
        tonic::Code::AlreadyExists => "already exists",
        _ => "error",
    }
}

/// A channel to a daemon at `addr`: `host:port`, a full `http://` URI, or
/// `unix:///path/to.sock`.
pub async fn channel(addr: &str) -> Result<Channel, String> {
    if let Some(path) = addr.strip_prefix("unix://") {
        let path = Arc::new(PathBuf::from(path));
        // The URI is not used to connect: the connector opens the socket.
        return Endpoint::from_static("http://localhost")
            .connect_with_connector(UnixConnector(path))
            .await
            .map_err(|e| format!("{e} (is the daemon running?)"));
    }
    let uri = if addr.contains("://") {
        addr.to_string()
    } else {
        format!("http://{addr}")
    };
    Endpoint::from_shared(uri)
        .map_err(|e| e.to_string())?
        .connect()
        .await
        .map_err(|e| format!("{e} (is the daemon running?)"))
}

/// Opens the daemon's unix socket for each connection of a channel.
#[derive(Clone)]
struct UnixConnector(Arc<PathBuf>);

impl tower_service::Service<tonic::transport::Uri> for UnixConnector {
    type Response = hyper_util::rt::TokioIo<tokio::net::UnixStream>;
    type Error = std::io::Error;
    type Future =
        Pin<Box<dyn Future<Output = Result<Self::Response, Self::Error>> + Send + 'static>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, _uri: tonic::transport::Uri) -> Self::Future {
        let path = self.0.clone();
        Box::pin(async move {
            let s = tokio::net::UnixStream::connect(&*path).await?;
            Ok(hyper_util::rt::TokioIo::new(s))
        })
    }
}

/// Adds the bearer token to every call.
#[derive(Clone)]
pub struct Token(Option<MetadataValue<tonic::metadata::Ascii>>);

impl tonic::service::Interceptor for Token {
    fn call(&mut self, mut req: Request<()>) -> Result<Request<()>, Status> {
        if let Some(t) = &self.0 {
            req.metadata_mut().insert("authorization", t.clone());
        }
        Ok(req)
    }
}

/// How a job ended, as the client sees it.
#[derive(Debug, Clone)]
pub struct JobOutcome {
    pub job_id: String,
    /// The state as a string (a daemon older than `job_state` sends only
    /// this).
    pub state: String,
    /// `Unspecified` from a daemon older than the field.
    pub job_state: proto::JobState,
    pub verified: bool,
    pub proofs: Vec<Vec<u8>>,
    pub error: String,
    /// Why the job failed or was cancelled (`Unspecified` for done jobs).
    pub error_code: proto::ErrorCode,
    pub report_json: String,
}

impl JobOutcome {
    /// Done, and every proof verified by the daemon.
    pub fn ok(&self) -> bool {
        self.state == "done" && self.verified
    }
}

#[derive(Clone)]
pub struct Client {
    inner: ProverClient<InterceptedService<Channel, Token>>,
    addr: String,
    token: Token,
}

impl Client {
    /// `addr` as host:port, a full http:// URI or unix:///path; `token` when the
    /// daemon requires one.
    pub async fn connect(addr: &str, token: Option<&str>) -> Result<Self, ClientError> {
        let fail = |message: String| ClientError::Connect {
            addr: addr.to_string(),
            message,
        };
        let channel = channel(addr).await.map_err(fail)?;
        let token = token
            .map(|t| {
                format!("Bearer {t}")
                    .parse()
                    .map_err(|_| ClientError::Invalid("the token is not valid ASCII".into()))
            })
            .transpose()?;
        Ok(Self::over(channel, addr, Token(token)))
    }

    fn over(channel: Channel, addr: &str, token: Token) -> Self {
        Self {
            inner: ProverClient::with_interceptor(channel, token.clone())
                .max_decoding_message_size(256 << 20),
            addr: addr.to_string(),
            token,
        }
    }

    pub fn addr(&self) -> &str {
        &self.addr
    }

    pub async fn submit(&self, req: proto::SubmitRequest) -> Result<String, ClientError> {
        Ok(self.inner.clone().submit(req).await?.into_inner().job_id)
    }

    /// Submits under the idempotency key `request_id` (1 to 256 bytes),
    /// sending the request again while the daemon cannot be reached or the
    /// call is cut (the daemon stopped or restarts: UNAVAILABLE, a lost
    /// connection), connecting anew each time, until `within` has passed.
    /// The key makes every send name one job: the one the first send that
    /// reached the daemon made, with `--state-dir` also across a restart.
    /// Other errors (bad request, busy, the key reused with other inputs:
    /// ALREADY_EXISTS) are returned at once.
    pub async fn submit_idempotent(
        &self,
        mut req: proto::SubmitRequest,
        request_id: &str,
        within: std::time::Duration,
    ) -> Result<String, ClientError> {
        if request_id.is_empty() {
            return Err(ClientError::Invalid(
                "submit_idempotent needs a request id".into(),
            ));
        }
        req.request_id = request_id.to_string();
        let since = std::time::Instant::now();
        let mut client = self.clone();
        loop {
            let e = match client.submit(req.clone()).await {
                Ok(id) => return Ok(id),
                Err(e) => e,
            };
            let again = match &e {
                ClientError::Rpc(s) => matches!(
                    s.code(),
                    tonic::Code::Unavailable | tonic::Code::Unknown | tonic::Code::Cancelled
                ),
                ClientError::Connect { .. } | ClientError::Lost(_) => true,
                ClientError::Invalid(_) => false,
            };
            if !again || since.elapsed() >= within {
                return Err(e);
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            if let Ok(ch) = channel(&self.addr).await {
                client = Self::over(ch, &self.addr, self.token.clone());
            }
        }
    }

    /// Waits for the job's result; `progress(done, total, state)` on every
    /// progress event.
    pub async fn await_job(
        &self,
        job_id: &str,
        progress: impl FnMut(u32, u32, &str),
    ) -> Result<JobOutcome, ClientError> {
        let stream = self
            .inner
            .clone()
            .r#await(proto::AwaitRequest {
                job_id: job_id.to_string(),
            })
            .await?
            .into_inner();
        follow(job_id, stream, progress).await
    }

    /// Submits and waits in one call.
    pub async fn prove(
        &self,
        req: proto::SubmitRequest,
        progress: impl FnMut(u32, u32, &str),
    ) -> Result<JobOutcome, ClientError> {
        let stream = self.inner.clone().prove(req).await?.into_inner();
        follow("(new)", stream, progress).await
    }

    pub async fn cancel(&self, job_id: &str) -> Result<String, ClientError> {
        Ok(self
            .inner
            .clone()
            .cancel(proto::CancelRequest {
                job_id: job_id.to_string(),
            })
            .await?
            .into_inner()
            .state)
    }

    pub async fn status(&self) -> Result<proto::StatusReply, ClientError> {
        Ok(self
            .inner
            .clone()
            .status(proto::StatusRequest {})
            .await?
            .into_inner())
    }

    pub async fn metrics(&self) -> Result<String, ClientError> {
        Ok(self
            .inner
            .clone()
            .metrics(proto::MetricsRequest {})
            .await?
            .into_inner()
            .prometheus_text)
    }

    pub async fn preload(&self, req: proto::KeyRequest) -> Result<proto::KeyReply, ClientError> {
        Ok(self.inner.clone().preload(req).await?.into_inner())
    }

    pub async fn evict(&self, req: proto::KeyRequest) -> Result<proto::KeyReply, ClientError> {
        Ok(self.inner.clone().evict(req).await?.into_inner())
    }

    pub async fn drain(&self) -> Result<(), ClientError> {
        self.inner.clone().drain(proto::DrainRequest {}).await?;
        Ok(())
    }

    pub async fn shutdown(&self, now: bool) -> Result<(), ClientError> {
        self.inner
            .clone()
            .shutdown(proto::ShutdownRequest { now })
            .await?;
        Ok(())
    }
}

/// The daemon job of a PoSt input file (what `cuda-prover-filecoin
/// test-post` writes; `cuda_prover_filecoin::post_input` says its layout): what `submit --filecoin-post` sends. The file is read and its
/// vanilla proofs decoded here, so a malformed one never reaches the
/// daemon; the job's priority is the kind's (300 winning, 200 window)
/// unless the request names one.
#[cfg(feature = "filecoin")]
pub fn filecoin_post_job(
    path: &std::path::Path,
) -> Result<proto::submit_request::Job, ClientError> {
    use cuda_prover_filecoin::c2::prover_id_hex;
    use cuda_prover_filecoin::post_input::PostInput;
    let input = PostInput::read(path).map_err(|e| ClientError::Invalid(e.to_string()))?;
    Ok(proto::submit_request::Job::FilecoinPost(
        proto::FilecoinPostJob {
            kind: input.kind.name().into(),
            sector_size: input.size.bytes(),
            randomness: input.randomness.to_vec(),
            prover_id: prover_id_hex(&input.prover_id),
            vanilla_proofs: input.vanilla_proofs,
            partition_index: 0,
        },
    ))
}

async fn follow(
    job_id: &str,
    mut stream: tonic::Streaming<proto::JobEvent>,
    mut progress: impl FnMut(u32, u32, &str),
) -> Result<JobOutcome, ClientError> {
    let mut id = job_id.to_string();
    loop {
        let ev = match stream.message().await {
            Ok(Some(ev)) => ev,
            Ok(None) => return Err(ClientError::Lost(id)),
            Err(status)
                if status.code() == tonic::Code::Unknown
                    || status.code() == tonic::Code::Unavailable
                    || status.code() == tonic::Code::Internal =>
            {
                return Err(ClientError::Lost(format!("{id} ({})", status.message())))
            }
            Err(status) => return Err(status.into()),
        };
        id = ev.job_id.clone();
        match ev.event {
            Some(proto::job_event::Event::Progress(p)) => progress(p.done, p.total, &p.state),
            Some(proto::job_event::Event::Result(r)) => {
                return Ok(JobOutcome {
                    job_id: ev.job_id,
                    job_state: r.job_state(),
                    error_code: r.error_code(),
                    state: r.state,
                    verified: r.verified,
                    proofs: r.proofs,
                    error: r.error,
                    report_json: r.report_json,
                })
            }
            None => {}
        }
    }
}
