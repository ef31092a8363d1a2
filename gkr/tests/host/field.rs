//! The core's BabyBear kernels (through the ABI, host backend) against
//! Plonky3's field, element by element.

use cuda_prover_gkr::Placement;
use cuda_prover_gkr::{bb4_batch, from_bb4, random_ext, to_bb4, Bb4, Bb4Op, Context, Ext};
use p3_field::{Field, PrimeCharacteristicRing};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

const P: u32 = 0x7800_0001;

fn samples(rng: &mut ChaCha8Rng, n: usize) -> Vec<Ext> {
    // Edge values first: 0, 1, -1, base elements, then random ones.
    let mut v = vec![
        Ext::ZERO,
        Ext::ONE,
        -Ext::ONE,
        from_bb4(&[P - 1, P - 1, P - 1, P - 1]),
        from_bb4(&[0, 0, 0, 1]),
        from_bb4(&[2, 0, 0, 0]),
    ];
    while v.len() < n {
        v.push(random_ext(rng));
    }
    v
}

#[test]
fn field_ops_match_plonky3() {
    let ctx = Context::host(1).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let a = samples(&mut rng, 2000);
    let mut b = samples(&mut rng, 2000);
    b.reverse();
    let ra: Vec<Bb4> = a.iter().map(to_bb4).collect();
    let rb: Vec<Bb4> = b.iter().map(to_bb4).collect();
    for (op, f) in [
        (Bb4Op::Add, (|x, y| x + y) as fn(Ext, Ext) -> Ext),
        (Bb4Op::Sub, |x, y| x - y),
        (Bb4Op::Mul, |x, y| x * y),
    ] {
        let got = bb4_batch(&ctx, 0, op, &ra, &rb).unwrap();
        for i in 0..a.len() {
            assert_eq!(
                got[i],
                to_bb4(&f(a[i], b[i])),
                "{op:?} at {i}: {:?} {:?}",
                a[i],
                b[i]
            );
        }
    }
    let inv = bb4_batch(&ctx, 0, Bb4Op::Inv, &ra[..200], &[]).unwrap();
    for i in 0..200 {
        let want = a[i].try_inverse().unwrap_or(Ext::ZERO);
        assert_eq!(inv[i], to_bb4(&want), "inverse at {i}");
    }
}

#[test]
fn non_canonical_input_is_refused() {
    let ctx = Context::host(1).unwrap();
    let e = bb4_batch(&ctx, 0, Bb4Op::Add, &[[P, 0, 0, 0]], &[[0; 4]]).unwrap_err();
    assert!(e.message.contains("not below p"), "{e}");
}

#[test]
fn a_bad_value_in_a_large_input_is_named_by_index() {
    // Large inputs are converted on several threads; the error still names
    // the first bad index.
    let ctx = Context::host(1).unwrap();
    let mut v: Vec<Bb4> = (0..1u32 << 17).map(|i| [i, 0, 0, 0]).collect();
    v[100_000][2] = P + 5;
    v[120_000][0] = P;
    let e = cuda_prover_gkr::Tower::new(
        &ctx,
        &Placement::on(0),
        0,
        cuda_prover_gkr::TowerKind::Product,
        &v,
        None,
    )
    .err()
    .expect("a non-canonical value is refused");
    assert!(
        e.to_string().contains("values[100000]: coefficient 2"),
        "{e}"
    );
}
