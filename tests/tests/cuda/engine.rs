//! Device memory given back by trim, the engine on the GPU, and the
//! automatic backend choice (CUDA with a GPU, the host backend without).

use std::sync::Arc;

use cuda_prover_bellperson::circuits::Kind;
use cuda_prover_bellperson::Placement;
use cuda_prover_bellperson::{
    prove_from_assignments, synthesize, Backend, Blinding, Context, ContextOptions, ErrorCode,
};
use cuda_prover_engine::{DeviceSelection, Engine, EngineConfig, Policy};
use cuda_prover_groth16::Groth16Engine;
use cuda_prover_groth16::{BlindingSource, Job};
use cuda_prover_pipeline::SynthesisMode;
use cuda_prover_tests::{builtin, cached_builtin_keys, gpu};
use rand_chacha::ChaCha8Rng;
use rand_core::SeedableRng;

#[test]
fn trim_returns_device_memory() {
    let Some(ctx) = gpu() else { return };
    let keys = cached_builtin_keys(Kind::Chain, 16);
    let s = vec![synthesize(builtin(Kind::Chain, 16, 2)).unwrap()];
    let bl = Blinding::random_vec(&mut ChaCha8Rng::seed_from_u64(2), 1);
    prove_from_assignments(&ctx, &keys.key, &s, &bl, &Placement::on(0)).unwrap();
    let held = ctx.device_stats(0).unwrap().cache_bytes;
    let held_all = ctx.device_stats(0).unwrap().held_bytes;
    let before = ctx.device_info(0).unwrap().free_bytes;
    let freed = ctx.trim(0).unwrap();
    let after = ctx.device_info(0).unwrap().free_bytes;
    // held_bytes: the cache and whatever else trim gives back.
    assert!(held_all >= held, "held {held_all} < cache {held}");
    assert!(ctx.device_stats(0).unwrap().held_bytes < held_all);
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
    // The next proof makes the cache again: lane 0's, and lane 1's where
    // the card has room for a second pass in flight.
    let allocs = ctx.device_stats(0).unwrap().cache_allocations;
    prove_from_assignments(&ctx, &keys.key, &s, &bl, &Placement::on(0)).unwrap();
    let again = ctx.device_stats(0).unwrap().cache_allocations - allocs;
    assert!((1..=2).contains(&again), "{again} allocations");
    // And a proof after that makes none.
    prove_from_assignments(&ctx, &keys.key, &s, &bl, &Placement::on(0)).unwrap();
    assert_eq!(
        ctx.device_stats(0).unwrap().cache_allocations,
        allocs + again
    );
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
