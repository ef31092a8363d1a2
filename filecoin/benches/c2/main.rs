//! C2 of a sector (2 KiB unless `--sector-size` says otherwise), per phase, on the cuda-prover backends and with
//! bellperson's CPU prover in the same run. Prints numbers and writes JSON;
//! asserts nothing about speed (every proof is checked by verify_seal).
//!
//!   cargo bench -p cuda-prover-filecoin --bench c2 -- \
//!       --backends cuda,host,bellperson --runs 3 --json c2.json \
//!       [--params-dir DIR] [--gpu-devices 0,1] [--host-devices N] [--sector-size 2KiB]
//!       [--c1 sealed|test] [--c1-seed N] [--keygen-device auto|host|N]
//!       [--synthesis full|auto|witness|both] [--key-in-memory]
//!       [--synthesis-threads N] [--prepare-ahead N (default 1)]
//!       [--device-memory-limit SIZE] [--configs "ahead=0;ahead=1,limit=22GiB"]
//!       [--workers-per-device N (default 1)]
//!
//! `--configs` runs every backend and path once per engine setting (`;`
//! between settings; `ahead`, `threads`, `limit=SIZE|none`, `workers=N`
//! (workers a device: two let a device's second pass lane take the next
//! partition while this one's MSMs finish), each over the single flags'
//! values, and `witness=native|gadget`: a PoRep challenge's
//! SHA-256 parts made from their values, the default, or through
//! bellperson's gadget), each with its own engine and prover.
//!
//! The C1 comes from a sector sealed here (`sealed`, the default up to
//! 8 MiB) or from `test-c1`'s generator (`test`, the default above: a
//! valid C1 of a CC sector in seconds, a test fixture that picks its own
//! challenge seed). The whole-job entries carry `sector_size`,
//! `end_to_end_s`, `device_s` (the partitions' device parts summed),
//! `device_busy_s` (time with a device part in flight on a device, summed
//! over devices: below `device_s` where a device's two pass lanes overlap
//! partitions), `witness_s`, `peak_host_rss_mib` (the process's peak so
//! far), `peak_device_mib` and `verified`.
//!
//! TEST parameters (seeded, not the network's) are generated on first use
//! into --params-dir (default: $CUDA_PROVER_FILECOIN_TEST_PARAMS, else the
//! user cache directory), so an empty GPU machine needs nothing else.
//! Build for a GPU with `--features cuda`.//!
//! Files: `args.rs` (the flags and `--configs`), `key.rs` (the TEST
//! parameters, or a key made in memory), `sector.rs` (the C1: sealed or
//! generated), `engine.rs` (jobs through the engine and what each reports),
//! `bellperson.rs` (bellperson's CPU prover on the same circuits).

mod args;
mod bellperson;
mod engine;
mod key;
mod sector;

use cuda_prover_filecoin::test_params::{default_test_parameter_dir, use_test_parameter_dir};
use cuda_prover_filecoin::{with_sector_shape, FilecoinError, RegisteredSeal, SealVersion};
use cuda_prover_pipeline::SynthesisMode;
use serde_json::{json, Value};

use crate::args::{parse, RunConfig};
use crate::bellperson::bellperson_run;
use crate::engine::engine_runs;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    if let Err(e) = run() {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), FilecoinError> {
    let a = parse()?;
    let dir = match &a.params_dir {
        Some(d) => d.clone(),
        None => default_test_parameter_dir()?,
    };
    let dir = use_test_parameter_dir(&dir)?;
    println!(
        "TEST parameters (seeded, not the network's) in {}",
        dir.display()
    );
    let (params_s, preloaded) = key::ready(&a)?;

    let work =
        std::env::temp_dir().join(format!("cuda-prover-filecoin-bench-{}", std::process::id()));
    let registered = RegisteredSeal::new(a.sector_size, SealVersion::V1_1);
    let (sector, test_c1) = sector::c1_sector(&a, registered, &work)?;

    let mut results = Vec::new();
    for backend in &a.backends {
        // The core backends on both synthesis paths: full, then the witness
        // path (its first run records the circuit's shape next to the
        // params when it is not there yet, and says so).
        let modes: &[SynthesisMode] = if backend == "bellperson" {
            &[SynthesisMode::Full]
        } else {
            &a.modes
        };
        for &mode in modes {
            let configs: &[RunConfig] = if backend == "bellperson" {
                &a.configs[..1]
            } else {
                &a.configs
            };
            for config in configs {
                // One prover per backend, path and engine settings, as a
                // sealing worker or the daemon holds it: run 0 readies the
                // devices (key upload, shape, buffers), later runs find
                // them ready.
                let runs = match backend.as_str() {
                    "bellperson" => (0..a.runs.max(1))
                        .map(|_| with_sector_shape!(a.sector_size, bellperson_run, &sector))
                        .collect::<Result<Vec<_>, _>>()?,
                    b => engine_runs(&a, config, b, mode, &sector, preloaded.as_ref())?,
                };
                for (run, r) in runs.into_iter().enumerate() {
                    println!(
                        "{backend} {} {:?} run {run}: {}",
                        mode.name(),
                        config,
                        summary(&r)
                    );
                    results.push(json!({
                        "backend": backend,
                        "synthesis": mode.name(),
                        "config": config.json(),
                        "run": run,
                        "phases": r,
                    }));
                }
            }
        }
    }
    let _ = std::fs::remove_dir_all(&work);
    let report = json!({
        "bench": "filecoin-c2",
        "sector": registered.to_string(),
        "c1": if test_c1 { "test" } else { "sealed" },
        "test_parameters": true,
        "params_dir": dir.display().to_string(),
        "params_ready_s": params_s,
        "threads": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
        "results": results,
    });
    if let Some(path) = &a.json {
        std::fs::write(path, serde_json::to_vec_pretty(&report).unwrap_or_default())
            .map_err(|e| FilecoinError::Input(format!("writing {}: {e}", path.display())))?;
        println!("wrote {}", path.display());
    }
    Ok(())
}

fn summary(r: &Value) -> String {
    let mut parts = Vec::new();
    if let Value::Object(m) = r {
        for (k, v) in m {
            if let Some(x) = v.as_f64() {
                parts.push(format!("{k} {x:.3}"));
            } else if !v.is_array() {
                parts.push(format!("{k} {v}"));
            }
        }
    }
    parts.join("  ")
}
