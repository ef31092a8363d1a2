//! Prover benchmark: prints numbers, asserts nothing about speed.
//!
//!   cargo bench -p cuda-prover-tests --bench prover -- \
//!       --logs 16,18,20 --circuits chain,bits --backends cuda,host,bellperson \
//!       --partitions 16 --throughput-backends cuda --json bench.json
//!
//! For each circuit and size: full and witness-only synthesis times,
//! single-proof latency per backend on both paths (a, b, c from the CPU, or
//! the witness alone with a, b, c evaluated by the core) with the core's
//! per-phase times, throughput of `--partitions` partitions through the
//! engine on both paths (core backends), the ratios, and a check that every
//! backend and path produced the same proof bytes for the same r, s.
//! Proving keys are cached in `--params-dir` (default params-cache/).
//!
//! `--device-memory-limit MIB` (or `key/N`: the working set plus 1/N of the
//! key) runs only resident vs streamed instead: per circuit, size and core
//! backend in `--backends`, the device part with the key's bases streamed
//! under the limit against the same proofs with the key resident, the
//! chunks, the ratio and a byte comparison; then `--stream-share K`
//! (default 4; 1: none) partitions in one call under the same limit, which
//! share streamed passes as the memory allows: the call's wall time per
//! partition, the proofs each pass served and their bytes against the same
//! partitions proved with the key resident.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use bellperson::groth16::{create_proof_batch, Parameters};
use blstrs::Bls12;
use cuda_prover_bellperson::circuits::{BuiltIn, Kind};
use cuda_prover_bellperson::Placement;
use cuda_prover_bellperson::{
    prove_from_assignments, prove_from_witnesses, synthesize_sized, synthesize_witness, Backend,
    Blinding, Context, ContextOptions, ProofOutput, StreamSharing,
};
use cuda_prover_engine::{DeviceSelection, Engine, EngineConfig, Policy};
use cuda_prover_groth16::params::{key_path, load_key_and_shape, load_or_create};
use cuda_prover_groth16::Groth16Engine;
use cuda_prover_groth16::{BlindingSource, Job};
use cuda_prover_pipeline::SynthesisMode;
use cuda_prover_tests::proof_bytes;
use rand_chacha::ChaCha8Rng;
use rand_core::SeedableRng;
use serde_json::{json, Value};

// The allocator the CLI uses, for synthesis and bellperson alike.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

struct Args {
    logs: Vec<u32>,
    circuits: Vec<Kind>,
    backends: Vec<String>,
    partitions: usize,
    throughput_backends: Vec<String>,
    synthesis_threads: usize,
    workers_per_device: usize,
    cpu_repeats: usize,
    repeats: usize,
    json: Option<PathBuf>,
    params_dir: PathBuf,
    device_memory_limit: Option<String>,
    stream_share: usize,
}

fn parse() -> Args {
    let mut a = Args {
        logs: vec![16, 18, 20],
        circuits: vec![Kind::Chain, Kind::Bits],
        backends: vec!["host".into(), "bellperson".into()],
        partitions: 16,
        throughput_backends: vec!["cuda".into(), "host".into()],
        synthesis_threads: 0,
        workers_per_device: 2,
        cpu_repeats: 1,
        repeats: 2,
        json: None,
        params_dir: PathBuf::from("params-cache"),
        device_memory_limit: None,
        stream_share: 4,
    };
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        let mut v = || it.next().unwrap_or_else(|| panic!("{k} needs a value"));
        match k.as_str() {
            "--logs" => a.logs = v().split(',').map(|x| x.parse().unwrap()).collect(),
            "--circuits" => a.circuits = v().split(',').map(|x| x.parse().unwrap()).collect(),
            "--backends" => a.backends = v().split(',').map(String::from).collect(),
            "--partitions" => a.partitions = v().parse().unwrap(),
            "--synthesis-threads" => a.synthesis_threads = v().parse().unwrap(),
            "--throughput-backends" => {
                a.throughput_backends = v().split(',').map(String::from).collect()
            }
            "--workers-per-device" => a.workers_per_device = v().parse().unwrap(),
            "--cpu-repeats" => a.cpu_repeats = v().parse().unwrap(),
            "--repeats" => a.repeats = v().parse().unwrap(),
            "--json" => a.json = Some(PathBuf::from(v())),
            "--params-dir" => a.params_dir = PathBuf::from(v()),
            "--device-memory-limit" => a.device_memory_limit = Some(v()),
            "--stream-share" => a.stream_share = v().parse().unwrap(),
            "--bench" => {}
            other => panic!("unknown argument {other}"),
        }
    }
    a
}

fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

fn phases(o: &ProofOutput) -> Value {
    let t = &o.timings;
    json!({
        "lock_wait_ms": ms(t.wait_ns), "upload_ms": ms(t.upload_ns), "ntt_ms": ms(t.ntt_ns),
        "msm_h_ms": ms(t.msm_h_ns), "msm_l_ms": ms(t.msm_l_ns), "msm_a_ms": ms(t.msm_a_ns),
        "msm_b_g1_ms": ms(t.msm_b_g1_ns), "msm_b_g2_ms": ms(t.msm_b_g2_ns),
        "batch_add_ms": ms(t.batch_add_ns), "eval_ms": ms(t.eval_ns), "device_ms": ms(t.device_ns),
        "epilogue_ms": ms(t.epilogue_ns), "peak_device_bytes": t.peak_device_bytes,
    })
}

fn context(backend: &str) -> Option<Context> {
    let b = match backend {
        "cuda" => Backend::Cuda,
        "host" => Backend::Host,
        _ => return None,
    };
    match Context::new(ContextOptions {
        backend: b,
        host_devices: 1,
        host_threads: 0,
        devices: Vec::new(),
    }) {
        Ok(c) => Some(c),
        Err(e) => {
            println!("  {backend}: unavailable ({e})");
            None
        }
    }
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

/// The limit `spec` stands for: MiB, or `key/N` (working set + key / N).
fn limit_bytes(spec: &str, working: u64, key: u64) -> u64 {
    match spec.strip_prefix("key/") {
        Some(n) => working + key / n.parse::<u64>().expect("key/N with N a number"),
        None => {
            spec.parse::<u64>()
                .expect("--device-memory-limit MIB or key/N")
                << 20
        }
    }
}

/// `--device-memory-limit`: resident vs streamed device parts.
fn stream_compare(args: &Args, spec: &str) {
    let say = |s: &str| eprintln!("{s}");
    let mut rows = Vec::new();
    for &kind in &args.circuits {
        for &log in &args.logs {
            let shape = BuiltIn::new(kind, log, 0).unwrap();
            let synth = {
                let key = load_or_create(&args.params_dir, &shape, &say).unwrap();
                synthesize_sized(
                    BuiltIn::new(kind, log, 42).unwrap(),
                    key.size_hint().unwrap(),
                )
                .unwrap()
            };
            let bl = Blinding::random_vec(&mut ChaCha8Rng::seed_from_u64(log as u64), 1);
            for backend in &args.backends {
                let Some(ctx) = context(backend) else {
                    continue;
                };
                // A key no device holds yet: streamed first, then resident.
                let key = load_or_create(&args.params_dir, &shape, &say).unwrap();
                let n = key.domain_size().unwrap();
                let est = key.device_memory_estimate(&ctx, 0, n).unwrap();
                let limit = limit_bytes(spec, est.working_bytes, est.srs_bytes);
                // The best device part of `repeats` proofs after a first
                // (which pays allocations and, resident, the key's upload).
                let run = || {
                    let mut best: Option<ProofOutput> = None;
                    for i in 0..=args.repeats.max(1) {
                        let o = prove_from_assignments(
                            &ctx,
                            &key,
                            std::slice::from_ref(&synth),
                            &bl,
                            &Placement::on(0),
                        )
                        .unwrap()
                        .remove(0);
                        let faster = best
                            .as_ref()
                            .is_none_or(|b| o.timings.device_ns < b.timings.device_ns);
                        if i > 0 && faster {
                            best = Some(o);
                        }
                    }
                    best.unwrap()
                };
                ctx.set_memory_limit(0, Some(limit)).unwrap();
                let streamed = run();
                // K partitions in one call, under the limit: the best wall
                // time of `repeats` calls after a first.
                let k = args.stream_share;
                let shared = (k > 1).then(|| {
                    ctx.set_stream_sharing(0, StreamSharing::Always).unwrap();
                    let many: Vec<_> = (0..k)
                        .map(|i| {
                            synthesize_sized(
                                BuiltIn::new(kind, log, 100 + i as u64).unwrap(),
                                key.size_hint().unwrap(),
                            )
                            .unwrap()
                        })
                        .collect();
                    let bl = Blinding::random_vec(&mut ChaCha8Rng::seed_from_u64(7), k);
                    let mut best: Option<(f64, Vec<ProofOutput>)> = None;
                    for i in 0..=args.repeats.max(1) {
                        let t = Instant::now();
                        let out = prove_from_assignments(&ctx, &key, &many, &bl, &Placement::on(0))
                            .unwrap();
                        let wall = t.elapsed().as_secs_f64() * 1e3;
                        if i > 0 && best.as_ref().is_none_or(|b| wall < b.0) {
                            best = Some((wall, out));
                        }
                    }
                    // What `Auto` makes of the same call, the pass measured.
                    ctx.set_stream_sharing(0, StreamSharing::Auto).unwrap();
                    let auto: Vec<u64> =
                        prove_from_assignments(&ctx, &key, &many, &bl, &Placement::on(0))
                            .unwrap()
                            .iter()
                            .map(|o| o.timings.stream_shared)
                            .collect();
                    (many, bl, best.unwrap(), auto)
                });
                ctx.set_memory_limit(0, None).unwrap();
                let resident = run();
                let same = proof_bytes(&streamed.proof) == proof_bytes(&resident.proof);
                let (r, st) = (
                    ms(resident.timings.device_ns),
                    ms(streamed.timings.device_ns),
                );
                println!(
                    "{} 2^{log} {backend}: key {} MiB, limit {} MiB -> {} chunks of {} KiB; device part resident {r:.1} ms, streamed {st:.1} ms ({:.2}x); same bytes: {same}",
                    kind.name(),
                    est.srs_bytes >> 20,
                    limit >> 20,
                    streamed.timings.stream_chunks,
                    streamed.timings.stream_buffer_bytes >> 10,
                    st / r
                );
                let mut shared_row = Value::Null;
                if let Some((many, bl, (wall, out), auto)) = shared {
                    let again =
                        prove_from_assignments(&ctx, &key, &many, &bl, &Placement::on(0)).unwrap();
                    let same = out
                        .iter()
                        .zip(&again)
                        .all(|(a, b)| proof_bytes(&a.proof) == proof_bytes(&b.proof));
                    let passes: Vec<u64> = out.iter().map(|o| o.timings.stream_shared).collect();
                    let per = wall / k as f64;
                    // One pass's device time over its proofs (each reports the pass's).
                    let dev = ms(out[0].timings.device_ns) / passes[0].max(1) as f64;
                    println!(
                        "  {k} partitions in one call under the limit, always shared: {wall:.1} ms, {per:.1} ms a partition ({:.2}x resident), device part {dev:.1} ms a partition ({:.2}x streamed alone); proofs per pass {passes:?}, {} chunks of {} KiB; same bytes as resident: {same}; auto shares {auto:?}",
                        per / r,
                        dev / st,
                        out[0].timings.stream_chunks,
                        out[0].timings.stream_buffer_bytes >> 10,
                    );
                    shared_row = json!({
                        "partitions": k, "wall_ms": wall, "ms_per_partition": per,
                        "per_partition_over_resident": per / r,
                        "device_ms_per_partition": dev,
                        "device_per_partition_over_streamed": dev / st,
                        "auto_proofs_per_pass": auto,
                        "proofs_per_pass": passes,
                        "stream_chunks": out[0].timings.stream_chunks,
                        "stream_buffer_bytes": out[0].timings.stream_buffer_bytes,
                        "same_bytes": same, "first": phases(&out[0]),
                    });
                }
                rows.push(json!({
                    "circuit": kind.name(), "log": log, "backend": backend,
                    "shared": shared_row,
                    "key_bytes": est.srs_bytes, "working_bytes": est.working_bytes,
                    "streamed_min_bytes": est.streamed_bytes, "limit_bytes": limit,
                    "stream_chunks": streamed.timings.stream_chunks,
                    "stream_buffer_bytes": streamed.timings.stream_buffer_bytes,
                    "resident_device_ms": r, "streamed_device_ms": st,
                    "streamed_over_resident": st / r, "same_bytes": same,
                    "resident": phases(&resident), "streamed": phases(&streamed),
                }));
            }
        }
    }
    if let Some(path) = &args.json {
        std::fs::write(
            path,
            serde_json::to_string_pretty(&json!({ "streaming": rows })).unwrap(),
        )
        .unwrap();
        println!("wrote {}", path.display());
    }
}

fn main() {
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
        return;
    }
    let args = parse();
    if let Some(spec) = &args.device_memory_limit {
        stream_compare(&args, spec);
        return;
    }
    let say = |s: &str| eprintln!("{s}");
    let mut rows = Vec::new();
    println!(
        "host: {} threads; backends {:?}; partitions {}",
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1),
        args.backends,
        args.partitions
    );
    for &kind in &args.circuits {
        for &log in &args.logs {
            let shape = BuiltIn::new(kind, log, 0).unwrap();
            let t = Instant::now();
            let (key, circuit_shape) = load_key_and_shape(&args.params_dir, &shape, &say).unwrap();
            // Key and shape: loaded from the cache, or made once.
            let key_load_s = t.elapsed().as_secs_f64();
            println!(
                "\n== {} 2^{log} (key and shape ready in {key_load_s:.2} s)",
                kind.name()
            );
            let circuit = BuiltIn::new(kind, log, 42).unwrap();
            let t = Instant::now();
            let synth = synthesize_sized(circuit, key.size_hint().unwrap()).unwrap();
            let synthesis_s = t.elapsed().as_secs_f64();
            println!(
                "  synthesis: {:.3} s ({} constraints)",
                synthesis_s,
                synth.num_constraints()
            );
            let mut witness_s = f64::MAX;
            let mut witness = None;
            for _ in 0..2 {
                let t = Instant::now();
                witness = Some(synthesize_witness(circuit, key.size_hint().unwrap()).unwrap());
                witness_s = witness_s.min(t.elapsed().as_secs_f64());
            }
            let witness = witness.unwrap();
            println!(
                "  witness-only synthesis: {witness_s:.3} s ({:.2}x faster); {} nonzeros, {} MiB on a device",
                synthesis_s / witness_s,
                circuit_shape.info().nonzeros,
                circuit_shape.info().device_bytes >> 20
            );
            let bl = Blinding::random_vec(&mut ChaCha8Rng::seed_from_u64(log as u64), 1);
            let mut row = json!({
                "circuit": kind.name(), "log": log, "synthesis_s": synthesis_s,
                "witness_s": witness_s,
                "shape_nonzeros": circuit_shape.info().nonzeros,
                "constraints": synth.num_constraints(),
            });
            let mut reference: Option<Vec<u8>> = None;
            let mut same = true;
            let mut latency = serde_json::Map::new();
            for backend in &args.backends {
                if backend == "bellperson" {
                    let f = std::fs::File::open(key_path(&args.params_dir, &shape)).unwrap();
                    let params =
                        Parameters::<Bls12>::read(std::io::BufReader::new(f), false).unwrap();
                    let mut best = f64::MAX;
                    let mut proof = None;
                    for _ in 0..args.cpu_repeats.max(1) {
                        let t = Instant::now();
                        let p = create_proof_batch(
                            vec![circuit],
                            &params,
                            vec![bl[0].r],
                            vec![bl[0].s],
                        )
                        .unwrap();
                        best = best.min(t.elapsed().as_secs_f64());
                        proof = Some(p[0].clone());
                    }
                    let b = proof_bytes(&proof.unwrap());
                    same &= reference.get_or_insert_with(|| b.clone()) == &b;
                    println!("  bellperson cpu: {best:.3} s per proof (synthesis included)");
                    latency.insert("bellperson".into(), json!({ "end_to_end_s": best }));
                    continue;
                }
                let Some(ctx) = context(backend) else {
                    continue;
                };
                let mut first = 0.0;
                let mut best = f64::MAX;
                let mut out = None;
                let repeats = if backend == "cuda" {
                    args.repeats
                } else {
                    args.cpu_repeats
                };
                for i in 0..repeats.max(1) + 1 {
                    let t = Instant::now();
                    let o = prove_from_assignments(
                        &ctx,
                        &key,
                        std::slice::from_ref(&synth),
                        &bl,
                        &Placement::on(0),
                    )
                    .unwrap();
                    let dt = t.elapsed().as_secs_f64();
                    if i == 0 {
                        first = dt;
                    } else {
                        best = best.min(dt);
                    }
                    out = Some(o.into_iter().next().unwrap());
                }
                let o = out.unwrap();
                assert!(key.verify(&o.proof, synth.public_inputs()).unwrap());
                let b = proof_bytes(&o.proof);
                same &= reference.get_or_insert_with(|| b.clone()) == &b;
                let t = &o.timings;
                println!(
                    "  {backend}: prover {best:.3} s (first in process {first:.3} s), end to end {:.3} s; \
                     upload {:.1} ntt {:.1} msm h {:.1} l {:.1} a {:.1} b_g1 {:.1} b_g2 {:.1} batch-add {:.1} epilogue {:.1} ms; peak device {} MiB",
                    best + synthesis_s,
                    ms(t.upload_ns), ms(t.ntt_ns), ms(t.msm_h_ns), ms(t.msm_l_ns), ms(t.msm_a_ns),
                    ms(t.msm_b_g1_ns), ms(t.msm_b_g2_ns), ms(t.batch_add_ns), ms(t.epilogue_ns),
                    t.peak_device_bytes >> 20
                );
                let mut entry = json!({
                    "prover_s": best, "first_prover_s": first, "end_to_end_s": best + synthesis_s,
                    "phases": phases(&o),
                });
                // The witness path: the same proof from the witness alone.
                let mut wbest = f64::MAX;
                let mut wout = None;
                for _ in 0..repeats.max(1) {
                    let t = Instant::now();
                    let o = prove_from_witnesses(
                        &ctx,
                        &key,
                        &circuit_shape,
                        std::slice::from_ref(&witness),
                        &bl,
                        &Placement::on(0),
                    )
                    .unwrap();
                    wbest = wbest.min(t.elapsed().as_secs_f64());
                    wout = Some(o.into_iter().next().unwrap());
                }
                let wo = wout.unwrap();
                same &= proof_bytes(&wo.proof) == b;
                let wt = &wo.timings;
                println!(
                    "  {backend} witness path: prover {wbest:.3} s (evaluation {:.1} ms, upload {:.1} ms, device {:.1} ms), end to end {:.3} s",
                    ms(wt.eval_ns), ms(wt.upload_ns), ms(wt.device_ns), wbest + witness_s
                );
                entry["witness_path"] = json!({
                    "prover_s": wbest, "end_to_end_s": wbest + witness_s, "phases": phases(&wo),
                });
                if backend == "cuda" {
                    for prepare in [false, true] {
                        if let Some(c) = cold_child(kind, log, backend, prepare, &args.params_dir) {
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
                if args.partitions > 0 && args.throughput_backends.contains(backend) {
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
                            key.prepare_shape(&ctx, 0, &circuit_shape).unwrap();
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
                        job.shape = Some(circuit_shape.clone());
                        let r = engine.run(job, &key, |_| {}).unwrap().report;
                        let per_part =
                            |f: &dyn Fn(&cuda_prover_groth16::report::PartitionReport) -> f64| {
                                r.per_partition.iter().map(f).sum::<f64>()
                                    / r.per_partition.len().max(1) as f64
                            };
                        let synth_ms =
                            per_part(&|p| p.synthesis_ms.or(p.witness_ms).unwrap_or(0.0));
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
                latency.insert(backend.clone(), entry);
            }
            let get = |b: &str, f: &str| latency.get(b).and_then(|v| v[f].as_f64());
            if let (Some(h), Some(bp)) = (
                get("host", "end_to_end_s"),
                get("bellperson", "end_to_end_s"),
            ) {
                println!("  ratio bellperson / host (end to end): {:.2}x", bp / h);
            }
            if let (Some(c), Some(bp)) = (
                get("cuda", "end_to_end_s"),
                get("bellperson", "end_to_end_s"),
            ) {
                println!("  ratio bellperson / cuda (end to end): {:.2}x", bp / c);
            }
            if let (Some(c), Some(h)) = (get("cuda", "prover_s"), get("host", "prover_s")) {
                println!("  ratio host / cuda (prover): {:.2}x", h / c);
            }
            println!("  identical proof bytes across backends: {same}");
            row["backends"] = Value::Object(latency);
            row["identical_proofs"] = json!(same);
            rows.push(row);
        }
    }
    let doc = json!({ "rows": rows });
    if let Some(p) = &args.json {
        std::fs::write(p, serde_json::to_string_pretty(&doc).unwrap()).unwrap();
        println!("\nwrote {}", p.display());
    }
}
