//! Routing on simulated devices: which device proved what.

use std::sync::Barrier;
use std::time::Duration;

use cuda_prover_bellperson::circuits::Kind;
use cuda_prover_bellperson::Placement;
use cuda_prover_bellperson::{
    prove_from_assignments, prove_start, synthesize, Blinding, Context, DeviceMutex, ErrorCode,
    GpuIndex, Synthesized, GPU_AUTO, GPU_BOUND,
};

use cuda_prover_tests::{builtin, builtin_keys};
use rand_chacha::ChaCha8Rng;
use rand_core::SeedableRng;

fn circuits(n: usize) -> Vec<Synthesized> {
    (0..n)
        .map(|i| synthesize(builtin(Kind::Bits, 8, i as u64)).unwrap())
        .collect()
}

fn blinding(n: usize) -> Vec<Blinding> {
    Blinding::random_vec(&mut ChaCha8Rng::seed_from_u64(3), n)
}

fn verify_all(
    keys: &cuda_prover_tests::Keys,
    outs: &[cuda_prover_bellperson::ProofOutput],
    n: usize,
) {
    for (i, o) in outs.iter().enumerate().take(n) {
        let public = [builtin(Kind::Bits, 8, i as u64).public_input()];
        assert!(
            keys.key.verify(&o.proof, &public).unwrap(),
            "proof {i} verifies"
        );
    }
}

#[test]
fn explicit_index_proves_everything_there() {
    let keys = builtin_keys(Kind::Bits, 8);
    for devices in [2u32, 4] {
        let ctx = Context::host(devices).unwrap();
        assert_eq!(ctx.device_count().unwrap(), devices as usize);
        let cs = circuits(3);
        for k in 0..devices {
            let before: Vec<u64> = (0..devices)
                .map(|d| ctx.device_stats(d).unwrap().proofs)
                .collect();
            let pending =
                prove_start(&ctx, &keys.key, &cs, &blinding(3), &[], &Placement::on(k)).unwrap();
            assert_eq!(pending.devices(), vec![k; 3]);
            let outs = pending.finish().unwrap();
            assert!(outs.iter().all(|o| o.device == k));
            verify_all(&keys, &outs, 3);
            for d in 0..devices {
                let after = ctx.device_stats(d).unwrap().proofs;
                let expect = if d == k { 3 } else { 0 };
                assert_eq!(
                    after - before[d as usize],
                    expect,
                    "device {d} after gpu_index {k}"
                );
            }
        }
    }
}

#[test]
fn automatic_splits_in_contiguous_ranges() {
    let keys = builtin_keys(Kind::Bits, 8);
    // (devices, circuits) -> device of each circuit
    let cases: [(u32, usize, &[u32]); 5] = [
        (2, 1, &[0]),
        (2, 2, &[0, 1]),
        (2, 5, &[0, 0, 0, 1, 1]),
        (4, 3, &[0, 1, 2]),
        (4, 6, &[0, 0, 1, 1, 2, 3]),
    ];
    for (devices, n, expect) in cases {
        let ctx = Context::host(devices).unwrap();
        let cs = circuits(n);
        let outs =
            prove_from_assignments(&ctx, &keys.key, &cs, &blinding(n), &Placement::AUTO).unwrap();
        let got: Vec<u32> = outs.iter().map(|o| o.device).collect();
        assert_eq!(got, expect, "{devices} devices, {n} circuits");
        verify_all(&keys, &outs, n);
        for d in 0..devices {
            let want = expect.iter().filter(|&&x| x == d).count() as u64;
            assert_eq!(ctx.device_stats(d).unwrap().proofs, want);
        }
    }
}

#[test]
fn gpu_index_keeps_the_c_convention_and_refuses_the_rest() {
    for v in [0, 1, 7, -1, -2] {
        assert_eq!(GpuIndex::try_from(v).unwrap().raw(), v);
    }
    for v in [-3, -100, i32::MIN] {
        assert!(GpuIndex::try_from(v).is_err(), "{v}");
    }
    assert_eq!(GpuIndex::Device(u32::MAX).raw(), i32::MAX);
    assert_eq!(GpuIndex::from(3u32), GpuIndex::Device(3));
    assert_eq!((GPU_AUTO, GPU_BOUND), (GpuIndex::Auto, GpuIndex::Bound));
}

#[test]
fn out_of_range_index_is_an_error_not_device_zero() {
    let keys = builtin_keys(Kind::Bits, 8);
    let ctx = Context::host(2).unwrap();
    let cs = circuits(1);
    for bad in [2u32, 7, 1 << 20] {
        let err = prove_from_assignments(&ctx, &keys.key, &cs, &blinding(1), &Placement::on(bad))
            .unwrap_err();
        assert_eq!(
            err.code(),
            Some(ErrorCode::DeviceIndex),
            "gpu_index {bad}: {err}"
        );
        assert!(
            err.to_string().contains(&bad.to_string()),
            "message names the index: {err}"
        );
    }
    // An ordinal beyond i32 reaches the core as i32::MAX: out of range too.
    let err = prove_from_assignments(&ctx, &keys.key, &cs, &blinding(1), &Placement::on(u32::MAX))
        .unwrap_err();
    assert_eq!(err.code(), Some(ErrorCode::DeviceIndex), "{err}");
    // The C convention's other negatives are no GpuIndex at all.
    for bad in [-3, i32::MIN] {
        let err = GpuIndex::try_from(bad).unwrap_err();
        assert!(err.to_string().contains(&bad.to_string()), "{err}");
    }
    // (The core refuses them from C callers: core_selftest's "out of range -3".)
    assert_eq!(ctx.device_stats(0).unwrap().proofs, 0);
    assert_eq!(ctx.device_stats(1).unwrap().proofs, 0);
}

#[test]
fn unbound_thread_is_refused_and_bound_thread_uses_its_device() {
    let keys = builtin_keys(Kind::Bits, 8);
    let ctx = Context::host(2).unwrap();
    let cs = circuits(1);
    std::thread::scope(|s| {
        s.spawn(|| {
            let err = prove_from_assignments(
                &ctx,
                &keys.key,
                &cs,
                &blinding(1),
                &Placement::on(GPU_BOUND),
            )
            .unwrap_err();
            assert_eq!(err.code(), Some(ErrorCode::NoDeviceBound), "{err}");
            assert_eq!(
                ctx.current_gpu().unwrap_err().code,
                ErrorCode::NoDeviceBound
            );
        });
        s.spawn(|| {
            ctx.select_gpu(Some(1)).unwrap();
            assert_eq!(ctx.current_gpu().unwrap(), 1);
            let outs = prove_from_assignments(
                &ctx,
                &keys.key,
                &cs,
                &blinding(1),
                &Placement::on(GPU_BOUND),
            )
            .unwrap();
            assert_eq!(outs[0].device, 1);
        });
    });
    assert!(ctx.select_gpu(Some(2)).is_err());
}

/// Two threads, one device part each, started together; the device parts
/// are slowed down so that overlap (or its absence) is unmistakable.
fn two_threads(
    ctx: &Context,
    devices: [u32; 2],
    shared_mutex: Option<&DeviceMutex>,
) -> [(u64, u64); 2] {
    let keys = builtin_keys(Kind::Bits, 8);
    let cs = circuits(1);
    let barrier = Barrier::new(2);
    let mut out = [(0, 0); 2];
    std::thread::scope(|s| {
        let hs: Vec<_> = devices
            .iter()
            .map(|&d| {
                let (cs, keys, barrier) = (&cs, &keys, &barrier);
                s.spawn(move || {
                    barrier.wait();
                    let o = prove_from_assignments(
                        ctx,
                        &keys.key,
                        cs,
                        &blinding(1),
                        &Placement::new(d, shared_mutex),
                    )
                    .unwrap();
                    assert_eq!(o[0].device, d);
                    (o[0].timings.wait_ns, o[0].timings.device_ns)
                })
            })
            .collect();
        for (i, h) in hs.into_iter().enumerate() {
            out[i] = h.join().unwrap();
        }
    });
    out
}

const DELAY: Duration = Duration::from_millis(400);

#[test]
fn same_device_serializes_through_its_mutex() {
    let ctx = Context::host(2).unwrap();
    ctx.set_device_delay(0, DELAY).unwrap();
    let r = two_threads(&ctx, [0, 0], None);
    // One of the two waited for the other's whole device part.
    let waited = r.iter().map(|x| x.0).max().unwrap();
    let shortest_part = r.iter().map(|x| x.1).min().unwrap();
    assert!(shortest_part >= DELAY.as_nanos() as u64);
    assert!(waited as f64 >= 0.9 * shortest_part as f64, "{r:?}");
}

#[test]
fn different_devices_overlap() {
    let ctx = Context::host(2).unwrap();
    ctx.set_device_delay(0, DELAY).unwrap();
    ctx.set_device_delay(1, DELAY).unwrap();
    let r = two_threads(&ctx, [0, 1], None);
    for (wait, part) in r {
        assert!(part >= DELAY.as_nanos() as u64);
        assert!(
            wait < DELAY.as_nanos() as u64 / 2,
            "no waiting on separate devices: {r:?}"
        );
    }
}

#[test]
fn caller_mutex_is_the_one_held() {
    // A caller that hands the same mutex for two devices serializes them:
    // the core holds the caller's mutex, not a process-wide one.
    let ctx = Context::host(2).unwrap();
    ctx.set_device_delay(0, DELAY).unwrap();
    ctx.set_device_delay(1, DELAY).unwrap();
    let m = DeviceMutex::new().unwrap();
    let r = two_threads(&ctx, [0, 1], Some(&m));
    let waited = r.iter().map(|x| x.0).max().unwrap();
    assert!(waited as f64 >= 0.9 * DELAY.as_nanos() as f64, "{r:?}");
}

#[test]
fn trim_frees_one_device_only() {
    let keys = builtin_keys(Kind::Bits, 8);
    let ctx = Context::host(2).unwrap();
    let cs = circuits(2);
    prove_from_assignments(&ctx, &keys.key, &cs, &blinding(2), &Placement::AUTO).unwrap();
    let held0 = ctx.device_stats(0).unwrap().cache_bytes;
    let held1 = ctx.device_stats(1).unwrap().cache_bytes;
    assert!(held0 > 0 && held1 > 0);
    // Nothing streamed: what the device holds for the next passes is its
    // cache, and trim gives back all of it.
    assert_eq!(ctx.device_stats(0).unwrap().held_bytes, held0);
    assert_eq!(ctx.trim(0).unwrap(), held0);
    assert_eq!(ctx.device_stats(0).unwrap().cache_bytes, 0);
    assert_eq!(ctx.device_stats(0).unwrap().held_bytes, 0);
    assert_eq!(ctx.device_stats(1).unwrap().cache_bytes, held1);
    // Proving again on device 1 reuses its cache; device 0 reallocates.
    let allocs1 = ctx.device_stats(1).unwrap().cache_allocations;
    prove_from_assignments(&ctx, &keys.key, &cs, &blinding(2), &Placement::AUTO).unwrap();
    assert_eq!(ctx.device_stats(1).unwrap().cache_allocations, allocs1);
    assert!(ctx.device_stats(0).unwrap().cache_bytes > 0);
}

#[test]
fn prepare_allocates_ahead_of_the_first_proof() {
    let keys = builtin_keys(Kind::Bits, 8);
    let ctx = Context::host(2).unwrap();
    keys.key.prepare(&ctx, 1).unwrap();
    let s = ctx.device_stats(1).unwrap();
    assert_eq!(s.cache_allocations, 1);
    assert!(s.cache_bytes > 0);
    assert_eq!(
        ctx.device_stats(0).unwrap().cache_allocations,
        0,
        "only the named device"
    );
    let cs = circuits(2);
    prove_from_assignments(&ctx, &keys.key, &cs, &blinding(2), &Placement::on(1)).unwrap();
    assert_eq!(
        ctx.device_stats(1).unwrap().cache_allocations,
        1,
        "the proof reused the cache"
    );
    let err = keys
        .key
        .prepare(&ctx, 2)
        .expect_err("device 2 does not exist");
    assert_eq!(err.code(), Some(ErrorCode::DeviceIndex), "{err}");
}
