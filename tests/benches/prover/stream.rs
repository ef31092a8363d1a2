//! `--device-memory-limit`: resident vs streamed device parts
//! (`stream_compare`), and the limit a spec stands for (`limit_bytes`).

use std::time::Instant;

use cuda_prover_bellperson::circuits::BuiltIn;
use cuda_prover_bellperson::Placement;
use cuda_prover_bellperson::{
    prove_from_assignments, synthesize_sized, Blinding, ProofOutput, StreamSharing,
};
use cuda_prover_groth16::params::load_or_create;
use cuda_prover_tests::proof_bytes;
use rand_chacha::ChaCha8Rng;
use rand_core::SeedableRng;
use serde_json::{json, Value};

use crate::args::Args;
use crate::context::context;
use crate::phases::{ms, phases};

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
pub(crate) fn stream_compare(args: &Args, spec: &str) {
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
                let limit = limit_bytes(spec, est.working_bytes, est.key_bytes);
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
                    est.key_bytes >> 20,
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
                    "key_bytes": est.key_bytes, "working_bytes": est.working_bytes,
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
