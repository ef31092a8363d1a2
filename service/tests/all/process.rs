//! The daemon as a process, driven by its CLI: serve, submit (the job id
//! alone on the last line), await (exit 0 only when every proof
//! verified), status, cancel; a daemon killed mid-job gives the client a
//! clear error and the next start is clean; a damaged journal is set
//! aside; finished jobs are kept for the retention time.

// The client's error is tonic's `Status` inside, unboxed (as in the
// library).
#![allow(clippy::result_large_err)]

use crate::common;

use std::process::Command;
use std::time::{Duration, Instant};

use common::metric;
use common::process::{cli, serve_cmd, spawn, ChildDaemon as Daemon, BIN};
use cuda_prover_service::{Client, ClientError};

fn serve(listen: &str, params: &std::path::Path) -> Daemon {
    let mut cmd = serve_cmd(listen, 2);
    cmd.arg("--params-dir").arg(params);
    spawn(cmd, None)
}

#[test]
fn cli_submit_await_status_cancel() {
    let params = common::temp_dir("cli");
    let d = serve("127.0.0.1:0", &params);
    let (ok, out, err) = cli(&[
        "submit",
        "--server",
        &d.addr,
        "--circuit",
        "bits",
        "--log-constraints",
        "7",
        "--partitions",
        "3",
        "--seed",
        "7",
    ]);
    assert!(ok, "{err}");
    let id = out.lines().last().unwrap().trim().to_string();
    assert!(
        id.len() == 32 && id.bytes().all(|b| b.is_ascii_hexdigit()),
        "the last line is the job id alone (32 hex digits): {out:?}"
    );
    let proofs = params.join("proofs");
    let (ok, out, err) = cli(&[
        "await",
        "--server",
        &d.addr,
        &id,
        "--proofs-out",
        proofs.to_str().unwrap(),
    ]);
    assert!(ok, "await exits 0 when every proof verified: {out} {err}");
    assert!(out.contains("all 3 proofs verified"), "{out}");
    let files: Vec<Vec<u8>> = (0..3)
        .map(|k| std::fs::read(proofs.join(format!("partition-{k}.proof"))).unwrap())
        .collect();
    common::verify_here(
        &params,
        cuda_prover_pipeline::circuits::Kind::Bits,
        7,
        7,
        &files,
    );
    let (ok, out, _) = cli(&["status", "--server", &d.addr]);
    assert!(
        ok && out.contains("device 1:") && out.contains("bits-2^7@"),
        "{out}"
    );
    // A cancelled job: await exits non-zero, naming the state.
    let (_, out, _) = cli(&[
        "submit",
        "--server",
        &d.addr,
        "--circuit",
        "chain",
        "--log-constraints",
        "7",
        "--partitions",
        "5000",
    ]);
    let id = out.lines().last().unwrap().trim().to_string();
    let (ok, out, err) = cli(&["cancel", "--server", &d.addr, &id]);
    assert!(ok, "{err}");
    assert!(out.contains(&format!("job {id}:")), "{out}");
    let (ok, _, err) = cli(&["await", "--server", &d.addr, &id]);
    assert!(!ok, "a cancelled job is not a success");
    assert!(err.contains("cancelled"), "{err}");
    // A bad request: clear error, non-zero exit.
    let (ok, _, err) = cli(&["submit", "--server", &d.addr, "--circuit", "nope"]);
    assert!(
        !ok && err.contains("bad request") && err.contains("circuit"),
        "{err}"
    );
    // No daemon there: a clear error.
    let (ok, _, err) = cli(&["status", "--server", "127.0.0.1:1"]);
    assert!(!ok && err.contains("cannot connect"), "{err}");
    // Off loopback without a token: the daemon refuses to start.
    let (ok, _, err) = cli(&["serve", "--listen", "0.0.0.0:0", "--backend", "host"]);
    assert!(!ok && err.contains("needs a token"), "{err}");
}

#[test]
fn a_daemon_killed_mid_job_is_a_clear_error_and_restarts_clean() {
    let params = common::temp_dir("kill");
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mut d = serve("127.0.0.1:0", &params);
    let addr = d.addr.clone();
    let first_ids = rt.block_on(async {
        let cl = Client::connect(&addr, None).await.unwrap();
        // Keys first, so that the long job is proving when it dies.
        let warm = cl.submit(common::job("chain", 7, 1, 1, 0)).await.unwrap();
        assert!(cl.await_job(&warm, |_, _, _| {}).await.unwrap().ok());
        let id = cl
            .submit(common::job("chain", 7, 5000, 2, 0))
            .await
            .unwrap();
        let started = Instant::now();
        let mut killed = false;
        let child = &mut d.child;
        let err = cl
            .await_job(&id, |done, _, _| {
                if done >= 2 && !killed {
                    child.kill().unwrap();
                    killed = true;
                }
                assert!(started.elapsed() < Duration::from_secs(120));
            })
            .await
            .expect_err("the daemon died");
        assert!(killed, "the job was running when the daemon died");
        assert!(matches!(err, ClientError::Lost(_)), "{err}");
        assert!(err.to_string().contains("did the daemon stop"), "{err}");
        (warm, id)
    });
    let _ = d.child.wait();
    // Same address, same params: a clean start.
    let d2 = serve(&addr, &params);
    rt.block_on(async {
        let cl = Client::connect(&d2.addr, None).await.unwrap();
        let st = cl.status().await.unwrap();
        assert!(
            st.queued.is_empty() && st.running.is_empty(),
            "nothing left over"
        );
        // The dead run's ids are unknown to the new run, never another
        // job's: its jobs get ids of their own (the same sequence numbers).
        for old in [&first_ids.0, &first_ids.1] {
            let e = cl.await_job(old, |_, _, _| {}).await.unwrap_err();
            assert!(e.to_string().contains("no job"), "{e}");
            assert!(
                matches!(&e, ClientError::Rpc(s) if s.code() == tonic::Code::NotFound),
                "{e}"
            );
        }
        let a = cl.submit(common::job("chain", 7, 1, 3, 0)).await.unwrap();
        let b = cl.submit(common::job("chain", 7, 2, 3, 0)).await.unwrap();
        assert!(
            a != first_ids.0 && b != first_ids.1,
            "ids repeat across runs: {a} {b}"
        );
        assert_eq!(a[..16], b[..16], "one run, one instance");
        assert_ne!(a[..16], first_ids.0[..16], "a new run, a new instance");
        assert!(cl.await_job(&a, |_, _, _| {}).await.unwrap().ok());
        assert!(cl.await_job(&b, |_, _, _| {}).await.unwrap().ok());
    });
    // No temporary files of the dead daemon's key writes are left.
    for f in std::fs::read_dir(&params).unwrap() {
        let name = f.unwrap().file_name().to_string_lossy().into_owned();
        assert!(!name.contains(".tmp"), "leftover {name}");
    }
}

/// `serve` refuses what `cuda-prover prove` refuses, and values that would
/// take no job at all or wrap, before it listens, naming the option.
#[test]
fn serve_refuses_out_of_bound_options() {
    let params = common::temp_dir("bounds");
    let p = params.to_str().unwrap();
    let cases: &[(&[&str], &str)] = &[
        (&["--max-queue", "0"], "--max-queue"),
        (&["--max-running", "0"], "--max-running"),
        (&["--workers-per-device", "0"], "--workers-per-device"),
        (&["--workers-per-device", "65"], "--workers-per-device"),
        (&["--key-memory-mib", "0"], "--key-memory-mib"),
        (
            &["--key-memory-mib", "18446744073709551615"],
            "--key-memory-mib",
        ),
        (&["--max-request-bytes", "0"], "--max-request-bytes"),
        (
            &["--max-filecoin-request-mib", "0"],
            "--max-filecoin-request-mib",
        ),
        (
            &["--max-filecoin-request-mib", "17592186044416"],
            "--max-filecoin-request-mib",
        ),
        (&["--host-devices", "65"], "--host-devices"),
        (&["--token", "abc\ndef"], "visible ASCII"),
        (&["--token", "two words"], "visible ASCII"),
        (&["--token", ""], "empty"),
    ];
    for (extra, named) in cases {
        let mut args = vec![
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--backend",
            "host",
            "--params-dir",
            p,
        ];
        args.extend_from_slice(extra);
        let (ok, out, err) = cli(&args);
        assert!(!ok, "serve {extra:?} was accepted");
        assert!(
            !out.contains("listening on"),
            "serve {extra:?} listened: {out}"
        );
        assert!(
            err.contains(named),
            "serve {extra:?}: the error should name {named}: {err}"
        );
    }
    // The bounds themselves are accepted (the daemon starts and is stopped).
    let (ok, _, err) = cli(&[
        "serve",
        "--listen",
        "not-an-address",
        "--max-queue",
        "1",
        "--max-running",
        "1024",
        "--workers-per-device",
        "64",
        "--key-memory-mib",
        "1",
        "--max-filecoin-request-mib",
        "256",
        "--token",
        "s3cr3t-~!",
    ]);
    assert!(!ok);
    assert!(
        err.contains("--listen not-an-address"),
        "only the address is wrong: {err}"
    );
}

/// Idle connections past the open-file limit neither end the daemon nor
/// keep clients out for good: under `ulimit -n 200` (room for 136
/// connections) 400 idle sockets are refused past the bound or closed when
/// idle (2 s here), and a client is then served.
#[test]
fn idle_connections_neither_exhaust_nor_end_the_daemon() {
    let params = common::temp_dir("idle");
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg("ulimit -n 200 && exec \"$0\" \"$@\"")
        .arg(BIN)
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--backend",
            "host",
            "--host-devices",
            "1",
            "--idle-timeout-s",
            "2",
        ])
        .arg("--params-dir")
        .arg(&params);
    let mut d = spawn(cmd, None);
    let idle: Vec<std::net::TcpStream> = (0..400)
        .filter_map(|_| std::net::TcpStream::connect(&d.addr).ok())
        .collect();
    assert!(
        idle.len() >= 200,
        "only {} connections were made",
        idle.len()
    );
    std::thread::sleep(Duration::from_secs(4));
    assert!(
        d.child.try_wait().unwrap().is_none(),
        "the daemon ended under idle connections"
    );
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let served = tokio::time::timeout(Duration::from_secs(60), async {
            let cl = Client::connect(&d.addr, None).await.unwrap();
            let id = cl.submit(common::job("chain", 7, 1, 1, 0)).await.unwrap();
            cl.await_job(&id, |_, _, _| {}).await.unwrap().ok()
        })
        .await;
        assert_eq!(served, Ok(true), "a client is served after the idle ones");
    });
    drop(idle);
    assert!(
        d.child.try_wait().unwrap().is_none(),
        "the daemon is still up"
    );
}

/// `serve --listen unix://PATH --socket-mode`: the socket file gets the
/// mode, the CLI reaches the daemon there, SIGTERM stops it and removes
/// the file; a stale file (a daemon killed with SIGKILL) is replaced by
/// the next start, and a live one is not taken over.
#[test]
fn serves_on_a_unix_socket_and_removes_it_on_sigterm() {
    use std::os::unix::fs::PermissionsExt;

    let dir = common::temp_dir("unix");
    let sock = dir.join("prover.sock");
    let listen = format!("unix://{}", sock.display());
    let start = |mode: &str| {
        let mut cmd = Command::new(BIN);
        cmd.args(["serve", "--listen", &listen, "--socket-mode", mode])
            .args(["--backend", "host", "--host-devices", "1"])
            .arg("--params-dir")
            .arg(dir.join("params"));
        spawn(cmd, None)
    };
    let mut d = start("0600");
    assert_eq!(d.addr, listen);
    let mode = std::fs::metadata(&sock).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let (ok, out, err) = cli(&["status", "--server", &listen]);
    assert!(ok && out.contains("device 0:"), "{out} {err}");
    // A second daemon does not take the live socket over.
    let (ok, _, err) = cli(&["serve", "--listen", &listen, "--backend", "host"]);
    assert!(!ok && err.contains("already answers"), "{err}");
    // SIGTERM: a clean stop, the file removed.
    // SAFETY: kill sends a signal to the child this test started.
    assert_eq!(unsafe { libc::kill(d.child.id() as i32, libc::SIGTERM) }, 0);
    let status = d.child.wait().unwrap();
    assert!(status.success(), "{status:?}");
    assert!(!sock.exists(), "the socket file is removed on SIGTERM");
    // SIGKILL leaves the file; the next start replaces it.
    let mut d = start("0660");
    d.child.kill().unwrap();
    let _ = d.child.wait();
    assert!(sock.exists());
    let d = start("0660");
    let mode = std::fs::metadata(&sock).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o660);
    let (ok, _, err) = cli(&["status", "--server", &d.addr]);
    assert!(ok, "{err}");
    // A path that is not a socket is refused, not removed.
    let plain = dir.join("plain-file");
    std::fs::write(&plain, b"keep").unwrap();
    let (ok, _, err) = cli(&[
        "serve",
        "--listen",
        &format!("unix://{}", plain.display()),
        "--backend",
        "host",
    ]);
    assert!(!ok && err.contains("not a socket"), "{err}");
    assert_eq!(std::fs::read(&plain).unwrap(), b"keep");
    let (ok, _, err) = cli(&["serve", "--listen", &listen, "--socket-mode", "0999"]);
    assert!(!ok && err.contains("octal"), "{err}");
}

/// A daemon with a job journal in `state` (and `extra` options), its
/// stderr in `log`.
fn serve_journaled(
    params: &std::path::Path,
    state: &std::path::Path,
    log: &std::path::Path,
    extra: &[&str],
) -> Daemon {
    let mut cmd = serve_cmd("127.0.0.1:0", 1);
    cmd.arg("--params-dir")
        .arg(params)
        .arg("--state-dir")
        .arg(state)
        .args(extra);
    spawn(cmd, Some(log))
}

fn not_found(e: &ClientError) -> bool {
    matches!(e, ClientError::Rpc(s) if s.code() == tonic::Code::NotFound)
}

fn code(e: &ClientError) -> Option<tonic::Code> {
    match e {
        ClientError::Rpc(s) => Some(s.code()),
        _ => None,
    }
}

/// A journal cut in the middle of its last record, or with one record's
/// bytes overwritten, does not stop the daemon: every record that checks
/// out is read back, and those jobs (queued behind a long one when the
/// daemon was killed) keep their ids and are proved after the restart;
/// the job whose record was damaged is gone (its id NOT_FOUND, never
/// another job's); the log names the journal, the job whose record was
/// damaged, how many jobs were recovered, and where the file's bytes were
/// kept (`jobs.journal.damaged-<time>`, unchanged). New jobs' ids go on
/// past the cut record's job, or (overwritten bytes, whose job is not
/// known for sure) are of a new instance; the next start reads the new
/// journal cleanly. A file
/// that is not a journal at all is kept aside the same way and the daemon
/// starts without its jobs.
#[test]
fn a_damaged_journal_keeps_the_jobs_it_can_read() {
    use cuda_prover_pipeline::circuits::Kind;
    let dir = common::temp_dir("damaged-journal");
    let params = dir.join("params");
    let rt = tokio::runtime::Runtime::new().unwrap();
    let log = dir.join("daemon.log");
    let one_runner = ["--max-running", "1"];
    let seq = |id: &str| u64::from_str_radix(&id[16..], 16).unwrap();
    for (case, cut) in [
        ("cut in its last record", true),
        ("a record overwritten", false),
    ] {
        let state = dir.join(format!("state-{cut}"));
        let journal = state.join("jobs.journal");
        let mut d = serve_journaled(&params, &state, &log, &one_runner);
        // A long job holds the one runner; three short ones wait behind it.
        let (blocker, ids) = rt.block_on(async {
            let cl = Client::connect(&d.addr, None).await.unwrap();
            let blocker = cl
                .submit(common::job("chain", 7, 5000, 1, 0))
                .await
                .unwrap();
            let mut ids = Vec::new();
            for seed in [2, 3, 4] {
                ids.push(
                    cl.submit(common::job("chain", 7, 1, seed, 0))
                        .await
                        .unwrap(),
                );
            }
            let st = cl.status().await.unwrap();
            assert!(st.queued.len() >= 3, "{case}: {st:?}");
            (blocker, ids)
        });
        d.kill9();
        // The last record (cut), or the middle one of the three (overwritten).
        let lost = if cut { 2 } else { 1 };
        let spans = cuda_prover_service::journal::frame_spans(&journal).unwrap();
        let span = spans
            .iter()
            .find(|(_, s)| *s == Some(seq(&ids[lost])))
            .unwrap()
            .0
            .clone();
        let mut bytes = std::fs::read(&journal).unwrap();
        let middle = ((span.start + span.end) / 2) as usize;
        if cut {
            assert_eq!(span.end, bytes.len() as u64, "{case}: the last record");
            bytes.truncate(middle);
        } else {
            bytes[middle] ^= 0xff;
        }
        std::fs::write(&journal, &bytes).unwrap();

        let d = serve_journaled(&params, &state, &log, &one_runner);
        let said = std::fs::read_to_string(&log).unwrap();
        let aside: Vec<_> = std::fs::read_dir(&state)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| {
                p.file_name()
                    .unwrap()
                    .to_string_lossy()
                    .starts_with("jobs.journal.damaged-")
            })
            .collect();
        assert_eq!(aside.len(), 1, "{case}: one file kept aside: {aside:?}");
        assert_eq!(
            std::fs::read(&aside[0]).unwrap(),
            bytes,
            "{case}: kept as it was"
        );
        for needle in [
            format!("the job journal {} is damaged", journal.display()),
            format!("the record of job {}", ids[lost]),
            "3 jobs recovered".to_string(),
            aside[0].display().to_string(),
        ] {
            assert!(
                said.contains(&needle),
                "{case}: the log says {needle}: {said}"
            );
        }
        rt.block_on(async {
            let cl = Client::connect(&d.addr, None).await.unwrap();
            cl.cancel(&blocker).await.unwrap();
            for (k, id) in ids.iter().enumerate() {
                let r = cl.await_job(id, |_, _, _| {}).await;
                if k == lost {
                    assert!(not_found(&r.unwrap_err()), "{case}: job {k} is gone");
                } else {
                    let out = r.unwrap_or_else(|e| panic!("{case}: job {k}: {e}"));
                    assert!(out.ok(), "{case}: job {k}: {} {}", out.state, out.error);
                    common::verify_here(&params, Kind::Chain, 7, 2 + k as u64, &out.proofs);
                }
            }
            let new = cl.submit(common::job("chain", 7, 1, 9, 0)).await.unwrap();
            if cut {
                // The cut record's job is known: ids go on past it.
                assert_eq!(new[..16], ids[0][..16], "{case}: the same instance");
                assert!(seq(&new) > seq(&ids[lost]), "{case}: {new}");
            } else {
                // What the overwritten bytes held is not known for sure.
                assert_ne!(new[..16], ids[0][..16], "{case}: a new instance");
            }
            assert!(cl.await_job(&new, |_, _, _| {}).await.unwrap().ok());
        });
        drop(d);
        // The new journal reads back cleanly, with the jobs' results.
        let d = serve_journaled(&params, &state, &log, &one_runner);
        let said = std::fs::read_to_string(&log).unwrap();
        assert!(!said.contains("is damaged"), "{case}: {said}");
        rt.block_on(async {
            let cl = Client::connect(&d.addr, None).await.unwrap();
            let kept = if cut { &ids[1] } else { &ids[2] };
            assert!(cl.await_job(kept, |_, _, _| {}).await.unwrap().ok());
        });
    }

    // Not a journal: kept aside, the daemon starts without its jobs.
    let state = dir.join("state-foreign");
    std::fs::create_dir_all(&state).unwrap();
    let journal = state.join("jobs.journal");
    std::fs::write(&journal, vec![0x5a; 8192]).unwrap();
    let d = serve_journaled(&params, &state, &log, &[]);
    common::process::assert_not_a_journal(&log, &journal);
    rt.block_on(async {
        let cl = Client::connect(&d.addr, None).await.unwrap();
        let id = cl.submit(common::job("chain", 7, 1, 2, 0)).await.unwrap();
        assert!(cl.await_job(&id, |_, _, _| {}).await.unwrap().ok());
    });
    std::fs::remove_dir_all(&dir).ok();
}

/// cuda_prover.v1's request_id: the same id twice is one job (Submit
/// answers the first job's id, Prove follows that job), also after a
/// kill -9 and a restart on the same state directory (the id was
/// journaled before Submit answered), for a job that had ended and for
/// one that was queued; the id with other inputs is ALREADY_EXISTS naming
/// the job, before and after the restart; an id over 256 bytes is
/// INVALID_ARGUMENT; without an id, every submit is a job. The new daemon
/// accepted no job for the ids it knew and proved the queued one once.
/// `Client::submit_idempotent` called while no daemon listens gets through
/// once one starts on the address, and its id names one job.
#[test]
fn v1_request_ids_name_one_job_across_a_restart() {
    use cuda_prover_pipeline::circuits::Kind;
    use cuda_prover_service::proto;
    let dir = common::temp_dir("v1-request-ids");
    let (params, state) = (dir.join("params"), dir.join("state"));
    let log = dir.join("daemon.log");
    let rt = tokio::runtime::Runtime::new().unwrap();
    let one_runner = ["--max-running", "1"];
    let req = |seed: u64, id: &str| proto::SubmitRequest {
        request_id: id.into(),
        ..common::job("bits", 7, 1, seed, 0)
    };
    let blocker_req = proto::SubmitRequest {
        request_id: "v1-blocker".into(),
        ..common::job("chain", 7, 5000, 1, 0)
    };
    let mut d = serve_journaled(&params, &state, &log, &one_runner);
    let addr = d.addr.clone();
    let (a, a_proofs, blocker, b) = rt.block_on(async {
        let cl = Client::connect(&addr, None).await.unwrap();
        let a = cl.submit(req(5, "v1-a")).await.unwrap();
        assert_eq!(
            cl.submit(req(5, "v1-a")).await.unwrap(),
            a,
            "one id, one job"
        );
        let out = cl.prove(req(5, "v1-a"), |_, _, _| {}).await.unwrap();
        assert_eq!(out.job_id, a, "Prove with the id follows the job");
        assert!(out.ok(), "{} {}", out.state, out.error);
        common::verify_here(&params, Kind::Bits, 7, 5, &out.proofs);
        let e = cl.submit(req(6, "v1-a")).await.unwrap_err();
        assert_eq!(code(&e), Some(tonic::Code::AlreadyExists), "{e}");
        assert!(e.to_string().contains(&a), "{e}");
        let e = cl.submit(req(5, &"x".repeat(257))).await.unwrap_err();
        assert_eq!(code(&e), Some(tonic::Code::InvalidArgument), "{e}");
        // No id: a job per submit, as before ids existed.
        let x = cl.submit(common::job("bits", 7, 1, 5, 0)).await.unwrap();
        let y = cl.submit(common::job("bits", 7, 1, 5, 0)).await.unwrap();
        assert_ne!(x, y);
        for id in [&x, &y] {
            assert!(cl.await_job(id, |_, _, _| {}).await.unwrap().ok());
        }
        // A long job holds the one runner; b waits behind it.
        let blocker = cl.submit(blocker_req.clone()).await.unwrap();
        let b = cl.submit(req(8, "v1-b")).await.unwrap();
        let st = cl.status().await.unwrap();
        assert!(!st.queued.is_empty(), "{st:?}");
        (a, out.proofs, blocker, b)
    });
    d.kill9();

    let listen = addr.clone();
    let restart = || {
        let mut cmd = serve_cmd(&listen, 1);
        cmd.arg("--params-dir")
            .arg(&params)
            .arg("--state-dir")
            .arg(&state)
            .args(one_runner);
        spawn(cmd, Some(&log))
    };
    let d = restart();
    let cl = rt.block_on(async {
        let cl = Client::connect(&d.addr, None).await.unwrap();
        assert_eq!(
            cl.submit(req(8, "v1-b")).await.unwrap(),
            b,
            "queued at the kill"
        );
        assert_eq!(
            cl.submit(req(5, "v1-a")).await.unwrap(),
            a,
            "ended before the kill"
        );
        assert_eq!(cl.submit(blocker_req.clone()).await.unwrap(), blocker);
        let e = cl.submit(req(9, "v1-b")).await.unwrap_err();
        assert_eq!(code(&e), Some(tonic::Code::AlreadyExists), "{e}");
        assert!(e.to_string().contains(&b), "{e}");
        cl.cancel(&blocker).await.unwrap();
        let out = cl.await_job(&b, |_, _, _| {}).await.unwrap();
        assert!(out.ok(), "{} {}", out.state, out.error);
        common::verify_here(&params, Kind::Bits, 7, 8, &out.proofs);
        let kept = cl.await_job(&a, |_, _, _| {}).await.unwrap();
        assert!(
            kept.ok() && kept.proofs == a_proofs,
            "the first proof, kept"
        );
        let m = cl.metrics().await.unwrap();
        assert_eq!(
            metric(&m, "jobs_submitted_total"),
            0,
            "no job accepted anew"
        );
        assert_eq!(metric(&m, "jobs_done_total"), 1, "b proved once: {m}");
        cl
    });
    drop(d);

    // submit_idempotent while no daemon listens: sent again until one does.
    let call = rt.spawn({
        let cl = cl.clone();
        let r = req(11, "");
        async move {
            cl.submit_idempotent(r, "v1-c", Duration::from_secs(60))
                .await
        }
    });
    std::thread::sleep(Duration::from_millis(500));
    assert!(!call.is_finished(), "no daemon: the call goes on");
    let d = restart();
    rt.block_on(async {
        let c = call.await.unwrap().unwrap();
        let cl = Client::connect(&d.addr, None).await.unwrap();
        assert_eq!(cl.submit(req(11, "v1-c")).await.unwrap(), c);
        let out = cl.await_job(&c, |_, _, _| {}).await.unwrap();
        assert!(out.ok(), "{} {}", out.state, out.error);
        common::verify_here(&params, Kind::Bits, 7, 11, &out.proofs);
        let m = cl.metrics().await.unwrap();
        assert_eq!(metric(&m, "jobs_submitted_total"), 1, "one job for v1-c");
    });
    drop(d);
    std::fs::remove_dir_all(&dir).ok();
}

/// `--retention`: a finished job's result is kept for await that long,
/// then forgotten and dropped from the journal; one whose time passed
/// while the daemon was down is dropped at the next start; ids are never
/// issued twice, even once every record is gone.
#[test]
fn finished_jobs_are_kept_for_the_retention_time() {
    let dir = common::temp_dir("retention");
    let (params, state) = (dir.join("params"), dir.join("state"));
    let log = dir.join("daemon.log");
    let rt = tokio::runtime::Runtime::new().unwrap();
    let await_result = |addr: &str, id: &str| {
        rt.block_on(async {
            let cl = Client::connect(addr, None).await.unwrap();
            cl.await_job(id, |_, _, _| {}).await
        })
    };
    let submit = |addr: &str, seed: u64| {
        rt.block_on(async {
            let cl = Client::connect(addr, None).await.unwrap();
            let id = cl
                .submit(common::job("chain", 7, 1, seed, 0))
                .await
                .unwrap();
            assert!(cl.await_job(&id, |_, _, _| {}).await.unwrap().ok());
            id
        })
    };

    // Kept for 2 s, then forgotten (the daemon checks each second).
    let d = serve_journaled(&params, &state, &log, &["--retention", "2s"]);
    let short = submit(&d.addr, 1);
    let ended = Instant::now();
    let again = await_result(&d.addr, &short).unwrap();
    assert!(again.ok() && again.proofs.len() == 1, "kept after it ended");
    let gone = loop {
        match await_result(&d.addr, &short) {
            Err(e) if not_found(&e) => break ended.elapsed(),
            Err(e) => panic!("{e}"),
            Ok(_) => {}
        }
        assert!(ended.elapsed() < Duration::from_secs(30), "never forgotten");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(gone >= Duration::from_secs(2), "forgotten after {gone:?}");
    drop(d);
    // Nor read back from the journal; the next id is a new one.
    let d = serve_journaled(&params, &state, &log, &["--retention", "1h"]);
    assert!(not_found(&await_result(&d.addr, &short).unwrap_err()));
    let long = submit(&d.addr, 2);
    assert_eq!(long[..16], short[..16], "the journal's instance");
    assert!(
        long[16..] > short[16..],
        "ids are not issued twice: {short} {long}"
    );
    // SAFETY: kill sends SIGTERM to the daemon this test started.
    assert_eq!(unsafe { libc::kill(d.child.id() as i32, libc::SIGTERM) }, 0);
    drop(d);
    // Kept across a restart within its time...
    let d = serve_journaled(&params, &state, &log, &["--retention", "1h"]);
    let kept = await_result(&d.addr, &long).unwrap();
    assert!(
        kept.ok() && kept.proofs.len() == 1,
        "read back from the journal"
    );
    drop(d);
    // ...and dropped at a start whose retention it is past.
    std::thread::sleep(Duration::from_millis(1100));
    let d = serve_journaled(&params, &state, &log, &["--retention", "1s"]);
    assert!(not_found(&await_result(&d.addr, &long).unwrap_err()));
    let said = std::fs::read_to_string(&log).unwrap();
    assert!(
        said.contains("retention time passed while the daemon was down"),
        "{said}"
    );
    let next = submit(&d.addr, 3);
    assert!(
        next[16..] > long[16..],
        "ids are not issued twice: {long} {next}"
    );
    drop(d);
    let (ok, _, err) = cli(&["serve", "--retention", "0s", "--backend", "host"]);
    assert!(!ok && err.contains("--retention"), "{err}");
    std::fs::remove_dir_all(&dir).ok();
}
