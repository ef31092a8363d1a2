//! The host's parallel passes give what a sequential computation gives:
//! the verifier's evaluation of the input multilinear (chunked over
//! threads) against the sum over eq, and the seeded shard inputs (drawn by
//! chunk on every core) against one thread and against their definition,
//! and the collector's claims on them (drawn and folded chunk by chunk)
//! against the evaluation of the whole input.

use cuda_prover_gkr::shards::{shard_input, shard_input_claims, INPUT_CHUNK};
use cuda_prover_gkr::{eq_eval, mle_eval, random_ext, Ext, TowerInput, TowerKind};
use p3_field::PrimeCharacteristicRing;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

// sum_i values[i] * eq(point, bits of i, top bit first).
fn mle_by_eq(values: &[Ext], point: &[Ext]) -> Ext {
    let m = point.len();
    values
        .iter()
        .enumerate()
        .map(|(i, &v)| {
            let bits: Vec<Ext> = (0..m)
                .map(|k| {
                    if (i >> (m - 1 - k)) & 1 == 1 {
                        Ext::ONE
                    } else {
                        Ext::ZERO
                    }
                })
                .collect();
            v * eq_eval(point, &bits)
        })
        .sum()
}

#[test]
fn chunked_mle_eval_equals_the_sum_over_eq() {
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    // Below, at and above the chunk size (2^14) of the parallel pass.
    for m in [0usize, 3, 14, 15, 17] {
        let values: Vec<Ext> = (0..1usize << m).map(|_| random_ext(&mut rng)).collect();
        let point: Vec<Ext> = (0..m).map(|_| random_ext(&mut rng)).collect();
        assert_eq!(
            mle_eval(&values, &point),
            mle_by_eq(&values, &point),
            "2^{m}"
        );
    }
}

#[test]
fn shard_inputs_do_not_depend_on_the_thread_count() {
    let one = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    for kind in [TowerKind::Product, TowerKind::Fraction] {
        for log in [1u32, 14, 17] {
            let all = shard_input(kind, 9, 4, log);
            let single = one.install(|| shard_input(kind, 9, 4, log));
            assert_eq!(all, single, "{kind:?} 2^{log}");
            assert_eq!(all.len(), 1 << log);
            assert_ne!(all, shard_input(kind, 9, 5, log), "another shard");
        }
    }
}

#[test]
fn shard_inputs_follow_their_definition() {
    // Chunk c of the values is ChaCha8 stream c of the (seed, shard) key;
    // the denominators use streams 2^48 + c.
    let (seed, shard, log) = (9u64, 4usize, 16u32);
    let key = seed ^ (shard as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    let TowerInput::Fraction {
        numerators,
        denominators,
    } = shard_input(TowerKind::Fraction, seed, shard, log)
    else {
        unreachable!()
    };
    for c in [0usize, 3] {
        let mut rng = ChaCha8Rng::seed_from_u64(key);
        rng.set_stream(c as u64);
        let want: Vec<Ext> = (0..INPUT_CHUNK).map(|_| random_ext(&mut rng)).collect();
        assert_eq!(
            &numerators[c * INPUT_CHUNK..(c + 1) * INPUT_CHUNK],
            &want[..]
        );
        let mut rng = ChaCha8Rng::seed_from_u64(key);
        rng.set_stream((1u64 << 48) | c as u64);
        let first = cuda_prover_gkr::random_nonzero_ext(&mut rng);
        assert_eq!(denominators[c * INPUT_CHUNK], first);
    }
}

#[test]
fn drawn_claims_equal_the_mle_of_the_drawn_input() {
    // The collector's path: the seeded input's multilinear extensions,
    // drawn and folded chunk by chunk, against mle_eval of the whole input.
    let mut rng = ChaCha8Rng::seed_from_u64(6);
    for kind in [TowerKind::Product, TowerKind::Fraction] {
        for log in [1usize, 5, 14, 15, 17] {
            let point: Vec<Ext> = (0..log).map(|_| random_ext(&mut rng)).collect();
            let want = match shard_input(kind, 21, 3, log as u32) {
                TowerInput::Product(v) => vec![mle_eval(&v, &point)],
                TowerInput::Fraction {
                    numerators,
                    denominators,
                } => vec![
                    mle_eval(&numerators, &point),
                    mle_eval(&denominators, &point),
                ],
            };
            assert_eq!(
                shard_input_claims(kind, 21, 3, &point),
                want,
                "{kind:?} 2^{log}"
            );
            assert_ne!(
                shard_input_claims(kind, 21, 4, &point),
                want,
                "another shard"
            );
        }
    }
}
