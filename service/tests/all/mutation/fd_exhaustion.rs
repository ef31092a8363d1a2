//! The fd-exhaustion class (a daemon process under `ulimit -n 96`, so a
//! bound of 32 connections): floods of idle, garbage-sending and
//! half-greeting connections must be refused beyond the bound, each served
//! one closed when idle or on garbage, the daemon must serve a client again
//! and finish the job accepted before the flood, survive its soft file
//! limit cut below the descriptors it holds (accept failing with EMFILE),
//! and end only when asked, with status 0 then.

use crate::common;

use std::time::{Duration, Instant};

use common::{job, temp_dir};
use cuda_prover_service::{Client, ClientError};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::counts::{Counts, PER_REQUEST};
use super::fd_daemon::{Proc, IDLE_S, NOFILE};
use super::Rng;

/// What a connection first saw from the daemon.
enum First {
    /// The daemon's HTTP/2 greeting: the connection is served.
    Greeted(tokio::net::TcpStream),
    /// Closed (or reset) before any byte: refused.
    Closed,
    /// Nothing yet.
    Silent(tokio::net::TcpStream),
}

async fn first(mut s: tokio::net::TcpStream, within: Duration) -> First {
    let mut buf = [0u8; 256];
    match tokio::time::timeout(within, s.read(&mut buf)).await {
        Err(_) => First::Silent(s),
        Ok(Ok(0)) | Ok(Err(_)) => First::Closed,
        Ok(Ok(_)) => First::Greeted(s),
    }
}

/// Whether the daemon closes `s` within `within` (reading what it sends).
async fn closes(mut s: tokio::net::TcpStream, within: Duration) -> bool {
    let mut buf = [0u8; 4096];
    tokio::time::timeout(within, async {
        loop {
            match s.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    })
    .await
    .is_ok()
}

/// A client of `addr` that gets through within `within` (connections are
/// refused while every slot is taken): its status, or None.
async fn status_within(addr: &str, within: Duration, n: &mut Counts) -> Option<Client> {
    let end = Instant::now() + within;
    while Instant::now() < end {
        n.requests += 1;
        let attempt = tokio::time::timeout(Duration::from_secs(5), async {
            let cl = Client::connect(addr, None).await?;
            cl.status().await?;
            Ok::<_, ClientError>(cl)
        })
        .await;
        match attempt {
            Ok(Ok(cl)) => {
                n.successes += 1;
                return Some(cl);
            }
            // Refused while the slots are taken: a clean refusal.
            Ok(Err(_)) | Err(_) => n.clean_errors += 1,
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    n.hangs += 1;
    None
}

/// The fd-exhaustion class (see the file's comment); its notes for the
/// printed summary.
pub(super) async fn fd_exhaustion(rng: &mut Rng, n: &mut Counts) -> String {
    let bound = (NOFILE - cuda_prover_service::listener::RESERVED_FDS) as usize;
    let idle = Duration::from_secs(IDLE_S);
    let dir = temp_dir("mutation-fds");
    let mut p = Proc::start(&dir);

    // A job accepted before the flood finishes through it.
    let cl = Client::connect(&p.addr, None).await.unwrap();
    n.requests += 1;
    let before = cl
        .submit(job("chain", 7, 2, rng.below(1000), 0))
        .await
        .unwrap();
    n.successes += 1;
    drop(cl);

    // A flood of idle connections: at most the bound are served, the rest
    // closed as they arrive.
    let flood = 2 * bound + rng.below(3 * bound as u64) as usize;
    let mut conns = Vec::new();
    for _ in 0..flood {
        n.requests += 1;
        match tokio::net::TcpStream::connect(&p.addr).await {
            Ok(s) => conns.push(s),
            Err(_) => n.clean_errors += 1,
        }
    }
    let firsts = all(conns
        .into_iter()
        .map(|s| first(s, idle / 2))
        .collect::<Vec<_>>())
    .await;
    let (mut held, mut silent, mut refused) = (Vec::new(), Vec::new(), 0usize);
    for f in firsts {
        match f {
            First::Greeted(s) => held.push(s),
            First::Silent(s) => silent.push(s),
            First::Closed => refused += 1,
        }
    }
    n.successes += held.len().min(bound) as u64;
    n.clean_errors += refused as u64;
    if held.len() > bound {
        n.wrong_successes += (held.len() - bound) as u64;
        eprintln!(
            "WRONG SUCCESS: {} connections served at once, above the bound of {bound}",
            held.len()
        );
    }
    if refused == 0 {
        n.wrong_successes += 1;
        eprintln!("WRONG SUCCESS: {flood} connections and none refused (bound {bound})");
    }
    let served_at_once = held.len();
    // The served ones get garbage, half a greeting or nothing: each is
    // closed by the daemon (a protocol error, or the idle timeout).
    for s in held.iter_mut() {
        match rng.below(3) {
            0 => {
                let len = 1 + rng.below(64) as usize;
                let _ = s.write_all(&rng.bytes(len)).await;
            }
            1 => {
                let _ = s.write_all(b"PRI * HTTP/2.0\r\n").await;
            }
            _ => {}
        }
    }
    // Those still waiting are served or refused once slots free up.
    let later = all(silent
        .into_iter()
        .map(|s| first(s, 3 * idle))
        .collect::<Vec<_>>());
    let closing = all(held
        .into_iter()
        .map(|s| closes(s, 3 * idle))
        .collect::<Vec<_>>());
    let (later, closing) = tokio::join!(later, closing);
    let waited = later.len();
    for f in later {
        match f {
            First::Greeted(s) => {
                n.successes += 1;
                if !closes(s, 3 * idle).await {
                    n.hangs += 1;
                    eprintln!("HANG: an idle connection was not closed");
                }
            }
            First::Closed => n.clean_errors += 1,
            First::Silent(_) => {
                n.hangs += 1;
                eprintln!("HANG: a connection neither served nor refused");
            }
        }
    }
    let not_closed = closing.iter().filter(|c| !**c).count();
    if not_closed > 0 {
        n.hangs += not_closed as u64;
        eprintln!("HANG: {not_closed} idle or garbage connections were not closed");
    }
    // Served again, and the job from before the flood finished.
    if let Some(cl) = status_within(&p.addr, 4 * idle, n).await {
        n.requests += 1;
        match tokio::time::timeout(PER_REQUEST, cl.await_job(&before, |_, _, _| {})).await {
            Ok(Ok(out)) if out.ok() => n.successes += 1,
            other => {
                n.lost_jobs += 1;
                eprintln!("LOST: the job from before the flood: {other:?}");
            }
        }
    }
    if let Some(st) = p.ended() {
        n.crashes += 1;
        eprintln!("CRASH: the daemon ended during the flood: {st}");
    }

    // Its soft limit cut to two descriptors above what it holds (the
    // client above gone first): accepts
    // fail with EMFILE while the bound is far away. It must wait and retry,
    // serve again once descriptors free up, and not end.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let spare = 2;
    let soft = p.open_fds() + spare;
    let was = p.set_soft_nofile(soft);
    let emfile_flood = bound / 2 + rng.below(bound as u64) as usize;
    let mut conns = Vec::new();
    for _ in 0..emfile_flood {
        if let Ok(s) = tokio::net::TcpStream::connect(&p.addr).await {
            conns.push(s);
        }
    }
    tokio::time::sleep(idle / 2).await;
    let emfile_seen = std::fs::read_to_string(&p.log)
        .unwrap_or_default()
        .contains("accepting a connection failed");
    assert!(
        emfile_seen,
        "{emfile_flood} connections with {spare} descriptors to spare and no accept failed: {}",
        std::fs::read_to_string(&p.log).unwrap_or_default()
    );
    if let Some(st) = p.ended() {
        n.crashes += 1;
        eprintln!("CRASH: the daemon ended with no descriptor left: {st}");
    }
    drop(conns);
    // Still under the cut limit: a client gets through once the flood's
    // connections are gone.
    let served_cut = status_within(&p.addr, 4 * idle, n).await.is_some();
    p.set_soft_nofile(was);
    // And with descriptors back, a job proves.
    n.requests += 1;
    let after = async {
        let cl = Client::connect(&p.addr, None).await?;
        let id = cl.submit(job("chain", 7, 1, rng.below(1000), 0)).await?;
        cl.await_job(&id, |_, _, _| {}).await
    };
    match tokio::time::timeout(PER_REQUEST, after).await {
        Ok(Ok(out)) if out.ok() => n.successes += 1,
        other => {
            n.lost_jobs += 1;
            eprintln!("LOST: a job after the cut limit: {other:?}");
        }
    }
    // It ends only when asked: with status 0 on SIGTERM.
    match p.ended() {
        Some(st) => {
            n.crashes += 1;
            eprintln!("CRASH: the daemon ended unasked: {st}");
        }
        None => {
            // SAFETY: kill sends SIGTERM to the daemon this test started.
            assert_eq!(unsafe { libc::kill(p.child.id() as i32, libc::SIGTERM) }, 0);
            let end = Instant::now() + Duration::from_secs(20);
            let st = loop {
                if let Some(st) = p.ended() {
                    break Some(st);
                }
                if Instant::now() > end {
                    break None;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            };
            match st {
                Some(st) if st.success() => {}
                other => {
                    n.crashes += 1;
                    eprintln!(
                        "CRASH: SIGTERM ended the daemon with {other:?}: {}",
                        std::fs::read_to_string(&p.log).unwrap_or_default()
                    );
                }
            }
        }
    }
    std::fs::remove_dir_all(&dir).ok();
    format!(
        "bound {bound} under ulimit -n {NOFILE}: {flood} connections, {served_at_once} served \
         at once, {refused} refused, {waited} waited for a slot; limit cut to {soft} \
         descriptors: {emfile_flood} connections, accepts failed (EMFILE) and were retried, \
         a client {} served under the cut limit",
        if served_cut { "was" } else { "was not" },
    )
}

/// Runs the futures concurrently (each a task); their outputs in order.
async fn all<F>(fs: Vec<F>) -> Vec<F::Output>
where
    F: std::future::Future + Send + 'static,
    F::Output: Send + 'static,
{
    let tasks: Vec<_> = fs.into_iter().map(tokio::spawn).collect();
    let mut out = Vec::with_capacity(tasks.len());
    for t in tasks {
        out.push(t.await.expect("a connection task"));
    }
    out
}
