//! Scaling of one partitioned job over device sets: prints numbers, asserts
//! nothing about speed.
//!
//!   cargo bench -p cuda-prover-tests --bench scaling -- \
//!       --backend host --host-devices 4 --sets "0;0,1;0,1,2,3" \
//!       --circuit bits --log 14 --partitions 16 --json scaling.json
//!
//! With `--backend cuda` (a `--features cuda-prover-tests/cuda` build) the
//! sets name GPUs, e.g. `--sets "0;0,1"`. For every set and both policies:
//! wall time, proofs/s, efficiency against the first set
//! (T_first * n_first / (T * n)), per-device partitions and busy fraction.
//! Host devices get `cores / devices` threads each so that simulated devices
//! do not fight over the same cores.
//!
//! `--synthesis full|witness|auto` picks the job's synthesis (default full;
//! witness and auto give the job the circuit's shape). With `--warm`, each
//! engine first proves one untimed job of the same size, so the timed job
//! finds every device holding the key, the shape, the MSM buffers and any
//! tables of multiples (as a proving service between jobs); the untimed
//! job's time is printed too.
//!
//! `--policies` picks the policies and their order (default
//! `round-robin,least-loaded`): each policy runs every set, in the order
//! given, in this one process, so a later run finds what the earlier ones
//! left (host memory, freed contexts); swap the order to tell a policy's
//! effect from its place in the run.

use std::path::PathBuf;
use std::sync::Arc;

use cuda_prover_bellperson::circuits::{BuiltIn, Kind};
use cuda_prover_bellperson::{Backend, Context, ContextOptions};
use cuda_prover_engine::{DeviceSelection, Engine, EngineConfig, Policy};
use cuda_prover_groth16::params::load_key_and_shape;
use cuda_prover_groth16::Groth16Engine;
use cuda_prover_groth16::{BlindingSource, Job};
use cuda_prover_pipeline::SynthesisMode;
use serde_json::json;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    let mut backend = "host".to_string();
    let mut host_devices = 4u32;
    let mut sets = "0;0,1;0,1,2,3".to_string();
    let mut kind = Kind::Bits;
    let mut log = 14u32;
    let mut partitions = 16usize;
    let mut workers_per_device = 1usize;
    let mut json_out: Option<PathBuf> = None;
    let mut params_dir = PathBuf::from("params-cache");
    let mut synthesis = SynthesisMode::Full;
    let mut warm = false;
    let mut policies = vec![Policy::RoundRobin, Policy::LeastLoaded];
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        let mut v = || it.next().unwrap_or_else(|| panic!("{k} needs a value"));
        match k.as_str() {
            "--backend" => backend = v(),
            "--host-devices" => host_devices = v().parse().unwrap(),
            "--sets" => sets = v(),
            "--circuit" => kind = v().parse().unwrap(),
            "--log" => log = v().parse().unwrap(),
            "--partitions" => partitions = v().parse().unwrap(),
            "--workers-per-device" => workers_per_device = v().parse().unwrap(),
            "--json" => json_out = Some(PathBuf::from(v())),
            "--params-dir" => params_dir = PathBuf::from(v()),
            "--synthesis" => synthesis = v().parse().unwrap_or_else(|e| panic!("--synthesis: {e}")),
            "--warm" => warm = true,
            "--policies" => {
                policies = v()
                    .split(',')
                    .map(|p| {
                        p.trim()
                            .parse()
                            .unwrap_or_else(|e| panic!("--policies: {e}"))
                    })
                    .collect();
            }
            "--bench" => {}
            other => panic!("unknown argument {other}"),
        }
    }
    let sets: Vec<Vec<u32>> = sets
        .split(';')
        .map(|s| s.split(',').map(|d| d.trim().parse().unwrap()).collect())
        .collect();
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    let say = |s: &str| eprintln!("{s}");
    let (key, shape) =
        load_key_and_shape(&params_dir, &BuiltIn::new(kind, log, 0).unwrap(), &say).unwrap();
    println!(
        "{} 2^{log} x {partitions} partitions, backend {backend}, {cores} cores, {workers_per_device} worker(s) per device, synthesis {}{}",
        kind.name(),
        synthesis.name(),
        if warm { ", devices warmed by one untimed job" } else { "" }
    );
    let mut rows = Vec::new();
    for &policy in &policies {
        let mut base: Option<(f64, usize)> = None;
        for set in &sets {
            let ctx = match backend.as_str() {
                "cuda" => Context::new(ContextOptions {
                    backend: Backend::Cuda,
                    host_devices: 0,
                    host_threads: 0,
                    devices: Vec::new(),
                }),
                _ => Context::new(ContextOptions {
                    backend: Backend::Host,
                    host_devices: host_devices.max(set.iter().copied().max().unwrap_or(0) + 1),
                    host_threads: (cores / set.len()).max(1) as u32,
                    devices: Vec::new(),
                }),
            }
            .unwrap();
            let engine = Engine::new(
                Arc::new(ctx),
                EngineConfig {
                    devices: DeviceSelection::List(set.clone()),
                    policy,
                    worker_cpus: None,
                    synthesis_threads: 0,
                    workers_per_device,
                    ..Default::default()
                },
            )
            .unwrap();
            let make_job = |seed: u64| {
                let mut job = Job::new(
                    format!("{}-{log}", kind.name()),
                    (0..partitions)
                        .map(|k| BuiltIn::new(kind, log, seed + k as u64).unwrap())
                        .collect(),
                );
                job.blinding = BlindingSource::Seeded(7);
                job.synthesis = synthesis;
                if synthesis != SynthesisMode::Full {
                    job.shape = Some(shape.clone());
                }
                job
            };
            let mut warm_s = None;
            if warm {
                let w = engine.run(make_job(1000), &key, |_| {}).unwrap().report;
                warm_s = Some(w.wall_s);
            }
            let r = engine.run(make_job(0), &key, |_| {}).unwrap().report;
            let (t1, n1) = *base.get_or_insert((r.wall_s, set.len()));
            let eff = t1 * n1 as f64 / (r.wall_s * set.len() as f64);
            let per: Vec<String> = r
                .per_device
                .iter()
                .map(|d| {
                    format!(
                        "dev{}: {} parts, busy {:.0}%",
                        d.device,
                        d.partitions,
                        100.0 * d.busy_fraction
                    )
                })
                .collect();
            println!(
                "  {:<12} devices {:?}: {:.3} s, {:.2} proofs/s, efficiency vs {} device(s) {:.1}% [{}]{}",
                policy.name(),
                set,
                r.wall_s,
                r.proofs_per_s,
                n1,
                100.0 * eff,
                per.join("; "),
                warm_s
                    .map(|w| format!(" (untimed first job {w:.3} s)"))
                    .unwrap_or_default()
            );
            rows.push(json!({
                "policy": policy.name(), "devices": set, "wall_s": r.wall_s,
                "synthesis": synthesis.name(), "warm_job_s": warm_s,
                "proofs_per_s": r.proofs_per_s, "efficiency_vs_first": eff,
                "report": serde_json::from_str::<serde_json::Value>(&r.to_json()).unwrap(),
            }));
        }
    }
    if let Some(p) = json_out {
        std::fs::write(
            &p,
            serde_json::to_string_pretty(&json!({ "rows": rows })).unwrap(),
        )
        .unwrap();
        println!("wrote {}", p.display());
    }
}
