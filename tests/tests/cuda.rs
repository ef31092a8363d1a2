//! The CUDA backend on a real GPU: the host backend's test list, plus
//! identical proofs across CUDA, host and bellperson for equal r, s.
//!
//! Needs a build with `--features cuda-prover-tests/cuda` and a GPU. Without
//! a GPU each test says it skipped, unless `CP_REQUIRE_GPU=1` (set on GPU
//! machines) makes that a failure. `CP_CUDA_MIN_LOG` and `CP_CUDA_MAX_LOG`
//! (default 10 and 16) bound the sizes of the equality test; params come
//! from `CP_PARAMS_DIR`.
#![cfg(feature = "cuda")]

use std::sync::Arc;

use cuda_prover_bellperson::circuits::Kind;
use cuda_prover_bellperson::{
    prove_from_assignments, synthesize, Backend, Blinding, Context, ContextOptions, ErrorCode,
    ProvingKey, GPU_AUTO,
};
use cuda_prover_engine::{BlindingSource, DeviceSelection, Engine, EngineConfig, Job, Policy};
use cuda_prover_pipeline::SynthesisMode;
use cuda_prover_tests::{builtin, cached_builtin_keys, native_proofs, proof_bytes, Keys};
use rand_chacha::ChaCha8Rng;
use rand_core::SeedableRng;

fn gpu() -> Option<Context> {
    match Context::new(ContextOptions {
        backend: Backend::Cuda,
        host_devices: 0,
        host_threads: 0,
        devices: Vec::new(),
    }) {
        Ok(c) => Some(c),
        Err(e) => {
            if std::env::var("CP_REQUIRE_GPU").is_ok() {
                panic!("CP_REQUIRE_GPU is set but the CUDA backend is unavailable: {e}");
            }
            eprintln!("SKIPPED: no CUDA device ({e})");
            None
        }
    }
}

fn max_log() -> u32 {
    std::env::var("CP_CUDA_MAX_LOG")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(16)
}

fn min_log() -> u32 {
    std::env::var("CP_CUDA_MIN_LOG")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10)
}

#[test]
fn cuda_equals_host_and_bellperson() {
    let Some(ctx) = gpu() else { return };
    let host = Context::host(1).unwrap();
    for kind in [Kind::Chain, Kind::Bits] {
        for log in (min_log()..=max_log()).step_by(2) {
            let keys = cached_builtin_keys(kind, log);
            for batch in [1usize, 3] {
                let circuits: Vec<_> = (0..batch)
                    .map(|i| builtin(kind, log, 500 + i as u64))
                    .collect();
                let synth: Vec<_> = circuits.iter().map(|c| synthesize(*c).unwrap()).collect();
                let bl = Blinding::random_vec(&mut ChaCha8Rng::seed_from_u64(log as u64), batch);
                let t = std::time::Instant::now();
                let cuda = prove_from_assignments(&ctx, &keys.key, &synth, &bl, 0, None).unwrap();
                let cuda_s = t.elapsed().as_secs_f64();
                for (o, c) in cuda.iter().zip(&circuits) {
                    assert_eq!(o.device, 0);
                    assert!(
                        keys.key.verify(&o.proof, &[c.public_input()]).unwrap(),
                        "{kind:?} 2^{log}"
                    );
                }
                // The CPU references get slow at the top sizes: at 2^20
                // bellperson checks the single proof and the host backend
                // the batch.
                let mut compared = Vec::new();
                if log <= 18 || batch == 1 {
                    compared.push("bellperson");
                    let theirs = native_proofs(circuits.clone(), &keys.params, &bl);
                    for (o, t) in cuda.iter().zip(&theirs) {
                        assert_eq!(
                            proof_bytes(&o.proof),
                            proof_bytes(t),
                            "{kind:?} 2^{log} x{batch}: cuda == bellperson"
                        );
                    }
                }
                if log <= 18 || batch > 1 {
                    let h = prove_from_assignments(&host, &keys.key, &synth, &bl, 0, None).unwrap();
                    for (o, t) in cuda.iter().zip(&h) {
                        assert_eq!(
                            proof_bytes(&o.proof),
                            proof_bytes(&t.proof),
                            "{kind:?} 2^{log} x{batch}: cuda == host"
                        );
                    }
                    compared.push("host");
                }
                eprintln!(
                    "{} 2^{log} x{batch}: cuda {:.3} s, identical to {}",
                    kind.name(),
                    cuda_s,
                    compared.join(" and ")
                );
            }
        }
    }
}

#[test]
fn routing_on_one_gpu() {
    let Some(ctx) = gpu() else { return };
    let n = ctx.device_count().unwrap();
    assert!(n >= 1);
    let info = ctx.device_info(0).unwrap();
    eprintln!(
        "device 0: {} cc {:?}, {} MiB free",
        info.name,
        info.compute_capability,
        info.free_bytes >> 20
    );
    assert!(!info.simulated && info.total_bytes > 0);
    // A key of its own: device copies belong to the key, shared by every
    // context on the device, so a key another test used is already there.
    let params = cached_builtin_keys(Kind::Bits, 10);
    let key = ProvingKey::from_params(&params.params).unwrap();
    let keys = Keys {
        params: params.params.clone(),
        key,
    };
    let s = vec![synthesize(builtin(Kind::Bits, 10, 1)).unwrap()];
    let bl = Blinding::random_vec(&mut ChaCha8Rng::seed_from_u64(1), 1);
    let o = prove_from_assignments(&ctx, &keys.key, &s, &bl, 0, None).unwrap();
    assert_eq!(o[0].device, 0);
    let err = prove_from_assignments(&ctx, &keys.key, &s, &bl, n as i32, None).unwrap_err();
    assert_eq!(err.code(), Some(ErrorCode::DeviceIndex), "{err}");
    let o = prove_from_assignments(&ctx, &keys.key, &s, &bl, GPU_AUTO, None).unwrap();
    assert_eq!(o[0].device, 0);
    assert_eq!(
        ctx.device_stats(0).unwrap().srs_uploads,
        1,
        "key uploaded once and reused"
    );
}

#[test]
fn many_threads_on_one_gpu() {
    let Some(ctx) = gpu() else { return };
    let keys = cached_builtin_keys(Kind::Chain, 14);
    std::thread::scope(|s| {
        for t in 0..8u64 {
            let (ctx, keys) = (&ctx, &keys);
            s.spawn(move || {
                for i in 0..3 {
                    let c = builtin(Kind::Chain, 14, 100 * t + i);
                    let syn = vec![synthesize(c).unwrap()];
                    let bl = Blinding::random_vec(&mut ChaCha8Rng::seed_from_u64(t * 10 + i), 1);
                    let o = prove_from_assignments(ctx, &keys.key, &syn, &bl, 0, None).unwrap();
                    assert!(keys.key.verify(&o[0].proof, &[c.public_input()]).unwrap());
                }
            });
        }
    });
    assert_eq!(ctx.device_stats(0).unwrap().proofs, 24);
}

#[test]
fn too_big_for_the_card_is_a_clean_error() {
    let Some(ctx) = gpu() else { return };
    let keys = cached_builtin_keys(Kind::Chain, 14);
    let s = vec![synthesize(builtin(Kind::Chain, 14, 2)).unwrap()];
    let bl = Blinding::random_vec(&mut ChaCha8Rng::seed_from_u64(2), 1);
    // A card with 4 MiB left: the key alone does not fit.
    ctx.set_memory_limit(0, Some(4 << 20)).unwrap();
    let err = prove_from_assignments(&ctx, &keys.key, &s, &bl, 0, None).unwrap_err();
    assert_eq!(err.code(), Some(ErrorCode::OutOfMemory), "{err}");
    assert!(err.to_string().contains("MiB"), "says how much: {err}");
    // The engine refuses the job before it starts, naming the device.
    let ctx = Arc::new(ctx);
    let engine = Engine::new(ctx.clone(), EngineConfig::default()).unwrap();
    let job = Job {
        name: "big".into(),
        partitions: vec![builtin(Kind::Chain, 14, 3)],
        blinding: BlindingSource::Seeded(1),
        trim_after: false,
        synthesis: SynthesisMode::Auto,
        shape: None,
    };
    let e = engine
        .run(job, &keys.key, |_| {})
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("device 0"), "{e}");
    // Lifting the limit makes the same request work.
    ctx.set_memory_limit(0, None).unwrap();
    let o = prove_from_assignments(&ctx, &keys.key, &s, &bl, 0, None).unwrap();
    assert!(keys
        .key
        .verify(&o[0].proof, &[builtin(Kind::Chain, 14, 2).public_input()])
        .unwrap());
}

#[test]
fn trim_returns_device_memory() {
    let Some(ctx) = gpu() else { return };
    let keys = cached_builtin_keys(Kind::Chain, 16);
    let s = vec![synthesize(builtin(Kind::Chain, 16, 2)).unwrap()];
    let bl = Blinding::random_vec(&mut ChaCha8Rng::seed_from_u64(2), 1);
    prove_from_assignments(&ctx, &keys.key, &s, &bl, 0, None).unwrap();
    let held = ctx.device_stats(0).unwrap().cache_bytes;
    let before = ctx.device_info(0).unwrap().free_bytes;
    let freed = ctx.trim(0).unwrap();
    let after = ctx.device_info(0).unwrap().free_bytes;
    eprintln!(
        "trim: cache {} MiB, freed {} MiB, free {} -> {} MiB",
        held >> 20,
        freed >> 20,
        before >> 20,
        after >> 20
    );
    assert!(held > 0 && freed == held);
    assert!(after >= before + freed / 2, "memory returned to the device");
    assert_eq!(ctx.device_stats(0).unwrap().cache_bytes, 0);
    let allocs = ctx.device_stats(0).unwrap().cache_allocations;
    prove_from_assignments(&ctx, &keys.key, &s, &bl, 0, None).unwrap();
    assert_eq!(ctx.device_stats(0).unwrap().cache_allocations, allocs + 1);
}

#[test]
fn engine_on_the_gpu() {
    let Some(ctx) = gpu() else { return };
    let keys = cached_builtin_keys(Kind::Bits, 14);
    let engine = Engine::new(
        Arc::new(ctx),
        EngineConfig {
            devices: DeviceSelection::All,
            policy: Policy::LeastLoaded,
            ..Default::default()
        },
    )
    .unwrap();
    let job = Job {
        name: "gpu".into(),
        partitions: (0..16).map(|k| builtin(Kind::Bits, 14, k)).collect(),
        blinding: BlindingSource::Seeded(4),
        trim_after: true,
        synthesis: SynthesisMode::Auto,
        shape: None,
    };
    let out = engine.run(job, &keys.key, |_| {}).unwrap();
    assert_eq!(out.proofs.len(), 16);
    eprintln!("{}", out.report.summary());
}

/// Without a GPU (or driver) a cuda build reports zero devices with the
/// reason, refuses an explicit CUDA context and falls back to the host
/// backend in automatic mode; with a GPU, automatic mode picks CUDA. Runs in
/// CI, where there is no GPU.
#[test]
fn automatic_backend_follows_the_hardware() {
    use cuda_prover_engine::{open_context, BackendChoice};
    assert!(cuda_prover_bellperson::built_with_cuda());
    let (n, why) = cuda_prover_bellperson::cuda_device_count().unwrap();
    let auto = open_context(BackendChoice::Auto, 2, &DeviceSelection::All).unwrap();
    if n == 0 {
        assert!(why.is_some(), "a zero count says why");
        let err = Context::new(ContextOptions {
            backend: Backend::Cuda,
            host_devices: 0,
            host_threads: 0,
            devices: Vec::new(),
        })
        .err()
        .expect("an explicit CUDA context needs a GPU");
        assert_eq!(err.code, ErrorCode::Device, "{err}");
        assert_eq!(auto.backend_name(), "host");
        assert_eq!(auto.device_count().unwrap(), 2);
        assert!(open_context(BackendChoice::Cuda, 0, &DeviceSelection::All).is_err());
    } else {
        assert_eq!(auto.backend_name(), "cuda");
        assert_eq!(auto.device_count().unwrap(), n);
    }
}

/// The witness path on the GPU: a, b, c evaluated on the device give the
/// proofs of the full path and of the host backend, byte for byte; an
/// unsatisfied witness is caught on the device with its row; trim frees the
/// resident shape.
#[test]
fn cuda_witness_path_equals_full_path() {
    use cuda_prover_bellperson::{prove_from_witnesses, synthesize_witness, Shape, ShapeData};
    let Some(ctx) = gpu() else { return };
    let host = Context::host(1).unwrap();
    for kind in [Kind::Chain, Kind::Bits] {
        for log in (min_log()..=max_log()).step_by(2) {
            let keys = cached_builtin_keys(kind, log);
            let shape = Shape::new(&ShapeData::record(builtin(kind, log, 0)).unwrap()).unwrap();
            let circuits: Vec<_> = (0..3).map(|i| builtin(kind, log, 700 + i)).collect();
            let hint = keys.key.size_hint().unwrap();
            let synth: Vec<_> = circuits.iter().map(|c| synthesize(*c).unwrap()).collect();
            let wit: Vec<_> = circuits
                .iter()
                .map(|c| synthesize_witness(*c, hint).unwrap())
                .collect();
            let bl = Blinding::random_vec(&mut ChaCha8Rng::seed_from_u64(99), 3);
            let full = prove_from_assignments(&ctx, &keys.key, &synth, &bl, 0, None).unwrap();
            let t = std::time::Instant::now();
            let w = prove_from_witnesses(&ctx, &keys.key, &shape, &wit, &bl, 0, None).unwrap();
            let w_s = t.elapsed().as_secs_f64();
            let h = prove_from_witnesses(&host, &keys.key, &shape, &wit[..1], &bl[..1], 0, None)
                .unwrap();
            for k in 0..3 {
                assert_eq!(
                    proof_bytes(&full[k].proof),
                    proof_bytes(&w[k].proof),
                    "{kind:?} 2^{log} #{k}"
                );
                assert!(keys
                    .key
                    .verify(&w[k].proof, &[circuits[k].public_input()])
                    .unwrap());
            }
            assert_eq!(
                proof_bytes(&h[0].proof),
                proof_bytes(&w[0].proof),
                "host = cuda, {kind:?} 2^{log}"
            );
            println!(
                "witness path identical: {} 2^{log}: 3 proofs {w_s:.3} s, evaluation {:.2} ms, device {:.2} ms",
                kind.name(),
                w[1].timings.eval_ns as f64 / 1e6,
                w[1].timings.device_ns as f64 / 1e6
            );

            let mut bad = wit[0].clone();
            let n = bad.aux.len();
            bad.aux[n / 2] += blstrs::Scalar::from(1u64);
            let e = prove_from_witnesses(&ctx, &keys.key, &shape, &[bad], &bl[..1], 0, None)
                .unwrap_err();
            assert_eq!(e.code(), Some(ErrorCode::Unsatisfied), "{e}");
            assert!(e.to_string().contains("constraint "), "{e}");
        }
    }
    let freed = ctx.trim(0).unwrap();
    assert!(freed > 0, "trim frees the working cache and the shape");
}
