//! The daemon's accepted connections: bounded in number, closed when idle,
//! and an accept that fails (no file descriptor left, a connection reset
//! before it was taken) retried with backoff instead of ending the server.
//!
//! A connection beyond the bound is accepted and closed at once, so the
//! listen queue never fills with connections no one will serve. A
//! connection that reads nothing for the idle time is closed; the server
//! pings every HTTP/2 client more often than that, so a live client
//! awaiting a long job always has traffic.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
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
    (rc == 0 && r.rlim_cur != libc::RLIM_INFINITY).then_some(r.rlim_cur as u64)
}

/// The longest wait between two failed accepts.
const MAX_BACKOFF: Duration = Duration::from_secs(1);

/// Accepts from `listener` into a stream for tonic, forever: only the
/// server's shutdown (dropping the stream) ends it.
pub fn incoming(
    listener: TcpListener,
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
            let _ = stream.set_nodelay(true);
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
    stream: TcpStream,
    peer: SocketAddr,
    _slot: OwnedSemaphorePermit,
    idle_timeout: Duration,
    idle: Pin<Box<Sleep>>,
}

impl Connection {
    fn new(
        stream: TcpStream,
        peer: SocketAddr,
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
        TcpConnectInfo {
            local_addr: self.stream.local_addr().ok(),
            remote_addr: Some(self.peer),
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
        match Pin::new(&mut self.stream).poll_read(cx, buf) {
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
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }
}
