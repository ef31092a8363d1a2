//! Readying an engine's devices for a key without proving
//! (`Engine::ready_key`, what a daemon's preload does): every device holds
//! its working cache before any job, and the next job of that key on them
//! allocates nothing more and proves, verified.

use std::path::PathBuf;
use std::sync::Arc;

use cuda_prover_engine::{Engine, EngineConfig};
use cuda_prover_groth16::Groth16Engine;
use cuda_prover_groth16::Job;
use cuda_prover_pipeline::circuits::{BuiltIn, Kind};
use cuda_prover_pipeline::{Context, ProvingKey};

fn temp_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("cp-ready-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The key of chain 2^log (made in a fresh directory, returned to be
/// removed) and an engine over `devices` host devices.
fn key_and_engine(tag: &str, log: u32, devices: u32) -> (PathBuf, ProvingKey, Engine) {
    let dir = temp_dir(tag);
    let c = BuiltIn::new(Kind::Chain, log, 0).unwrap();
    let key = cuda_prover_groth16::params::load_or_create(&dir, &c, &|_| {}).unwrap();
    let ctx = Arc::new(Context::host(devices).unwrap());
    let engine = Engine::new(ctx, EngineConfig::default()).unwrap();
    (dir, key, engine)
}

#[test]
fn readied_devices_serve_the_next_job_without_allocating() {
    let (dir, key, engine) = key_and_engine("next-job", 8, 2);
    let ctx = engine.context();
    for d in 0..2 {
        let s = ctx.device_stats(d).unwrap();
        assert_eq!((s.cache_allocations, s.proofs), (0, 0), "device {d} before");
    }

    engine.ready_key(&key, None).unwrap();
    for d in 0..2 {
        let s = ctx.device_stats(d).unwrap();
        assert_eq!(s.cache_allocations, 1, "device {d} readied");
        assert_eq!(s.proofs, 0, "device {d} proved nothing while readied");
    }
    assert_eq!(engine.devices_touched().unwrap(), vec![0, 1]);

    let partitions = (0..4)
        .map(|i| BuiltIn::new(Kind::Chain, 8, i + 1).unwrap())
        .collect();
    let out = engine
        .run(Job::new("after ready", partitions), &key, |_| {})
        .unwrap();
    assert_eq!(out.proofs.len(), 4);
    let mut proofs = 0;
    for d in 0..2 {
        let s = ctx.device_stats(d).unwrap();
        assert_eq!(
            s.cache_allocations, 1,
            "device {d}: the job reused the cache"
        );
        proofs += s.proofs;
    }
    assert_eq!(proofs, 4);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_key_too_large_for_the_devices_is_refused_before_any_work() {
    let (dir, key, engine) = key_and_engine("too-large", 10, 1);
    let ctx = engine.context();
    // 64 KiB: room for neither the key nor the working set.
    ctx.set_memory_limit(0, Some(64 << 10)).unwrap();
    let err = engine.ready_key(&key, None).unwrap_err();
    assert!(
        err.to_string()
            .contains("it holds for the next passes) but the job needs"),
        "{err}"
    );
    assert_eq!(ctx.device_stats(0).unwrap().cache_allocations, 0);
    std::fs::remove_dir_all(&dir).ok();
}

/// A memory limit set on the context directly (not through the engine's
/// configuration) bounds the engine's check too: what a device holds for
/// the next passes (here a streamed key's chunk buffers) counts as room,
/// but never past the limit.
#[test]
fn a_limit_set_on_the_context_bounds_the_room_the_held_bytes_give() {
    let (dir, key, engine) = key_and_engine("context-limit", 10, 1);
    let ctx = engine.context();
    let n = key.domain_size().unwrap();
    let est = key.device_memory_estimate(ctx, 0, n).unwrap();
    let need = est.working_bytes + est.key_bytes;
    let smallest = need.min(est.compact_bytes).min(est.streamed_bytes);
    // A job under a limit that makes it stream its key: the device then
    // holds the chunk buffers for the next job.
    ctx.set_memory_limit(0, Some(smallest + (need - smallest) / 4))
        .unwrap();
    let partitions = vec![BuiltIn::new(Kind::Chain, 10, 1).unwrap()];
    engine
        .run(Job::new("streamed", partitions), &key, |_| {})
        .unwrap();
    let held = ctx.device_stats(0).unwrap().held_bytes;
    // Then a limit under every way of running the job, low enough that
    // the held bytes on top of it would cover the smallest.
    let limit = smallest - 1;
    assert!(
        limit + held >= smallest,
        "the scenario: held {held} B, limit {limit} B, smallest {smallest} B, need {need} B"
    );
    ctx.set_memory_limit(0, Some(limit)).unwrap();
    assert_eq!(ctx.device_stats(0).unwrap().limit_bytes, limit);
    let err = engine.check_memory(&key).unwrap_err();
    assert!(err.to_string().contains("but the job needs"), "{err}");
    ctx.set_memory_limit(0, None).unwrap();
    assert_eq!(ctx.device_stats(0).unwrap().limit_bytes, 0);
    engine.check_memory(&key).unwrap();
    std::fs::remove_dir_all(&dir).ok();
}
