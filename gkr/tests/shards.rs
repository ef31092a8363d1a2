//! Shards over simulated host devices: which device proved which shard
//! under each policy, every shard verified, and a fault injected in shard k
//! named with its device.

use std::time::Duration;

use cuda_prover_engine::Policy;
use cuda_prover_gkr::{run_shards, Context, GkrError, ShardConfig, ShardSpec, TowerKind};

fn cfg(policy: Policy, kind: TowerKind) -> ShardConfig {
    ShardConfig {
        kind,
        policy,
        seed: 42,
        worker_cpus: None,
    }
}

#[test]
fn round_robin_over_2_and_4_devices() {
    for n in [2u32, 4] {
        let ctx = Context::host(n).unwrap();
        let devices: Vec<u32> = (0..n).collect();
        let shards: Vec<ShardSpec> = (0..9).map(|k| ShardSpec { log_size: 4 + (k % 3) }).collect();
        for kind in [TowerKind::Product, TowerKind::Fraction] {
            let r = run_shards(&ctx, &devices, &shards, &cfg(Policy::RoundRobin, kind)).unwrap();
            assert_eq!(r.shards.len(), 9);
            for (k, s) in r.shards.iter().enumerate() {
                assert_eq!(s.shard, k, "shard order restored");
                assert_eq!(s.device, k as u32 % n, "shard {k} on device k % {n}");
                assert_eq!(s.log_size, shards[k].log_size);
            }
            // The core counted the work on the devices the report names.
            for d in 0..n {
                assert!(ctx.device_stats(d).unwrap().proofs > 0, "device {d} did work");
            }
        }
    }
}

#[test]
fn least_loaded_avoids_a_slow_device() {
    let ctx = Context::host(2).unwrap();
    // Device 0 is slow: every core call on it takes 20 ms longer.
    ctx.set_device_delay(0, Duration::from_millis(20)).unwrap();
    let shards: Vec<ShardSpec> = (0..10).map(|_| ShardSpec { log_size: 5 }).collect();
    let r = run_shards(&ctx, &[0, 1], &shards, &cfg(Policy::LeastLoaded, TowerKind::Product)).unwrap();
    let on0 = r.shards.iter().filter(|s| s.device == 0).count();
    let on1 = r.shards.iter().filter(|s| s.device == 1).count();
    assert_eq!(on0 + on1, 10);
    assert!(on1 > on0, "the fast device proved more: {on0} vs {on1}");
}

#[test]
fn fault_in_shard_k_names_shard_and_device() {
    for n in [2u32, 4] {
        let ctx = Context::host(n).unwrap();
        let devices: Vec<u32> = (0..n).collect();
        let shards: Vec<ShardSpec> = (0..8).map(|_| ShardSpec { log_size: 4 }).collect();
        let k = 5usize;
        let dev = k as u32 % n;
        ctx.inject_fault(dev, Some(k as i64)).unwrap();
        let e = run_shards(&ctx, &devices, &shards, &cfg(Policy::RoundRobin, TowerKind::Fraction))
            .unwrap_err();
        match &e {
            GkrError::Shard { shard, device, message } => {
                assert_eq!((*shard, *device), (k, dev), "{e}");
                assert!(message.contains("injected fault"), "{e}");
                assert!(message.contains(&format!("device {dev}")), "{e}");
            }
            other => panic!("expected a shard error, got {other:?}"),
        }
        // The fault was one-shot: the same job now succeeds.
        run_shards(&ctx, &devices, &shards, &cfg(Policy::RoundRobin, TowerKind::Fraction)).unwrap();
    }
}
