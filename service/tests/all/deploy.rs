//! `deploy/cuda-prover.service` run as systemd would run it: its
//! `Environment=` lines set, `ExecStart` started, then `ExecStartPost`
//! (the readiness wait) run to its end; with the host backend for
//! `--backend cuda` and temporary directories for `/run/cuda-prover` and
//! `/var/lib/cuda-prover`. The wait ends with SERVING once the preloaded
//! key is in place; SIGTERM (the unit's KillSignal) stops the daemon with
//! status 0 and removes the socket; a second start on the same state
//! directory is ready again. `deploy/check.py` passes on this build (when
//! python3 is installed).

use crate::common;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_cuda-prover-service");
const INSTALLED: &str = "/usr/local/bin/cuda-prover-service";

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// The unit's `key=value` lines, continuations joined, in order.
fn unit_lines() -> Vec<(String, String)> {
    let text = std::fs::read_to_string(repo().join("deploy/cuda-prover.service")).unwrap();
    let mut out = Vec::new();
    let mut cur = String::new();
    for line in text.lines() {
        if cur.is_empty() && (line.trim().is_empty() || line.starts_with('#')) {
            continue;
        }
        if let Some(part) = line.strip_suffix('\\') {
            cur.push_str(part);
            cur.push(' ');
            continue;
        }
        cur.push_str(line);
        if let Some((k, v)) = cur.split_once('=') {
            out.push((k.trim().to_string(), v.trim().to_string()));
        }
        cur.clear();
    }
    out
}

/// A command line as systemd expands it: `${X}` one word, `$X` split at
/// whitespace (the unit quotes nothing).
fn expand(line: &str, env: &HashMap<String, String>) -> Vec<String> {
    let mut words = Vec::new();
    for w in line.split_whitespace() {
        if let Some(name) = w.strip_prefix("${").and_then(|r| r.strip_suffix('}')) {
            words.push(env.get(name).cloned().unwrap_or_default());
        } else if let Some(name) = w.strip_prefix('$') {
            words.extend(
                env.get(name)
                    .map(|v| v.split_whitespace().map(String::from).collect::<Vec<_>>())
                    .unwrap_or_default(),
            );
        } else {
            words.push(w.to_string());
        }
    }
    words
}

/// The unit's command, on this machine: this build's binary, the host
/// backend, the temporary directories.
fn local(argv: Vec<String>, state: &Path) -> Command {
    assert_eq!(argv[0], INSTALLED, "the unit runs the installed binary");
    let mut cmd = Command::new(BIN);
    let mut args = argv[1..].iter().peekable();
    while let Some(a) = args.next() {
        if a == "--backend" {
            assert_eq!(args.next().map(String::as_str), Some("cuda"));
            cmd.args(["--backend", "host", "--host-devices", "1"]);
            continue;
        }
        cmd.arg(a.replace("/var/lib/cuda-prover", &state.display().to_string()));
    }
    cmd
}

#[test]
fn the_units_commands_start_a_ready_daemon_and_sigterm_stops_it() {
    let dir = common::temp_dir("deploy");
    let run = dir.join("run");
    let state = dir.join("var-lib");
    std::fs::create_dir_all(&run).unwrap();
    std::fs::create_dir_all(&state).unwrap();
    let lines = unit_lines();
    let mut env: HashMap<String, String> = HashMap::new();
    for (k, v) in &lines {
        if k == "Environment" {
            let (name, value) = v.split_once('=').unwrap();
            env.insert(name.into(), value.into());
        }
    }
    assert_eq!(
        env["CUDA_PROVER_LISTEN"], "unix:///run/cuda-prover/cuzk.sock",
        "the unit's socket"
    );
    // What a drop-in would set: the socket here, a key to preload.
    let sock = run.join("cuzk.sock");
    env.insert(
        "CUDA_PROVER_LISTEN".into(),
        format!("unix://{}", sock.display()),
    );
    env.insert("CUDA_PROVER_ARGS".into(), "--preload chain:7".into());
    let exec = |key: &str| {
        let found: Vec<&String> = lines
            .iter()
            .filter(|(k, _)| k == key)
            .map(|(_, v)| v)
            .collect();
        assert_eq!(found.len(), 1, "one {key}");
        expand(found[0], &env)
    };
    let start = exec("ExecStart");
    let post = exec("ExecStartPost");
    assert_eq!(start[1], "serve");
    assert_eq!(post[1], "health");
    assert!(lines
        .iter()
        .any(|(k, v)| k == "Restart" && v == "on-failure"));
    assert!(lines
        .iter()
        .any(|(k, v)| k == "KillSignal" && v == "SIGTERM"));

    for round in 0..2 {
        let t = Instant::now();
        let mut daemon = local(start.clone(), &state)
            .envs(&env)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // ExecStartPost, started at once as systemd does: it waits for the
        // socket, then for SERVING.
        let ready = local(post.clone(), &state).envs(&env).output().unwrap();
        assert!(
            ready.status.success(),
            "round {round}: {}",
            String::from_utf8_lossy(&ready.stderr)
        );
        assert_eq!(String::from_utf8_lossy(&ready.stdout).trim(), "SERVING");
        assert!(sock.exists());
        assert!(state.join("state/jobs.journal").exists(), "the journal");
        assert!(
            state.join("params/chain-2^7.params").exists(),
            "the preloaded key"
        );
        eprintln!("round {round}: ready in {:.1} s", t.elapsed().as_secs_f64());
        // SAFETY: kill sends SIGTERM to the daemon this test started.
        assert_eq!(unsafe { libc::kill(daemon.id() as i32, libc::SIGTERM) }, 0);
        let end = Instant::now() + Duration::from_secs(30);
        let status = loop {
            if let Some(s) = daemon.try_wait().unwrap() {
                break s;
            }
            assert!(Instant::now() < end, "SIGTERM did not stop the daemon");
            std::thread::sleep(Duration::from_millis(20));
        };
        assert!(status.success(), "round {round}: {status:?}");
        assert!(!sock.exists(), "the socket is removed on SIGTERM");
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn deploy_check_passes_on_this_build() {
    if Command::new("python3").arg("--version").output().is_err() {
        eprintln!("skipped: no python3 for deploy/check.py");
        return;
    }
    let out = Command::new("python3")
        .arg(repo().join("deploy/check.py"))
        .arg(BIN)
        .output()
        .unwrap();
    let said =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}");
    assert!(said.contains("consistent with this build"), "{said}");
}
