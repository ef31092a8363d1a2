//! Cold starts: the `--cold` child process (one fresh process, one device,
//! the first proof against the later ones), running it from the parent, and
//! the lines and JSON entries the parent makes of its answer.

use std::path::PathBuf;
use std::time::Instant;

use cuda_prover_bellperson::circuits::{BuiltIn, Kind};
use cuda_prover_bellperson::Placement;
use cuda_prover_bellperson::{prove_from_assignments, synthesize_sized, Blinding};
use cuda_prover_groth16::params::load_or_create;
use rand_chacha::ChaCha8Rng;
use rand_core::SeedableRng;
use serde_json::{json, Value};

use crate::context::context;

/// When this process was started as `--cold KIND LOG BACKEND PREPARE`
/// (by `cold_child`), runs `cold` and returns true.
pub(crate) fn run_if_child() -> bool {
    let raw: Vec<String> = std::env::args().collect();
    if let Some(i) = raw.iter().position(|a| a == "--cold") {
        let dir = raw
            .iter()
            .position(|a| a == "--params-dir")
            .map(|j| PathBuf::from(&raw[j + 1]))
            .unwrap_or_else(|| PathBuf::from("params-cache"));
        cold(
            raw[i + 1].parse().unwrap(),
            raw[i + 2].parse().unwrap(),
            &raw[i + 3],
            raw[i + 4] == "1",
            &dir,
        );
        return true;
    }
    false
}

/// `--cold KIND LOG BACKEND PREPARE`: one fresh process, one device: the
/// first proof's prover time against the later ones, optionally after
/// `Context::prepare` (key upload and cache allocation ahead of the proof).
fn cold(kind: Kind, log: u32, backend: &str, prepare: bool, params_dir: &std::path::Path) {
    let key = load_or_create(params_dir, &BuiltIn::new(kind, log, 0).unwrap(), &|_| {}).unwrap();
    let synth = synthesize_sized(
        BuiltIn::new(kind, log, 42).unwrap(),
        key.size_hint().unwrap(),
    )
    .unwrap();
    let bl = Blinding::random_vec(&mut ChaCha8Rng::seed_from_u64(1), 1);
    let t = Instant::now();
    let ctx = context(backend).expect("backend available");
    let context_s = t.elapsed().as_secs_f64();
    let t = Instant::now();
    if prepare {
        key.core()
            .prepare(&ctx, 0, synth.num_constraints() as u64)
            .unwrap();
    }
    let prepare_s = t.elapsed().as_secs_f64();
    let mut times = Vec::new();
    for _ in 0..3 {
        let t = Instant::now();
        prove_from_assignments(
            &ctx,
            &key,
            std::slice::from_ref(&synth),
            &bl,
            &Placement::on(0),
        )
        .unwrap();
        times.push(t.elapsed().as_secs_f64());
    }
    let later = times[1..].iter().cloned().fold(f64::MAX, f64::min);
    println!(
        "COLD {}",
        json!({ "context_s": context_s, "prepare_s": prepare_s, "first_s": times[0], "later_s": later,
                "first_over_later": times[0] / later })
    );
}

/// Runs `cold` in a child process and returns its JSON line.
fn cold_child(
    kind: Kind,
    log: u32,
    backend: &str,
    prepare: bool,
    params_dir: &std::path::Path,
) -> Option<Value> {
    let out = std::process::Command::new(std::env::current_exe().ok()?)
        .args([
            "--cold",
            kind.name(),
            &log.to_string(),
            backend,
            if prepare { "1" } else { "0" },
        ])
        .arg("--params-dir")
        .arg(params_dir)
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().find_map(|l| l.strip_prefix("COLD "))?;
    serde_json::from_str(line).ok()
}

/// The first proof in a fresh process, without and then after `prepare`:
/// a line for each, and `cold` / `cold_after_prepare` in `entry`.
pub(crate) fn cold_starts(
    kind: Kind,
    log: u32,
    backend: &str,
    params_dir: &std::path::Path,
    entry: &mut Value,
) {
    for prepare in [false, true] {
        if let Some(c) = cold_child(kind, log, backend, prepare, params_dir) {
            println!(
                "  {backend}: first proof in a fresh process{}: {:.3} s vs {:.3} s later ({:.2}x){}",
                if prepare { " after prepare" } else { "" },
                c["first_s"].as_f64().unwrap_or(0.0),
                c["later_s"].as_f64().unwrap_or(0.0),
                c["first_over_later"].as_f64().unwrap_or(0.0),
                if prepare {
                    format!(", prepare {:.3} s", c["prepare_s"].as_f64().unwrap_or(0.0))
                } else {
                    format!(", context {:.3} s", c["context_s"].as_f64().unwrap_or(0.0))
                }
            );
            let name = if prepare {
                "cold_after_prepare"
            } else {
                "cold"
            };
            entry[name] = c;
        }
    }
}
