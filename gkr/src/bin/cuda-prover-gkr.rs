//! `cuda-prover-gkr` (also `cuda-prover gkr`): GKR tower proofs of seeded
//! random shards over the devices, each shard verified.
//!
//!   cuda-prover gkr --log-size 20 --shards 4 --backend host --host-devices 2

use std::process::ExitCode;
use std::sync::Arc;

use clap::{Parser, ValueEnum};
use cuda_prover_engine::{
    cpus, open_context, BackendArgs, DeviceSelection, Engine, EngineConfig, Policy,
};
use cuda_prover_gkr::{run_shards, ShardConfig, ShardSpec, TowerKind, MAX_LOG_SIZE, MAX_SHARDS};

#[derive(Debug, Clone, Copy, ValueEnum)]
enum KindArg {
    Product,
    Fraction,
}

#[derive(Debug, Parser)]
#[command(
    name = "cuda-prover-gkr",
    about = "GKR tower proofs over BabyBear, sharded over devices"
)]
struct Cli {
    /// log2 of each shard's values (ignored where --sizes is given).
    #[arg(long, default_value_t = 16,
          value_parser = clap::value_parser!(u32).range(1..=MAX_LOG_SIZE as i64))]
    log_size: u32,
    /// Number of shards.
    #[arg(long, default_value_t = 1,
          value_parser = clap::value_parser!(u32).range(1..=MAX_SHARDS as i64))]
    shards: u32,
    /// Per-shard log sizes, comma separated (mixed sizes); overrides
    /// --log-size and --shards.
    #[arg(long)]
    sizes: Option<String>,
    /// Product tree or LogUp fraction sums.
    #[arg(long, value_enum, default_value_t = KindArg::Product)]
    kind: KindArg,
    /// Devices to use, e.g. 0,2 (default: all).
    #[arg(long)]
    gpu_devices: Option<String>,
    /// Which device proves which shard: round-robin or least-loaded.
    #[arg(long, default_value = "round-robin")]
    policy: Policy,
    #[command(flatten)]
    dev: BackendArgs,
    /// One CPU set per device's worker, e.g. 0-7,8-15.
    #[arg(long)]
    worker_cpus: Option<String>,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Write a JSON report here.
    #[arg(long)]
    report: Option<std::path::PathBuf>,
}

fn ms(d: std::time::Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn run(cli: Cli) -> Result<(), String> {
    let sizes: Vec<u32> = match &cli.sizes {
        Some(s) => s
            .split(',')
            .map(|p| {
                p.trim()
                    .parse::<u32>()
                    .map_err(|_| format!("bad size '{p}'"))
            })
            .collect::<Result<_, _>>()?,
        None => vec![cli.log_size; cli.shards as usize],
    };
    let shards: Vec<ShardSpec> = sizes
        .iter()
        .map(|&log_size| ShardSpec { log_size })
        .collect();
    let sel = match &cli.gpu_devices {
        Some(s) => DeviceSelection::parse_list(s)?,
        None => DeviceSelection::All,
    };
    let ctx =
        open_context(cli.dev.backend, cli.dev.host_devices, &sel).map_err(|e| e.to_string())?;
    let backend = ctx.backend_name();
    let engine = Engine::new(
        Arc::new(ctx),
        EngineConfig {
            devices: sel,
            policy: cli.policy,
            worker_cpus: cli
                .worker_cpus
                .as_deref()
                .map(cpus::parse_cpu_sets)
                .transpose()?,
            ..EngineConfig::default()
        },
    )
    .map_err(|e| e.to_string())?;
    let cfg = ShardConfig {
        kind: match cli.kind {
            KindArg::Product => TowerKind::Product,
            KindArg::Fraction => TowerKind::Fraction,
        },
        seed: cli.seed,
    };
    let devices: Vec<u32> = engine.devices().iter().map(|d| d.ordinal).collect();
    println!(
        "backend {backend}, devices {devices:?}, {} shards, {:?}, policy {}",
        shards.len(),
        cfg.kind,
        cli.policy.name()
    );
    let report = run_shards(&engine, &shards, cfg).map_err(|e| e.to_string())?;
    for r in &report.shards {
        let rounds: std::time::Duration = r.stats.layers.iter().map(|l| l.setup + l.rounds).sum();
        println!(
            "shard {}: 2^{} on device {}: input {:.1} ms, queue {:.1} ms, build {:.1} ms, layers {:.1} ms, prove {:.1} ms, {} bytes",
            r.shard,
            r.log_size,
            r.device,
            ms(r.prepare),
            ms(r.queue_wait),
            ms(r.stats.build),
            ms(rounds),
            ms(r.stats.total),
            r.proof_bytes
        );
    }
    println!(
        "verified {} shards on {} devices in {:.1} ms (of which the collector's verification {:.1} ms)",
        report.shards.len(),
        report.devices.len(),
        ms(report.wall),
        ms(report.verify)
    );
    if let Some(path) = &cli.report {
        let json = serde_json::json!({
            "backend": backend,
            "kind": format!("{:?}", cfg.kind),
            "policy": cli.policy.name(),
            "devices": report.devices,
            "wall_ms": ms(report.wall),
            "verify_ms": ms(report.verify),
            "verified": true,
            "shards": report.shards.iter().map(|r| serde_json::json!({
                "shard": r.shard,
                "log_size": r.log_size,
                "device": r.device,
                "build_ms": ms(r.stats.build),
                "prove_ms": ms(r.stats.total),
                "prepare_ms": ms(r.prepare),
                "queue_ms": ms(r.queue_wait),
                "proof_bytes": r.proof_bytes,
                "layer_ms": r.stats.layers.iter().map(|l| ms(l.setup + l.rounds)).collect::<Vec<_>>(),
            })).collect::<Vec<_>>(),
        });
        std::fs::write(path, serde_json::to_string_pretty(&json).unwrap())
            .map_err(|e| format!("writing {}: {e}", path.display()))?;
    }
    Ok(())
}

fn main() -> ExitCode {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info")).init();
    match run(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
