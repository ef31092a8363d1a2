//! Tower proofs on the host backend: honest proofs verify (product and
//! fraction trees), serialization round-trips, and the verifier rejects a
//! wrong claim, a tampered round polynomial, tampered final values, and a
//! proof for other inputs.

use cuda_prover_gkr::shards::shard_input;
use cuda_prover_gkr::Placement;
use cuda_prover_gkr::{
    prove_tower, verify_tower, Context, Ext, GkrError, TowerInput, TowerKind, TowerProof,
};
use p3_field::{Field, PrimeCharacteristicRing};

fn prove(ctx: &Context, input: &TowerInput) -> TowerProof {
    prove_tower(ctx, &Placement::on(0), 0, input).unwrap().0
}

fn rejected(r: Result<Vec<Ext>, GkrError>) -> String {
    match r {
        Err(GkrError::Rejected(m)) => m,
        other => panic!("expected a rejection, got {other:?}"),
    }
}

#[test]
fn product_tower_verifies_and_root_is_the_product() {
    let ctx = Context::host(1).unwrap();
    for log in [1, 2, 5, 10] {
        let input = shard_input(TowerKind::Product, 3, log as usize, log);
        let proof = prove(&ctx, &input);
        let root = verify_tower(&input, &proof).unwrap();
        let TowerInput::Product(v) = &input else {
            unreachable!()
        };
        assert_eq!(root, vec![v.iter().copied().product::<Ext>()], "2^{log}");
        let back = TowerProof::from_bytes(&proof.to_bytes()).unwrap();
        assert_eq!(back, proof);
    }
}

#[test]
fn fraction_tower_verifies_and_root_is_the_sum() {
    let ctx = Context::host(1).unwrap();
    for log in [1, 3, 9] {
        let input = shard_input(TowerKind::Fraction, 4, 0, log);
        let proof = prove(&ctx, &input);
        let root = verify_tower(&input, &proof).unwrap();
        let TowerInput::Fraction {
            numerators,
            denominators,
        } = &input
        else {
            unreachable!()
        };
        let sum: Ext = numerators
            .iter()
            .zip(denominators)
            .map(|(p, q)| *p * q.inverse())
            .sum();
        assert_eq!(root[0] * root[1].inverse(), sum, "2^{log}");
    }
}

#[test]
fn rejections() {
    let ctx = Context::host(1).unwrap();
    for kind in [TowerKind::Product, TowerKind::Fraction] {
        let input = shard_input(kind, 5, 1, 8);
        let proof = prove(&ctx, &input);
        verify_tower(&input, &proof).unwrap();

        // A wrong claim (root).
        let mut p = proof.clone();
        p.root[0] += Ext::ONE;
        rejected(verify_tower(&input, &p));

        // A tampered round polynomial: one value, and a consistent shift
        // (g(0) + 1, g(1) - 1 keeps the sum but moves the polynomial).
        let mut p = proof.clone();
        p.layers[5].rounds[2][3] += Ext::ONE;
        rejected(verify_tower(&input, &p));
        let mut p = proof.clone();
        p.layers[5].rounds[2][0] += Ext::ONE;
        p.layers[5].rounds[2][1] -= Ext::ONE;
        rejected(verify_tower(&input, &p));

        // Tampered final values.
        let mut p = proof.clone();
        p.layers[7].values[0] += Ext::ONE;
        rejected(verify_tower(&input, &p));

        // The proof for other inputs.
        let other = shard_input(kind, 6, 1, 8);
        let m = rejected(verify_tower(&other, &proof));
        assert!(m.contains("other inputs") || m.contains("layer"), "{m}");

        // Bytes: truncated, bad magic.
        let b = proof.to_bytes();
        assert!(TowerProof::from_bytes(&b[..b.len() - 1]).is_err());
        let mut bad = b.clone();
        bad[0] ^= 1;
        assert!(TowerProof::from_bytes(&bad).is_err());
    }
    // A proof of one kind for the other kind's input.
    let prod = shard_input(TowerKind::Product, 5, 1, 4);
    let frac = shard_input(TowerKind::Fraction, 5, 1, 4);
    let proof = prove(&ctx, &prod);
    rejected(verify_tower(&frac, &proof));
}

#[test]
fn each_layer_is_reduced_once_and_inputs_are_checked() {
    let ctx = Context::host(1).unwrap();
    let bad = TowerInput::Product(vec![Ext::ONE; 3]);
    assert!(matches!(
        prove_tower(&ctx, &Placement::on(0), 0, &bad),
        Err(GkrError::Invalid(_))
    ));
    let bad = TowerInput::Fraction {
        numerators: vec![Ext::ONE; 4],
        denominators: vec![Ext::ONE; 2],
    };
    assert!(matches!(
        prove_tower(&ctx, &Placement::on(0), 0, &bad),
        Err(GkrError::Invalid(_))
    ));
    // A device outside the context is the core's error, naming it.
    let input = shard_input(TowerKind::Product, 1, 0, 3);
    let e = prove_tower(&ctx, &Placement::on(3), 0, &input).unwrap_err();
    assert!(e.to_string().contains("gpu_index 3"), "{e}");
}
