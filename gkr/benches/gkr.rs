//! GKR bench: one tower proof of 2^GKR_BENCH_LOG extension elements (default
//! 24) on the host backend (all cores) and on one GPU when there is one,
//! with per-layer times and device memory; then 11 shards of mixed sizes on
//! one device and on every device, with both policies (efficiency = one
//! device's wall time / (devices x the wall time on all of them), every
//! device warmed by a first untimed run of the same shards).
//!
//!   cargo bench -p cuda-prover-gkr --bench gkr [--features cuda]
//!
//! Environment: GKR_BENCH_LOG (tower size), GKR_BENCH_SHARD_LOG (largest
//! shard of the mixed set, default 22), GKR_BENCH_HOST=0 (skip the host
//! tower), GKR_BENCH_OUT (JSON path, default target/gkr-bench.json).

use std::time::Instant;

use std::sync::Arc;

use cuda_prover_engine::{DeviceSelection, Engine, EngineConfig, Policy};
use cuda_prover_gkr::shards::shard_input;
use cuda_prover_gkr::Placement;
use cuda_prover_gkr::{
    montgomery_words, prove_tower, run_shards, verify_tower, Bb4Form, Context, ShardConfig,
    ShardSpec, TowerKind, TowerOptions,
};
use cuda_prover_gkr::{Backend, ContextOptions, Tower};
use serde_json::{json, Value};

fn env_u32(k: &str, d: u32) -> u32 {
    std::env::var(k)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(d)
}

fn ms(d: std::time::Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn open(backend: Backend) -> Option<Context> {
    Context::new(ContextOptions {
        backend,
        host_devices: 0,
        host_threads: 0,
        devices: Vec::new(),
    })
    .map_err(|e| println!("{backend:?} backend unavailable: {e}"))
    .ok()
}

// Device memory of a tower of 2^log and of its largest layer sumcheck
// (spare buffers of earlier proofs trimmed first, so that they count).
fn memory(ctx: &Context, log: u32) -> Value {
    let input = shard_input(TowerKind::Product, 1, 0, log);
    let cuda_prover_gkr::TowerInput::Product(v) = input else {
        unreachable!()
    };
    ctx.trim(0).unwrap();
    let base = ctx.device_stats(0).unwrap().cache_bytes;
    let opts = TowerOptions {
        form: Bb4Form::Montgomery,
        chunk_elements: 0,
    };
    let mut t = Tower::with_options(
        ctx,
        &Placement::on(0),
        0,
        TowerKind::Product,
        montgomery_words(&v),
        None,
        &opts,
    )
    .unwrap();
    let layers = ctx.device_stats(0).unwrap().cache_bytes - base;
    let point = vec![[1u32, 0, 0, 0]; log as usize - 1];
    let sc = t.layer_sumcheck(log - 1, &point).unwrap();
    let peak = ctx.device_stats(0).unwrap().cache_bytes - base;
    drop(sc);
    drop(t);
    json!({ "tower_bytes": layers, "peak_bytes": peak })
}

fn tower(ctx: &Context, log: u32) -> Value {
    let ti = Instant::now();
    let input = shard_input(TowerKind::Product, 1, 0, log);
    let input_ms = ms(ti.elapsed());
    // A first small proof warms the device (contexts, allocations).
    prove_tower(
        ctx,
        &Placement::on(0),
        0,
        &shard_input(TowerKind::Product, 1, 0, 10),
    )
    .unwrap();
    // The first proof of this size allocates its tables; the second finds
    // them (the CUDA backend keeps released buffers for reuse).
    let (_, first) = prove_tower(ctx, &Placement::on(0), 0, &input).unwrap();
    let (proof, stats) = prove_tower(ctx, &Placement::on(0), 0, &input).unwrap();
    let tv = Instant::now();
    verify_tower(&input, &proof).unwrap();
    let verify = tv.elapsed();
    let layers: Vec<f64> = stats
        .layers
        .iter()
        .map(|l| ms(l.setup + l.rounds))
        .collect();
    println!(
        "  {}: 2^{log} tower: build {:.1} ms (upload {:.1}, layers {:.1}), layers {:.1} ms, total {:.1} ms (verify {:.1} ms)",
        ctx.backend_name(),
        ms(stats.build),
        ms(stats.build_upload),
        ms(stats.build_layers),
        layers.iter().sum::<f64>(),
        ms(stats.total),
        ms(verify)
    );
    let top: Vec<String> = layers
        .iter()
        .rev()
        .take(4)
        .map(|x| format!("{x:.1}"))
        .collect();
    println!(
        "    largest layers (ms, from layer {} down): {}",
        log - 1,
        top.join(", ")
    );
    let mem = memory(ctx, log);
    println!(
        "    first proof of the size: build {:.1} ms, total {:.1} ms",
        ms(first.build),
        ms(first.total)
    );
    println!("    device memory: {mem}; drawing the input took {input_ms:.1} ms");
    json!({
        "backend": ctx.backend_name(),
        "log_size": log,
        "build_ms": ms(stats.build),
        "build_upload_ms": ms(stats.build_upload),
        "build_layers_ms": ms(stats.build_layers),
        "total_ms": ms(stats.total),
        "first_total_ms": ms(first.total),
        "first_build_ms": ms(first.build),
        "verify_ms": ms(verify),
        "input_ms": input_ms,
        "layer_ms": layers,
        "memory": mem,
    })
}

fn mixed(ctx: Arc<Context>, max_log: u32) -> Value {
    let devices = ctx.open_devices().unwrap();
    // 11 shards of mixed sizes.
    let sizes: Vec<u32> = (0..11u32).map(|k| max_log - (k * 7 % 4)).collect();
    let shards: Vec<ShardSpec> = sizes
        .iter()
        .map(|&log_size| ShardSpec { log_size })
        .collect();
    let backend = ctx.backend_name();
    let cfg = ShardConfig {
        kind: TowerKind::Product,
        seed: 3,
    };
    let run = |sel: DeviceSelection, policy: Policy| {
        let e = Engine::new(
            ctx.clone(),
            EngineConfig {
                devices: sel,
                policy,
                ..EngineConfig::default()
            },
        )
        .unwrap();
        let r = run_shards(&e, &shards, cfg).unwrap();
        (r.wall, r.verify)
    };
    // A first run on every device, untimed for the efficiency: each device
    // then has its context, upload ring and spare buffers, as the one
    // device already has from the tower above. Its wall time is kept.
    let (cold, _) = run(DeviceSelection::All, Policy::RoundRobin);
    println!(
        "  {backend}: 11 shards, first run on {} devices (cold): {:.1} ms",
        devices.len(),
        ms(cold)
    );
    let mut out = Vec::new();
    for policy in [Policy::RoundRobin, Policy::LeastLoaded] {
        let (one, one_verify) = run(DeviceSelection::List(vec![devices[0]]), policy);
        let mut row = json!({
            "policy": policy.name(),
            "sizes": sizes,
            "one_device_ms": ms(one),
            "one_device_verify_ms": ms(one_verify),
            "cold_all_devices_ms": ms(cold),
        });
        print!(
            "  {backend}: 11 shards, {}: 1 device {:.1} ms (collector's verification {:.1} ms)",
            policy.name(),
            ms(one),
            ms(one_verify)
        );
        if devices.len() > 1 {
            let (all, all_verify) = run(DeviceSelection::All, policy);
            let eff = one.as_secs_f64() / (devices.len() as f64 * all.as_secs_f64());
            print!(
                ", {} devices {:.1} ms, efficiency {:.0}%",
                devices.len(),
                ms(all),
                eff * 100.0
            );
            row["all_devices_ms"] = json!(ms(all));
            row["all_devices_verify_ms"] = json!(ms(all_verify));
            row["devices"] = json!(devices.len());
            row["efficiency"] = json!(eff);
        }
        println!();
        out.push(row);
    }
    json!(out)
}

fn write(report: &Value) {
    let path = std::env::var("GKR_BENCH_OUT").unwrap_or_else(|_| "target/gkr-bench.json".into());
    match std::fs::write(&path, serde_json::to_string_pretty(report).unwrap()) {
        Ok(()) => println!("wrote {path}"),
        Err(e) => println!("could not write {path}: {e}"),
    }
}

fn main() {
    let log = env_u32("GKR_BENCH_LOG", 24);
    let shard_log = env_u32("GKR_BENCH_SHARD_LOG", 22);
    let mut report = json!({ "log_size": log });
    println!("GKR tower bench (product of 2^{log} extension elements)");
    // The GPU first, the JSON rewritten after each part: a run cut short
    // still leaves its numbers.
    let gpu = open(Backend::Cuda).map(Arc::new);
    if let Some(gpu) = &gpu {
        report["cuda"] = tower(gpu, log);
        write(&report);
        report["mixed_cuda"] = mixed(gpu.clone(), shard_log);
        write(&report);
    }
    if std::env::var("GKR_BENCH_HOST").as_deref() != Ok("0") {
        let host = Context::host(1).unwrap();
        report["host"] = tower(&host, log);
        if let (Some(h), Some(g)) = (
            report["host"]["total_ms"].as_f64(),
            report["cuda"]["total_ms"].as_f64(),
        ) {
            println!("  speedup GPU vs host: {:.1}x", h / g);
            report["speedup"] = json!(h / g);
        }
        write(&report);
    }
    if gpu.is_none() {
        let host = Arc::new(Context::host(2).unwrap());
        report["mixed_host"] = mixed(host, shard_log.min(16));
        write(&report);
    }
}
