//! C2 jobs through one engine and prover, and what each job reports.

use std::sync::Arc;
use std::time::Instant;

use cuda_prover_engine::{
    open_context, BackendChoice, DeviceSelection, Engine, EngineConfig, Policy,
};
use cuda_prover_filecoin::c1::Expected;
use cuda_prover_filecoin::c2::c2_from_bytes;
use cuda_prover_filecoin::sealing::SealedSector;
use cuda_prover_filecoin::{FilecoinError, FilecoinProver};
use cuda_prover_groth16::BlindingSource;
use cuda_prover_pipeline::SynthesisMode;
use serde_json::{json, Value};

use crate::args::{Args, RunConfig};
use crate::key::Preloaded;

/// `a.runs` C2 jobs through one engine and prover.
pub fn engine_runs(
    a: &Args,
    config: &RunConfig,
    backend: &str,
    mode: SynthesisMode,
    sector: &SealedSector,
    preloaded: Option<&Preloaded>,
) -> Result<Vec<Value>, FilecoinError> {
    let choice = match backend {
        "cuda" => BackendChoice::Cuda,
        "host" => BackendChoice::Host,
        o => return Err(FilecoinError::Input(format!("unknown backend {o}"))),
    };
    let devices = match &a.gpu_devices {
        Some(l) if backend == "cuda" => {
            DeviceSelection::parse_list(l).map_err(FilecoinError::Input)?
        }
        _ => DeviceSelection::All,
    };
    let t = Instant::now();
    let ctx = Arc::new(open_context(choice, a.host_devices, &devices)?);
    let engine = Engine::new(
        ctx,
        EngineConfig {
            devices,
            policy: Policy::RoundRobin,
            synthesis_threads: config.synthesis_threads,
            prepare_ahead: config.prepare_ahead,
            workers_per_device: config.workers_per_device,
            device_memory_limit: config.device_memory_limit.map(|mib| mib << 20),
            ..Default::default()
        },
    )?;
    let context_s = t.elapsed().as_secs_f64();
    // The first load of the TEST parameters' key checks every point (and
    // records the digest); later loads check the digest only.
    let mut prover = FilecoinProver::new(engine)
        .with_blinding(BlindingSource::Random)
        .with_synthesis(mode)
        .with_native_witness(config.native_witness);
    if let Some(p) = preloaded {
        prover = prover.with_key(&p.params, p.key.clone(), Some(p.shape.clone()))?;
    }
    (0..a.runs.max(1))
        .map(|run| engine_job(&prover, sector, if run == 0 { context_s } else { 0.0 }))
        .collect()
}

/// One C2 job; `context_s` is the context's opening time (run 0 only).
fn engine_job(
    prover: &FilecoinProver,
    sector: &SealedSector,
    context_s: f64,
) -> Result<Value, FilecoinError> {
    let t = Instant::now();
    let (_, out) = c2_from_bytes(
        prover,
        &sector.c1_json,
        &Expected::default(),
        sector.prover_id,
        sector.sector_id,
    )?;
    let total = t.elapsed().as_secs_f64();
    let tm = &out.times;
    let per: Vec<Value> = tm
        .report
        .per_partition
        .iter()
        .map(|p| {
            json!({"partition": p.partition, "device": p.device,
                   "synthesis_s": p.synthesis_ms.map(|x| x / 1e3),
                   "witness_s": p.witness_ms.map(|x| x / 1e3),
                   "evaluation_s": p.evaluation_ms / 1e3, "host_bytes": p.host_bytes,
                   "device_s": p.device_ms / 1e3, "epilogue_s": p.epilogue_ms / 1e3,
                   "queue_wait_s": p.queue_wait_ms / 1e3, "ntt_s": p.ntt_ms / 1e3,
                   "msm_h_s": p.msm_h_ms / 1e3, "msm_l_s": p.msm_l_ms / 1e3,
                   "msm_a_s": p.msm_a_ms / 1e3, "msm_b_g1_s": p.msm_b_g1_ms / 1e3,
                   "msm_b_g2_s": p.msm_b_g2_ms / 1e3, "upload_s": p.upload_ms / 1e3,
                   "stream_chunks": p.stream_chunks, "stream_shared": p.stream_shared,
                   "phased": p.phased, "peak_device_mib": p.peak_device_bytes >> 20})
        })
        .collect();
    let sum = |f: fn(&cuda_prover_groth16::report::PartitionReport) -> f64| {
        tm.report.per_partition.iter().map(f).sum::<f64>() / 1e3
    };
    let peak_device = tm
        .report
        .per_device
        .iter()
        .map(|d| d.peak_device_bytes)
        .max()
        .unwrap_or(0);
    Ok(json!({
        "sector_size": sector.registered.size.to_string(),
        "end_to_end_s": total,
        "verified": tm.report.verified,
        "peak_host_rss_mib": peak_rss_mib(),
        "peak_device_mib": peak_device as f64 / (1u64 << 20) as f64,
        "context_s": context_s,
        "key_load_s": tm.key_load.as_secs_f64(),
        "checks_s": tm.checks.as_secs_f64(),
        "circuits_s": tm.circuits.as_secs_f64(),
        "synthesis_s": sum(|p| p.synthesis_ms.unwrap_or(0.0)),
        "witness_s": sum(|p| p.witness_ms.unwrap_or(0.0)),
        "evaluation_s": sum(|p| p.evaluation_ms),
        "device_s": sum(|p| p.device_ms),
        "device_busy_s": tm.report.per_device.iter().map(|d| d.busy_s).sum::<f64>(),
        "epilogue_s": sum(|p| p.epilogue_ms),
        "engine_job_s": tm.report.wall_s,
        "verify_s": tm.verify.as_secs_f64(),
        "total_s": total,
        "backend_name": tm.report.backend,
        "devices_ready_s": tm.report.per_device.iter().map(|d| d.ready_ms / 1e3).collect::<Vec<_>>(),
        "partitions": per,
    }))
}

/// The process's peak resident set so far (`VmHWM`), in MiB; 0 where
/// /proc is not there.
fn peak_rss_mib() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
        })
        .map_or(0.0, |kib| kib / 1024.0)
}
