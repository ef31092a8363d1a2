//! The daemon's accepted connections: bounded in number, closed when idle,
//! and an accept that fails (no file descriptor left, a connection reset
//! before it was taken) retried with backoff instead of ending the server.
//! The daemon listens on TCP or on a unix socket (`unix:///path`), whose
//! file is created with the mode asked for and removed when the server
//! stops.
//!
//! A connection beyond the bound is accepted and closed at once, so the
//! listen queue never fills with connections no one will serve. A
//! connection that reads nothing for the idle time is closed; the server
//! pings every HTTP/2 client more often than that, so a live client
//! awaiting a long job always has traffic.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::str::FromStr;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream, UnixListener, UnixStream};
use tokio::sync::{mpsc, OwnedSemaphorePermit, Semaphore};
use tokio::time::{sleep, Instant, Sleep};
use tokio_stream::wrappers::ReceiverStream;
use tonic::transport::server::{Connected, TcpConnectInfo};

/// How the daemon takes connections.
#[derive(Debug, Clone, Copy)]
pub struct ConnectionLimits {
    /// Connections open at once; more are closed as they arrive.
    pub max_connections: usize,
    /// A connection that reads nothing for this long is closed.
    pub idle_timeout: Duration,
}

impl ConnectionLimits {
    /// At most `requested`, and at most what the process's file limit
    /// leaves after `RESERVED_FDS` for keys, logs and the runtime.
    pub fn within_file_limit(requested: usize, idle_timeout: Duration) -> Self {
        let room = open_file_limit()
            .map(|n| n.saturating_sub(RESERVED_FDS))
            .unwrap_or(requested as u64);
        Self {
            max_connections: (requested as u64).min(room).max(1) as usize,
            idle_timeout,
        }
    }
}

/// File descriptors kept for everything but client connections.
pub const RESERVED_FDS: u64 = 64;

/// The soft limit of open files of this process (`RLIMIT_NOFILE`).
pub fn open_file_limit() -> Option<u64> {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes one rlimit through the pointer, which points
    // at a live, writable value of that type.
    let rc = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) };
    // rlim_t is u64 on Linux but not on every platform.
    #[allow(clippy::unnecessary_cast)]
    let cur = r.rlim_cur as u64;
    (rc == 0 && r.rlim_cur != libc::RLIM_INFINITY).then_some(cur)
}

/// Where the daemon listens: `host:port`, or `unix:///path/to.sock`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListenAddr {
    Tcp(SocketAddr),
    Unix(PathBuf),
}

impl FromStr for ListenAddr {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        if let Some(path) = s.strip_prefix("unix://") {
            if path.is_empty() {
                return Err(format!("{s}: no socket path (unix:///path/to.sock)"));
            }
            return Ok(ListenAddr::Unix(PathBuf::from(path)));
        }
        s.parse()
            .map(ListenAddr::Tcp)
            .map_err(|e| format!("{s}: {e} (host:port or unix:///path)"))
    }
}

/// The default mode of the socket file: the daemon's user and group.
pub const DEFAULT_SOCKET_MODE: u32 = 0o660;

/// A bound listener, TCP or unix.
pub enum Listener {
    Tcp(TcpListener),
    Unix(UnixListener, SocketFile),
}

impl From<TcpListener> for Listener {
    fn from(l: TcpListener) -> Self {
        Listener::Tcp(l)
    }
}

impl Listener {
    /// Binds `addr`; a unix socket's file gets `mode` before it appears at
    /// its path (it is bound under a temporary name beside it, given the
    /// mode, then renamed). A stale socket file (no daemon answers on it) is
    /// replaced; a live one, or a path that is not a socket, is an error.
    pub async fn bind(addr: &ListenAddr, mode: u32) -> Result<Self, String> {
        match addr {
            ListenAddr::Tcp(a) => TcpListener::bind(a)
                .await
                .map(Listener::Tcp)
                .map_err(|e| format!("cannot listen on {a}: {e}")),
            ListenAddr::Unix(path) => bind_unix(path, mode),
        }
    }

    /// The address as `--listen` takes it (the port the system chose, for
    /// port 0).
    pub fn describe(&self) -> String {
        match self {
            Listener::Tcp(l) => l
                .local_addr()
                .map(|a| a.to_string())
                .unwrap_or_else(|e| format!("(unknown address: {e})")),
            Listener::Unix(_, f) => format!("unix://{}", f.path.display()),
        }
    }
}

fn bind_unix(path: &Path, mode: u32) -> Result<Listener, String> {
    let shown = path.display();
    if mode & !0o777 != 0 {
        return Err(format!(
            "socket mode {mode:o}: permission bits only (at most 777)"
        ));
    }
    match std::fs::symlink_metadata(path) {
        Ok(m) if !m.file_type().is_socket() => {
            return Err(format!(
                "cannot listen on unix://{shown}: the path exists and is not a socket"
            ))
        }
        Ok(_) => {
            if std::os::unix::net::UnixStream::connect(path).is_ok() {
                return Err(format!(
                    "cannot listen on unix://{shown}: a daemon already answers there"
                ));
            }
            log::info!("replacing the stale socket file {shown}");
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(format!("cannot listen on unix://{shown}: {e}")),
    }
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(format!(".{}.tmp", std::process::id()));
    let tmp = PathBuf::from(tmp);
    let _ = std::fs::remove_file(&tmp);
    let fail = |e: io::Error| format!("cannot listen on unix://{shown}: {e}");
    let listener = UnixListener::bind(&tmp).map_err(fail)?;
    let placed = std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(mode))
        .and_then(|()| std::fs::rename(&tmp, path))
        .and_then(|()| std::fs::metadata(path));
    match placed {
        Ok(m) => Ok(Listener::Unix(
            listener,
            SocketFile {
                path: path.to_path_buf(),
                dev: m.dev(),
                ino: m.ino(),
            },
        )),
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            Err(fail(e))
        }
    }
}

/// A unix socket's file: removed when dropped, if the path is still this
/// socket (not one a later daemon put there).
pub struct SocketFile {
    path: PathBuf,
    dev: u64,
    ino: u64,
}

impl SocketFile {
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for SocketFile {
    fn drop(&mut self) {
        if let Ok(m) = std::fs::symlink_metadata(&self.path) {
            if m.dev() == self.dev && m.ino() == self.ino {
                let _ = std::fs::remove_file(&self.path);
            }
        }
    }
}

/// What `incoming` accepts from.
pub enum Acceptor {
    Tcp(TcpListener),
    Unix(UnixListener),
}

impl Acceptor {
    async fn accept(&self) -> io::Result<(Stream, String)> {
        match self {
            Acceptor::Tcp(l) => {
                let (s, peer) = l.accept().await?;
                let _ = s.set_nodelay(true);
                Ok((Stream::Tcp(s, peer), peer.to_string()))
            }
            Acceptor::Unix(l) => {
                let (s, _) = l.accept().await?;
                Ok((Stream::Unix(s), "a unix socket client".to_string()))
            }
        }
    }
}

/// An accepted stream.
pub enum Stream {
    Tcp(TcpStream, SocketAddr),
    Unix(UnixStream),
}

/// The longest wait between two failed accepts.
const MAX_BACKOFF: Duration = Duration::from_secs(1);

/// Accepts from `listener` into a stream for tonic, forever: only the
/// server's shutdown (dropping the stream) ends it.
pub fn incoming(
    listener: Acceptor,
    limits: ConnectionLimits,
) -> ReceiverStream<io::Result<Connection>> {
    let (tx, rx) = mpsc::channel(16);
    let open = Arc::new(Semaphore::new(limits.max_connections));
    tokio::spawn(async move {
        let mut backoff = Duration::from_millis(5);
        loop {
            let (stream, peer) = tokio::select! {
                r = listener.accept() => match r {
                    Ok(a) => a,
                    Err(e) => {
                        log::warn!("accepting a connection failed ({e}); retrying in {backoff:?}");
                        sleep(backoff).await;
                        backoff = (backoff * 2).min(MAX_BACKOFF);
                        continue;
                    }
                },
                _ = tx.closed() => return,
            };
            backoff = Duration::from_millis(5);
            let Ok(permit) = open.clone().try_acquire_owned() else {
                log::warn!(
                    "refused a connection from {peer}: {} connections are open (the limit)",
                    limits.max_connections
                );
                drop(stream);
                continue;
            };
            let conn = Connection::new(stream, peer, permit, limits.idle_timeout);
            if tx.send(Ok(conn)).await.is_err() {
                return;
            }
        }
    });
    ReceiverStream::new(rx)
}

/// One accepted connection: its slot among the open ones is given back when
/// it is dropped; reading fails with `TimedOut` once it has read nothing for
/// the idle time.
pub struct Connection {
    stream: Stream,
    peer: String,
    _slot: OwnedSemaphorePermit,
    idle_timeout: Duration,
    idle: Pin<Box<Sleep>>,
}

impl Connection {
    fn new(
        stream: Stream,
        peer: String,
        slot: OwnedSemaphorePermit,
        idle_timeout: Duration,
    ) -> Self {
        Self {
            stream,
            peer,
            _slot: slot,
            idle_timeout,
            idle: Box::pin(sleep(idle_timeout)),
        }
    }
}

impl Connected for Connection {
    type ConnectInfo = TcpConnectInfo;

    fn connect_info(&self) -> TcpConnectInfo {
        match &self.stream {
            Stream::Tcp(s, peer) => TcpConnectInfo {
                local_addr: s.local_addr().ok(),
                remote_addr: Some(*peer),
            },
            Stream::Unix(_) => TcpConnectInfo {
                local_addr: None,
                remote_addr: None,
            },
        }
    }
}

impl AsyncRead for Connection {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let polled = match &mut self.stream {
            Stream::Tcp(s, _) => Pin::new(s).poll_read(cx, buf),
            Stream::Unix(s) => Pin::new(s).poll_read(cx, buf),
        };
        match polled {
            Poll::Ready(r) => {
                if buf.filled().len() > before {
                    let t = self.idle_timeout;
                    self.idle.as_mut().reset(Instant::now() + t);
                }
                Poll::Ready(r)
            }
            Poll::Pending => match self.idle.as_mut().poll(cx) {
                Poll::Ready(()) => Poll::Ready(Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!("{} read nothing for {:?}", self.peer, self.idle_timeout),
                ))),
                Poll::Pending => Poll::Pending,
            },
        }
    }
}

impl AsyncWrite for Connection {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match &mut self.stream {
            Stream::Tcp(s, _) => Pin::new(s).poll_write(cx, buf),
            Stream::Unix(s) => Pin::new(s).poll_write(cx, buf),
        }
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match &mut self.stream {
            Stream::Tcp(s, _) => Pin::new(s).poll_flush(cx),
            Stream::Unix(s) => Pin::new(s).poll_flush(cx),
        }
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match &mut self.stream {
            Stream::Tcp(s, _) => Pin::new(s).poll_shutdown(cx),
            Stream::Unix(s) => Pin::new(s).poll_shutdown(cx),
        }
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match &mut self.stream {
            Stream::Tcp(s, _) => Pin::new(s).poll_write_vectored(cx, bufs),
            Stream::Unix(s) => Pin::new(s).poll_write_vectored(cx, bufs),
        }
    }

    fn is_write_vectored(&self) -> bool {
        match &self.stream {
            Stream::Tcp(s, _) => s.is_write_vectored(),
            Stream::Unix(s) => s.is_write_vectored(),
        }
    }
}
