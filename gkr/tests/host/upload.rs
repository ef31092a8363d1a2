//! How a tower's input reaches the core (host backend): Plonky3's elements
//! are Montgomery words and pass as they are; canonical and Montgomery
//! inputs build the same tower; the piece size of the copy (dividing the
//! input or not) never changes a proof; a bad word is named by its first
//! index whatever the pieces; the build reports its upload and layer times.

use cuda_prover_gkr::shards::shard_input;
use cuda_prover_gkr::Placement;
use cuda_prover_gkr::{
    montgomery_words, prove_tower, prove_tower_with, random_ext, to_bb4, verify_tower, Bb4,
    Bb4Form, Context, ProveOptions, Tower, TowerInput, TowerKind, TowerOptions,
};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

const P: u32 = 0x7800_0001;

#[test]
fn ext_elements_are_montgomery_words() {
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    let v: Vec<_> = (0..1000).map(|_| random_ext(&mut rng)).collect();
    for (x, w) in v.iter().zip(montgomery_words(&v)) {
        let c = to_bb4(x);
        for i in 0..4 {
            assert_eq!(w[i] as u64, ((c[i] as u64) << 32) % P as u64, "{c:?} {w:?}");
        }
    }
}

#[test]
fn canonical_and_montgomery_inputs_build_the_same_tower() {
    let ctx = Context::host(1).unwrap();
    for kind in [TowerKind::Product, TowerKind::Fraction] {
        let input = shard_input(kind, 8, 2, 9);
        let (a, b) = match &input {
            TowerInput::Product(v) => (v, None),
            TowerInput::Fraction {
                numerators,
                denominators,
            } => (numerators, Some(denominators)),
        };
        let ca: Vec<Bb4> = a.iter().map(to_bb4).collect();
        let cb: Option<Vec<Bb4>> = b.map(|b| b.iter().map(to_bb4).collect());
        let mut canonical =
            Tower::new(&ctx, &Placement::on(0), 0, kind, &ca, cb.as_deref()).unwrap();
        for chunk in [0usize, 1, 5, 1 << 20] {
            let opts = TowerOptions {
                form: Bb4Form::Montgomery,
                chunk_elements: chunk,
            };
            let mut mont = Tower::with_options(
                &ctx,
                &Placement::on(0),
                0,
                kind,
                montgomery_words(a),
                b.map(|b| montgomery_words(b)),
                &opts,
            )
            .unwrap();
            assert_eq!(mont.root().unwrap(), canonical.root().unwrap(), "{kind:?}");
            // Canonical input in odd pieces too.
            let opts = TowerOptions {
                form: Bb4Form::Canonical,
                chunk_elements: chunk,
            };
            let mut again =
                Tower::with_options(&ctx, &Placement::on(0), 0, kind, &ca, cb.as_deref(), &opts)
                    .unwrap();
            assert_eq!(again.root().unwrap(), canonical.root().unwrap(), "{kind:?}");
        }
    }
}

#[test]
fn piece_sizes_that_do_not_divide_the_input_give_the_same_proof() {
    let ctx = Context::host(1).unwrap();
    for kind in [TowerKind::Product, TowerKind::Fraction] {
        let input = shard_input(kind, 3, 1, 11);
        let (reference, _) = prove_tower(&ctx, &Placement::on(0), 0, &input).unwrap();
        verify_tower(&input, &reference).unwrap();
        for chunk in [1usize, 3, 7, 1000, 2047, 2049] {
            let (p, stats) = prove_tower_with(
                &ctx,
                &Placement::on(0),
                0,
                &input,
                &ProveOptions {
                    chunk_elements: chunk,
                },
            )
            .unwrap();
            assert_eq!(p.to_bytes(), reference.to_bytes(), "{kind:?} chunk {chunk}");
            assert!(stats.build_upload + stats.build_layers <= stats.build);
        }
    }
}

#[test]
fn a_bad_word_is_named_by_its_first_index_in_any_piece_size() {
    let ctx = Context::host(4).unwrap();
    let n = 1usize << 12;
    let good: Vec<Bb4> = (0..n as u32).map(|i| [i, 1, 2, 3]).collect();
    for form in [Bb4Form::Canonical, Bb4Form::Montgomery] {
        for chunk in [0usize, 1, 3, 100, 4095] {
            let mut v = good.clone();
            v[2500][3] = P;
            v[1234][1] = u32::MAX;
            v[3000][0] = P + 1;
            let opts = TowerOptions {
                form,
                chunk_elements: chunk,
            };
            let e = Tower::with_options(
                &ctx,
                &Placement::on(1),
                0,
                TowerKind::Product,
                &v,
                None,
                &opts,
            )
            .err()
            .expect("a word >= p is refused");
            assert!(
                e.message.contains("values[1234]: coefficient 1"),
                "{form:?} chunk {chunk}: {e}"
            );
            // The denominators of a fraction tree are named as such.
            let e = Tower::with_options(
                &ctx,
                &Placement::on(1),
                0,
                TowerKind::Fraction,
                &good,
                Some(&v),
                &opts,
            )
            .err()
            .expect("a word >= p is refused");
            assert!(e.message.contains("denominators[1234]"), "{e}");
        }
    }
    // Nothing is left on the device after the refusals.
    assert_eq!(ctx.device_stats(1).unwrap().cache_bytes, 0);
}

#[test]
fn build_times_are_reported() {
    let ctx = Context::host(1).unwrap();
    let input = shard_input(TowerKind::Product, 1, 0, 16);
    let (_, stats) = prove_tower(&ctx, &Placement::on(0), 0, &input).unwrap();
    assert!(stats.build_upload > std::time::Duration::ZERO, "{stats:?}");
    assert!(stats.build_layers > std::time::Duration::ZERO, "{stats:?}");
}
