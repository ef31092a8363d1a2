//! Shards as engine work over simulated host devices: which device proved
//! which shard under each policy (checked against the core's per-device
//! counters too), every shard verified, and a fault injected in shard k
//! named with its shard and device.

use std::sync::Arc;
use std::time::Duration;

use cuda_prover_engine::{DeviceSelection, Engine, EngineConfig, EngineError, Policy};
use cuda_prover_gkr::Placement;
use cuda_prover_gkr::{run_shards, Context, ErrorCode, ShardConfig, ShardSpec, TowerKind};

fn engine(n: u32, policy: Policy) -> Engine {
    let ctx = Arc::new(Context::host(n).unwrap());
    Engine::new(
        ctx,
        EngineConfig {
            devices: DeviceSelection::All,
            policy,
            ..EngineConfig::default()
        },
    )
    .unwrap()
}

fn cfg(kind: TowerKind) -> ShardConfig {
    ShardConfig { kind, seed: 42 }
}

#[test]
fn round_robin_over_2_and_4_devices() {
    for n in [2u32, 4] {
        let e = engine(n, Policy::RoundRobin);
        let shards: Vec<ShardSpec> = (0..9)
            .map(|k| ShardSpec {
                log_size: 4 + (k % 3),
            })
            .collect();
        for kind in [TowerKind::Product, TowerKind::Fraction] {
            let before: Vec<u64> = (0..n)
                .map(|d| e.context().device_stats(d).unwrap().proofs)
                .collect();
            let r = run_shards(&e, &shards, cfg(kind)).unwrap();
            assert_eq!(r.shards.len(), 9);
            let mut per_device = vec![0usize; n as usize];
            for (k, s) in r.shards.iter().enumerate() {
                assert_eq!(s.shard, k, "shard order restored");
                assert_eq!(s.device, k as u32 % n, "shard {k} on device k % {n}");
                assert_eq!(
                    s.stats.device, s.device,
                    "the core's handle names the same device"
                );
                assert_eq!(s.log_size, shards[k].log_size);
                per_device[s.device as usize] += 1;
            }
            // Each device's core counter moved exactly when it proved a shard.
            for d in 0..n {
                let after = e.context().device_stats(d).unwrap().proofs;
                assert_eq!(
                    after > before[d as usize],
                    per_device[d as usize] > 0,
                    "device {d}"
                );
            }
        }
    }
}

#[test]
fn least_loaded_gives_the_slow_device_less() {
    let e = engine(2, Policy::LeastLoaded);
    // Device 0 is slow: every core call on it takes 20 ms longer.
    e.context()
        .set_device_delay(0, Duration::from_millis(20))
        .unwrap();
    let shards: Vec<ShardSpec> = (0..10).map(|_| ShardSpec { log_size: 5 }).collect();
    let r = run_shards(&e, &shards, cfg(TowerKind::Product)).unwrap();
    let on0 = r.shards.iter().filter(|s| s.device == 0).count();
    let on1 = r.shards.iter().filter(|s| s.device == 1).count();
    assert_eq!(on0 + on1, 10);
    assert!(on1 > on0, "the fast device proved more: {on0} vs {on1}");
}

#[test]
fn least_loaded_weighs_shards_by_size() {
    // One preparer, so shards are placed in order: the large shard 0 goes
    // to device 0 (both idle), and every small shard after it to device 1,
    // because device 0's queue holds 2^14 values against a few dozen. Device
    // 0 is slowed so that shard 0 is still in flight while they are placed.
    let ctx = Arc::new(Context::host(2).unwrap());
    let e = Engine::new(
        ctx,
        EngineConfig {
            devices: DeviceSelection::All,
            policy: Policy::LeastLoaded,
            synthesis_threads: 1,
            ..EngineConfig::default()
        },
    )
    .unwrap();
    e.context()
        .set_device_delay(0, Duration::from_millis(5))
        .unwrap();
    let mut shards = vec![ShardSpec { log_size: 14 }];
    shards.extend((0..6).map(|_| ShardSpec { log_size: 4 }));
    let r = run_shards(&e, &shards, cfg(TowerKind::Product)).unwrap();
    assert_eq!(r.shards[0].device, 0);
    for s in &r.shards[1..] {
        assert_eq!(s.device, 1, "small shard {} placed by size", s.shard);
    }
}

#[test]
fn fault_in_shard_k_names_shard_and_device() {
    for n in [2u32, 4] {
        let e = engine(n, Policy::RoundRobin);
        let shards: Vec<ShardSpec> = (0..8).map(|_| ShardSpec { log_size: 4 }).collect();
        let k = 5usize;
        let dev = k as u32 % n;
        e.context().inject_fault(dev, Some(k as i64)).unwrap();
        let err = run_shards(&e, &shards, cfg(TowerKind::Fraction)).unwrap_err();
        assert!(matches!(err, EngineError::Partition { .. }), "{err}");
        assert_eq!(err.partition(), Some(k), "{err}");
        assert_eq!(err.device(), Some(dev), "{err}");
        assert_eq!(err.core_code(), Some(ErrorCode::InjectedFault), "{err}");
        let msg = err.to_string();
        assert!(
            msg.contains(&format!("device {dev}")) && msg.contains(&format!("tag {k}")),
            "{msg}"
        );
        // The fault was one-shot: the same job now succeeds.
        run_shards(&e, &shards, cfg(TowerKind::Fraction)).unwrap();
    }
}

#[test]
fn bad_shard_sizes_are_refused() {
    let e = engine(1, Policy::RoundRobin);
    assert!(run_shards(&e, &[], cfg(TowerKind::Product)).is_err());
    assert!(run_shards(&e, &[ShardSpec { log_size: 0 }], cfg(TowerKind::Product)).is_err());
    assert!(run_shards(&e, &[ShardSpec { log_size: 31 }], cfg(TowerKind::Product)).is_err());
}

/// A size the host cannot hold is a clear error before anything is drawn,
/// not an abort in the allocator (2^28 fractions: 16 GiB at its peak).
#[test]
fn shards_larger_than_host_memory_are_refused_before_allocating() {
    use cuda_prover_gkr::{check_host_memory, shard_host_bytes};
    let e = engine(2, Policy::RoundRobin);
    assert_eq!(shard_host_bytes(TowerKind::Product, 20), 64 << 20);
    assert_eq!(shard_host_bytes(TowerKind::Fraction, 28), 32 << 30);
    let big = [ShardSpec { log_size: 28 }];
    let err = check_host_memory(&e, &big, TowerKind::Fraction, Some(8 << 30)).unwrap_err();
    let text = err.to_string();
    assert!(text.contains("GiB of host memory"), "{text}");
    assert!(text.contains("8.0 GiB is available"), "{text}");
    // In flight at once: two a worker (2 devices, 1 worker each), the
    // largest first: 4 of 8 shards of 2^20 (product: 64 MiB each).
    let eight = [ShardSpec { log_size: 20 }; 8];
    assert!(check_host_memory(&e, &eight, TowerKind::Product, Some(256 << 20)).is_ok());
    assert!(check_host_memory(&e, &eight, TowerKind::Product, Some((256 << 20) - 1)).is_err());
    assert!(check_host_memory(&e, &eight, TowerKind::Product, None).is_ok());
    // Through run_shards: 2^30 fractions (128 GiB) do not fit a machine
    // with less available (CI has 24 GiB).
    let available = cuda_prover_engine::host_memory::available_bytes();
    if available.is_some_and(|a| a < 128 << 30) {
        let huge = [ShardSpec { log_size: 30 }];
        let err = run_shards(&e, &huge, cfg(TowerKind::Fraction)).unwrap_err();
        assert!(err.to_string().contains("host memory"), "{err}");
    }
    // Too many shards is refused before anything else.
    let many = vec![ShardSpec { log_size: 1 }; cuda_prover_gkr::MAX_SHARDS + 1];
    let err = run_shards(&e, &many, cfg(TowerKind::Product)).unwrap_err();
    assert!(err.to_string().contains("at most"), "{err}");
}

#[test]
fn the_collector_check_rejects_a_tampered_shard() {
    use cuda_prover_engine::Work;
    use cuda_prover_gkr::shards::shard_input;
    use cuda_prover_gkr::{prove_tower, ShardOutput, ShardWork};

    let ctx = Context::host(1).unwrap();
    let shards = [ShardSpec { log_size: 6 }, ShardSpec { log_size: 7 }];
    let work = ShardWork::new(&shards, cfg(TowerKind::Product));
    let input = shard_input(TowerKind::Product, 42, 1, 7);
    let (proof, stats) = prove_tower(&ctx, &Placement::on(0), 1, &input).unwrap();
    let mut out = ShardOutput {
        device: 0,
        proof: proof.to_bytes(),
        root: proof.root.clone(),
        stats,
    };
    work.verify(1, &out).unwrap();
    // The same proof is not one for shard 0's input.
    let err = work.verify(0, &out).unwrap_err();
    assert!(
        matches!(
            err,
            EngineError::Verification {
                partition: 0,
                device: 0
            }
        ),
        "{err}"
    );
    // One flipped byte in a round value.
    let n = out.proof.len();
    out.proof[n - 40] ^= 1;
    assert!(work.verify(1, &out).is_err());
    assert!(work.verify_time() > Duration::ZERO);
}
