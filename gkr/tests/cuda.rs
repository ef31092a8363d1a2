//! The CUDA backend's GKR kernels on a real GPU against the host backend:
//! field batches, sumcheck rounds and whole tower proofs byte for byte.
//!
//! Needs `--features cuda` and a GPU; without one each test says it skipped,
//! unless `CP_REQUIRE_GPU=1` makes that a failure. `CP_GKR_CUDA_LOG` (default
//! 16) is the tower size compared.
#![cfg(feature = "cuda")]

use cuda_prover_gkr::shards::shard_input;
use cuda_prover_gkr::Placement;
use cuda_prover_gkr::{
    bb4_batch, prove_tower, prove_tower_with, random_ext, to_bb4, verify_tower, Bb4, Bb4Form,
    Bb4Op, Context, ProveOptions, Tower, TowerKind, TowerOptions,
};
use cuda_prover_tests::gpu;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

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
            bb4_batch(&gpu, 0, op, &a[..n], bb).unwrap(),
            bb4_batch(&host, 0, op, &a[..n], bb).unwrap(),
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
            let (pg, _) = prove_tower(&gpu, &Placement::on(0), 0, &input).unwrap();
            let (ph, _) = prove_tower(&host, &Placement::on(0), 0, &input).unwrap();
            assert_eq!(pg.to_bytes(), ph.to_bytes(), "{kind:?} 2^{lg}");
            verify_tower(&input, &pg).unwrap();
        }
    }
    // Trim frees the GPU tables.
    let input = shard_input(TowerKind::Product, 9, 0, 12);
    prove_tower(&gpu, &Placement::on(0), 0, &input).unwrap();
    gpu.trim(0).unwrap();
    assert_eq!(gpu.device_stats(0).unwrap().cache_bytes, 0);
}

#[test]
fn cuda_staged_uploads_in_any_piece_size_equal_host() {
    let Some(gpu) = gpu() else { return };
    let host = Context::host(1).unwrap();
    for kind in [TowerKind::Product, TowerKind::Fraction] {
        for (lg, chunks) in [
            (12u32, vec![1usize, 3, 1000, 4095, 0]),
            (20, vec![(1 << 19) + 1, 12_345, 0]),
        ] {
            let input = shard_input(kind, 2, 7, lg);
            let (ph, _) = prove_tower(&host, &Placement::on(0), 0, &input).unwrap();
            for chunk in chunks {
                let (pg, stats) = prove_tower_with(
                    &gpu,
                    &Placement::on(0),
                    0,
                    &input,
                    &ProveOptions {
                        chunk_elements: chunk,
                    },
                )
                .unwrap();
                assert_eq!(
                    pg.to_bytes(),
                    ph.to_bytes(),
                    "{kind:?} 2^{lg} chunk {chunk}"
                );
                assert!(stats.build_upload + stats.build_layers <= stats.build);
            }
        }
    }
}

#[test]
fn cuda_bad_words_are_named_as_on_the_host() {
    let Some(gpu) = gpu() else { return };
    let host = Context::host(1).unwrap();
    let n = 1usize << 14;
    let mut v: Vec<Bb4> = (0..n as u32).map(|i| [i, 1, 2, 3]).collect();
    v[9000][3] = 0x7800_0001;
    v[5000][1] = u32::MAX;
    for form in [Bb4Form::Canonical, Bb4Form::Montgomery] {
        for chunk in [0usize, 7, 4999] {
            let opts = TowerOptions {
                form,
                chunk_elements: chunk,
            };
            let refused = |ctx: &Context| {
                Tower::with_options(
                    ctx,
                    &Placement::on(0),
                    0,
                    TowerKind::Product,
                    &v,
                    None,
                    &opts,
                )
                .err()
            };
            let eg = refused(&gpu).expect("refused on the GPU");
            let eh = refused(&host).expect("refused on the host");
            assert_eq!(eg.message, eh.message, "{form:?} chunk {chunk}");
            assert!(eg.message.contains("values[5000]: coefficient 1"), "{eg}");
        }
    }
    // A good tower right after the refusals (the staging ring is reusable).
    let good: Vec<Bb4> = (0..n as u32).map(|i| [i % 1000 + 1, 0, 0, 0]).collect();
    let mut tg = Tower::new(&gpu, &Placement::on(0), 0, TowerKind::Product, &good, None).unwrap();
    let mut th = Tower::new(&host, &Placement::on(0), 0, TowerKind::Product, &good, None).unwrap();
    assert_eq!(tg.root().unwrap(), th.root().unwrap());
}
