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
//!
//! Files: `args.rs` (the flags), `synthesis.rs` (key, shape and synthesis
//! times), `latency.rs` (single-proof latency per backend, both paths),
//! `cold.rs` (the first proof in a fresh process, and that child process),
//! `throughput.rs` (partitions through the engine), `compare.rs` (same
//! proof bytes, the ratios), `stream.rs` (resident vs streamed),
//! `context.rs` (a core backend's context), `phases.rs` (timings as JSON).

mod args;
mod cold;
mod compare;
mod context;
mod latency;
mod phases;
mod stream;
mod synthesis;
mod throughput;

use cuda_prover_bellperson::Blinding;
use rand_chacha::ChaCha8Rng;
use rand_core::SeedableRng;
use serde_json::{json, Value};

use args::{parse, Args};
use compare::{print_ratios, SameBytes};
use context::context;
use latency::{bellperson_latency, core_latency};
use synthesis::prepare;
use throughput::throughput;

// The allocator the CLI uses, for synthesis and bellperson alike.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    if cold::run_if_child() {
        return;
    }
    let args = parse();
    if let Some(spec) = &args.device_memory_limit {
        stream::stream_compare(&args, spec);
        return;
    }
    let rows = latency_rows(&args);
    let doc = json!({ "rows": rows });
    if let Some(p) = &args.json {
        std::fs::write(p, serde_json::to_string_pretty(&doc).unwrap()).unwrap();
        println!("\nwrote {}", p.display());
    }
}

/// Per circuit and size: synthesis, each backend's latency (and, where
/// asked, cold starts and throughput), the ratios; a JSON row each.
fn latency_rows(args: &Args) -> Vec<Value> {
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
            let p = prepare(args, kind, log);
            let bl = Blinding::random_vec(&mut ChaCha8Rng::seed_from_u64(log as u64), 1);
            let mut row = p.row();
            let mut same = SameBytes::new();
            let mut latency = serde_json::Map::new();
            for backend in &args.backends {
                if backend == "bellperson" {
                    let entry = bellperson_latency(args, &p, &bl, &mut same);
                    latency.insert("bellperson".into(), entry);
                    continue;
                }
                let Some(ctx) = context(backend) else {
                    continue;
                };
                let mut entry = core_latency(args, backend, &ctx, &p, &bl, &mut same);
                if backend == "cuda" {
                    cold::cold_starts(kind, log, backend, &args.params_dir, &mut entry);
                }
                if args.partitions > 0 && args.throughput_backends.contains(backend) {
                    throughput(args, backend, ctx, &p, &mut entry);
                }
                latency.insert(backend.clone(), entry);
            }
            print_ratios(&latency, same.same);
            row["backends"] = Value::Object(latency);
            row["identical_proofs"] = json!(same.same);
            rows.push(row);
        }
    }
    rows
}
