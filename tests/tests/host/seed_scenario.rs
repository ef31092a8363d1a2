//! The scenario that started the project: two workers, each with its own
//! assigned device, proving partitions of one circuit at the same time.
//! Every partition must be proved on its worker's device (the old bug sent
//! everything to device 0). Runs on two simulated devices; with the `cuda`
//! feature and two GPUs it runs on the GPUs too.

use cuda_prover_bellperson::circuits::Kind;
use cuda_prover_bellperson::Placement;
use cuda_prover_bellperson::{Backend, Context, ContextOptions, DeviceMutex};
use cuda_prover_pipeline::{prove_overlapped, Blinding};
use cuda_prover_tests::{builtin, builtin_keys};
use rand_chacha::ChaCha8Rng;
use rand_core::SeedableRng;

fn two_workers(ctx: &Context, kind: Kind, log: u32, keys: &cuda_prover_tests::Keys) {
    let mutexes = [DeviceMutex::new().unwrap(), DeviceMutex::new().unwrap()];
    std::thread::scope(|s| {
        for ordinal in 0..2u32 {
            let mutex = &mutexes[ordinal as usize];
            s.spawn(move || {
                ctx.select_gpu(Some(ordinal)).unwrap();
                // Worker w owns partitions w, w+2, ... of the 16.
                let mine: Vec<u64> = (0..16).filter(|k| k % 2 == ordinal as u64).collect();
                let circuits: Vec<_> = mine.iter().map(|&k| builtin(kind, log, k)).collect();
                let out = prove_overlapped(
                    ctx,
                    &keys.key,
                    None,
                    circuits.clone(),
                    |i| Blinding::random(&mut ChaCha8Rng::seed_from_u64(mine[i])),
                    &Placement::new(ordinal, Some(mutex)),
                    |_| {},
                )
                .unwrap();
                for (p, c) in out.iter().zip(&circuits) {
                    assert_eq!(
                        p.output.device, ordinal,
                        "partition proved on its worker's device"
                    );
                    assert!(keys
                        .key
                        .verify(&p.output.proof, &[c.public_input()])
                        .unwrap());
                }
            });
        }
    });
    assert_eq!(ctx.device_stats(0).unwrap().proofs, 8);
    assert_eq!(ctx.device_stats(1).unwrap().proofs, 8);
}

fn caches_stay_per_device(ctx: &Context, kind: Kind, log: u32, keys: &cuda_prover_tests::Keys) {
    use cuda_prover_bellperson::{prove_from_assignments, synthesize};
    let s: Vec<_> = (0..2)
        .map(|k| synthesize(builtin(kind, log, k)).unwrap())
        .collect();
    let bl = Blinding::random_vec(&mut ChaCha8Rng::seed_from_u64(9), 2);
    // gpu_index = 1: everything on device 1, device 0 untouched.
    let before0 = ctx.device_stats(0).unwrap();
    let o = prove_from_assignments(ctx, &keys.key, &s, &bl, &Placement::on(1)).unwrap();
    assert!(o.iter().all(|p| p.device == 1));
    let after0 = ctx.device_stats(0).unwrap();
    assert_eq!(
        (after0.proofs, after0.cache_bytes),
        (before0.proofs, before0.cache_bytes)
    );
    // gpu_index = -1 with two circuits: one on each device.
    let o = prove_from_assignments(ctx, &keys.key, &s, &bl, &Placement::AUTO).unwrap();
    assert_eq!(o.iter().map(|p| p.device).collect::<Vec<_>>(), vec![0, 1]);
    // Alternating devices never reallocates a cache.
    let allocs: Vec<u64> = (0..2)
        .map(|d| ctx.device_stats(d).unwrap().cache_allocations)
        .collect();
    for i in 0..6 {
        prove_from_assignments(ctx, &keys.key, &s[..1], &bl[..1], &Placement::on(i % 2)).unwrap();
    }
    for d in 0..2u32 {
        assert_eq!(
            ctx.device_stats(d).unwrap().cache_allocations,
            allocs[d as usize],
            "device {d}"
        );
    }
    // Trimming device 0 leaves device 1's cache alone.
    let held1 = ctx.device_stats(1).unwrap().cache_bytes;
    assert!(ctx.trim(0).unwrap() > 0);
    assert_eq!(ctx.device_stats(0).unwrap().cache_bytes, 0);
    assert_eq!(ctx.device_stats(1).unwrap().cache_bytes, held1);
}

#[test]
fn two_workers_on_two_simulated_devices() {
    let keys = builtin_keys(Kind::Bits, 9);
    let ctx = Context::new(ContextOptions {
        backend: Backend::Host,
        host_devices: 2,
        host_threads: 1,
        devices: Vec::new(),
    })
    .unwrap();
    two_workers(&ctx, Kind::Bits, 9, &keys);
    caches_stay_per_device(&ctx, Kind::Bits, 9, &keys);
}

#[cfg(feature = "cuda")]
#[test]
fn two_workers_on_two_gpus() {
    let ctx = match Context::new(ContextOptions {
        backend: Backend::Cuda,
        host_devices: 0,
        host_threads: 0,
        devices: Vec::new(),
    }) {
        Ok(c) if c.device_count().unwrap() >= 2 => c,
        Ok(c) => {
            eprintln!(
                "SKIPPED: needs two GPUs, found {}",
                c.device_count().unwrap()
            );
            return;
        }
        Err(e) => {
            eprintln!("SKIPPED: no CUDA device ({e})");
            return;
        }
    };
    let log = std::env::var("CP_SEED_LOG")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(16);
    for kind in [Kind::Chain, Kind::Bits] {
        let keys = cuda_prover_tests::cached_builtin_keys(kind, log);
        let ctx = Context::new(ContextOptions {
            backend: Backend::Cuda,
            host_devices: 0,
            host_threads: 0,
            devices: Vec::new(),
        })
        .unwrap();
        two_workers(&ctx, kind, log, &keys);
        caches_stay_per_device(&ctx, kind, log, &keys);
    }
    drop(ctx);
}
