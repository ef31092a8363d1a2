//! One GPU: routing to it, many threads on it, and a card too small for
//! the job as a clean error.

use std::sync::Arc;

use cuda_prover_bellperson::circuits::Kind;
use cuda_prover_bellperson::Placement;
use cuda_prover_bellperson::{prove_from_assignments, synthesize, Blinding, ErrorCode, ProvingKey};
use cuda_prover_engine::{Engine, EngineConfig};
use cuda_prover_groth16::Groth16Engine;
use cuda_prover_groth16::{BlindingSource, Job};
use cuda_prover_pipeline::SynthesisMode;
use cuda_prover_tests::{builtin, cached_builtin_keys, gpu, Keys};
use rand_chacha::ChaCha8Rng;
use rand_core::SeedableRng;

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
    let o = prove_from_assignments(&ctx, &keys.key, &s, &bl, &Placement::on(0)).unwrap();
    assert_eq!(o[0].device, 0);
    let err =
        prove_from_assignments(&ctx, &keys.key, &s, &bl, &Placement::on(n as u32)).unwrap_err();
    assert_eq!(err.code(), Some(ErrorCode::DeviceIndex), "{err}");
    let o = prove_from_assignments(&ctx, &keys.key, &s, &bl, &Placement::AUTO).unwrap();
    assert_eq!(o[0].device, 0);
    assert_eq!(
        ctx.device_stats(0).unwrap().key_uploads,
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
                    let o = prove_from_assignments(ctx, &keys.key, &syn, &bl, &Placement::on(0))
                        .unwrap();
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
    // A card with 1 MiB left: neither the key nor, for streaming it, the
    // working set fits.
    ctx.set_memory_limit(0, Some(1 << 20)).unwrap();
    let err = prove_from_assignments(&ctx, &keys.key, &s, &bl, &Placement::on(0)).unwrap_err();
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
    let o = prove_from_assignments(&ctx, &keys.key, &s, &bl, &Placement::on(0)).unwrap();
    assert!(keys
        .key
        .verify(&o[0].proof, &[builtin(Kind::Chain, 14, 2).public_input()])
        .unwrap());
}
