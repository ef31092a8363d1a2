//! The CUDA backend's GKR kernels on a real GPU against the host backend:
//! field batches, sumcheck rounds and whole tower proofs byte for byte.
//!
//! Needs `--features cuda` and a GPU; without one each test says it skipped,
//! unless `CP_REQUIRE_GPU=1` makes that a failure. `CP_GKR_CUDA_LOG` (default
//! 16) is the tower size compared.
#![cfg(feature = "cuda")]

use cuda_prover_gkr::shards::shard_input;
use cuda_prover_gkr::{
    prove_tower, random_ext, to_bb4, verify_tower, Bb4, Bb4Op, Context, TowerKind,
};
use cuda_prover_pipeline::{Backend, ContextOptions};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

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

#[test]
fn cuda_field_kernels_equal_host() {
    let Some(gpu) = gpu() else { return };
    let host = Context::host(1).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let a: Vec<Bb4> = (0..100_000)
        .map(|_| to_bb4(&random_ext(&mut rng)))
        .collect();
    let b: Vec<Bb4> = (0..100_000)
        .map(|_| to_bb4(&random_ext(&mut rng)))
        .collect();
    for op in [Bb4Op::Add, Bb4Op::Sub, Bb4Op::Mul, Bb4Op::Inv] {
        let n = if op == Bb4Op::Inv { 1000 } else { a.len() };
        let bb: &[Bb4] = if op == Bb4Op::Inv { &[] } else { &b[..n] };
        assert_eq!(
            gpu.bb4_batch(0, op, &a[..n], bb).unwrap(),
            host.bb4_batch(0, op, &a[..n], bb).unwrap(),
            "{op:?}"
        );
    }
}

#[test]
fn cuda_tower_proofs_equal_host_byte_for_byte() {
    let Some(gpu) = gpu() else { return };
    let host = Context::host(1).unwrap();
    let log: u32 = std::env::var("CP_GKR_CUDA_LOG")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(16);
    for kind in [TowerKind::Product, TowerKind::Fraction] {
        for lg in [1, 2, 7, 12, log] {
            let input = shard_input(kind, 9, lg as usize, lg);
            let (pg, _) = prove_tower(&gpu, 0, None, 0, &input).unwrap();
            let (ph, _) = prove_tower(&host, 0, None, 0, &input).unwrap();
            assert_eq!(pg.to_bytes(), ph.to_bytes(), "{kind:?} 2^{lg}");
            verify_tower(&input, &pg).unwrap();
        }
    }
    // Trim frees the GPU tables.
    let input = shard_input(TowerKind::Product, 9, 0, 12);
    prove_tower(&gpu, 0, None, 0, &input).unwrap();
    gpu.trim(0).unwrap();
    assert_eq!(gpu.device_stats(0).unwrap().cache_bytes, 0);
}
