//! Engine throughput (core backends in `--throughput-backends`):
//! `--partitions` partitions through the engine on both synthesis paths,
//! with the timeline's ends, after the cost of readying a device that
//! already holds the key and shape.

use std::sync::Arc;
use std::time::Instant;

use cuda_prover_bellperson::circuits::BuiltIn;
use cuda_prover_bellperson::Context;
use cuda_prover_engine::{DeviceSelection, Engine, EngineConfig, Policy};
use cuda_prover_groth16::Groth16Engine;
use cuda_prover_groth16::{BlindingSource, Job};
use cuda_prover_pipeline::SynthesisMode;
use serde_json::{json, Value};

use crate::args::Args;
use crate::synthesis::Prepared;

/// Fills `ready_again_ms`, `throughput` and `throughput_witness` in
/// `entry`. The engine (and `ctx` with it) is dropped on return.
pub(crate) fn throughput(
    args: &Args,
    backend: &str,
    ctx: Context,
    p: &Prepared,
    entry: &mut Value,
) {
    let (kind, log, key) = (p.kind, p.log, &p.key);
    let ctx = Arc::new(ctx);
    let engine = Engine::new(
        ctx.clone(),
        EngineConfig {
            devices: DeviceSelection::List(vec![0]),
            policy: Policy::RoundRobin,
            worker_cpus: None,
            synthesis_threads: args.synthesis_threads,
            workers_per_device: args.workers_per_device,
            ..Default::default()
        },
    )
    .unwrap();
    // What readying a device costs when it already holds
    // the key and the shape (each engine worker does it at
    // the start of a job).
    let again: Vec<f64> = (0..3)
        .map(|_| {
            let t = Instant::now();
            key.prepare_shape(&ctx, 0, &p.circuit_shape).unwrap();
            t.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    println!(
        "  {backend}: readying a device that holds the key and shape: {:.2} / {:.2} / {:.2} ms",
        again[0], again[1], again[2]
    );
    entry["ready_again_ms"] = json!(again);
    for mode in [SynthesisMode::Full, SynthesisMode::Witness] {
        let mut job = Job::new(
            format!("{}-{log}", kind.name()),
            (0..args.partitions)
                .map(|k| BuiltIn::new(kind, log, 1000 + k as u64).unwrap())
                .collect(),
        );
        job.blinding = BlindingSource::Seeded(1);
        job.synthesis = mode;
        job.shape = Some(p.circuit_shape.clone());
        let r = engine.run(job, key, |_| {}).unwrap().report;
        let per_part = |f: &dyn Fn(&cuda_prover_groth16::report::PartitionReport) -> f64| {
            r.per_partition.iter().map(f).sum::<f64>() / r.per_partition.len().max(1) as f64
        };
        let synth_ms = per_part(&|p| p.synthesis_ms.or(p.witness_ms).unwrap_or(0.0));
        let device_ms = per_part(&|p| p.device_ms);
        // The timeline's ends: time to the first proving
        // start (setup, the first synthesis) and after the
        // last proving end.
        let first_start = r
            .per_partition
            .iter()
            .map(|p| p.prove_start_ms)
            .fold(f64::INFINITY, f64::min);
        let last_end = r
            .per_partition
            .iter()
            .map(|p| p.prove_end_ms)
            .fold(0.0, f64::max);
        let ready_ms = r.per_device.first().map(|d| d.ready_ms).unwrap_or(0.0);
        println!(
            "  {backend} {}: {} partitions through the engine ({} workers): {:.3} s, {:.2} proofs/s, device busy {:.0}%; per partition synthesis {:.1} ms, device {:.1} ms; device ready {:.1} ms, first proving start {:.1} ms, last end {:.1} ms",
            mode.name(),
            args.partitions,
            args.workers_per_device,
            r.wall_s,
            r.proofs_per_s,
            100.0 * r.scaling_efficiency,
            synth_ms,
            device_ms,
            ready_ms,
            first_start,
            last_end
        );
        let name = match mode {
            SynthesisMode::Witness => "throughput_witness",
            _ => "throughput",
        };
        entry[name] = json!({
            "partitions": args.partitions, "wall_s": r.wall_s,
            "proofs_per_s": r.proofs_per_s, "busy_fraction": r.scaling_efficiency,
            "synthesis_ms_per_partition": synth_ms,
            "device_ms_per_partition": device_ms,
            "device_ready_ms": ready_ms,
            "first_prove_start_ms": first_start,
            "last_prove_end_ms": last_end,
            "timeline": r.per_partition.iter().map(|p| json!({
                "partition": p.partition, "device": p.device,
                "start_ms": p.prove_start_ms, "end_ms": p.prove_end_ms,
                "lock_wait_ms": p.lock_wait_ms, "device_ms": p.device_ms,
                "queue_wait_ms": p.queue_wait_ms,
            })).collect::<Vec<_>>(),
        });
    }
}
