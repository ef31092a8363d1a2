//! Proofs from the core verify with bellperson's verifier and equal
//! bellperson 0.27's native proofs byte for byte for the same r, s.

use blstrs::Scalar;
use cuda_prover_bellperson::circuits::Kind;
use cuda_prover_bellperson::Placement;
use cuda_prover_bellperson::{
    create_proof_batch as core_batch, prove_from_assignments, synthesize, Blinding, Context,
};
use cuda_prover_tests::{
    builtin, builtin_keys, keys_for, native_proofs, proof_bytes, COnly, MultiInput, Pattern, Values,
};
use rand_chacha::ChaCha8Rng;
use rand_core::SeedableRng;

fn blinding(n: usize, seed: u64) -> Vec<Blinding> {
    Blinding::random_vec(&mut ChaCha8Rng::seed_from_u64(seed), n)
}

fn check_builtin(kind: Kind, log: u32, batch: usize) {
    let keys = builtin_keys(kind, log);
    let ctx = Context::host(1).unwrap();
    let circuits: Vec<_> = (0..batch)
        .map(|i| builtin(kind, log, 100 + i as u64))
        .collect();
    let bl = blinding(batch, 7);
    let ours = core_batch(&ctx, circuits.clone(), &keys.key, &bl, &Placement::on(0)).unwrap();
    let theirs = native_proofs(circuits.clone(), &keys.params, &bl);
    assert_eq!(ours.len(), batch);
    for ((o, t), c) in ours.iter().zip(&theirs).zip(&circuits) {
        assert!(
            keys.key.verify(&o.proof, &[c.public_input()]).unwrap(),
            "{kind:?} 2^{log} verifies"
        );
        assert_eq!(
            proof_bytes(&o.proof),
            proof_bytes(t),
            "{kind:?} 2^{log}: same bytes as bellperson"
        );
        assert_eq!(o.device, 0);
    }
}

#[test]
fn chain_single_matches_bellperson() {
    check_builtin(Kind::Chain, 8, 1);
}

#[test]
fn chain_batch_matches_bellperson() {
    check_builtin(Kind::Chain, 10, 3);
}

#[test]
fn bits_single_matches_bellperson() {
    check_builtin(Kind::Bits, 9, 1);
}

#[test]
fn bits_batch_matches_bellperson() {
    check_builtin(Kind::Bits, 10, 3);
}

#[test]
fn several_public_inputs() {
    let shape = MultiInput { inputs: 5, seed: 0 };
    let keys = keys_for("multi-5", shape);
    let ctx = Context::host(1).unwrap();
    let circuits: Vec<_> = (0..2)
        .map(|s| MultiInput {
            inputs: 5,
            seed: s + 1,
        })
        .collect();
    let bl = blinding(2, 9);
    let ours = core_batch(&ctx, circuits.clone(), &keys.key, &bl, &Placement::on(0)).unwrap();
    let theirs = native_proofs(circuits.clone(), &keys.params, &bl);
    for ((o, t), c) in ours.iter().zip(&theirs).zip(&circuits) {
        assert!(keys.key.verify(&o.proof, &c.public_inputs()).unwrap());
        assert_eq!(proof_bytes(&o.proof), proof_bytes(t));
        // Wrong public inputs must not verify.
        let mut wrong = c.public_inputs();
        wrong[2] += Scalar::from(1u64);
        assert!(!keys.key.verify(&o.proof, &wrong).unwrap());
    }
}

#[test]
fn aux_used_only_in_c() {
    let shape = COnly { n: 40, seed: 0 };
    let keys = keys_for("conly-40", shape);
    let s = synthesize(COnly { n: 40, seed: 3 }).unwrap();
    // Half of the aux variables (the z_i) are in neither A nor B.
    assert_eq!(s.a_aux_density.count(), 0);
    assert_eq!(s.b_aux_density.count(), 40);
    let ctx = Context::host(1).unwrap();
    let c = COnly { n: 40, seed: 3 };
    let bl = blinding(1, 11);
    let ours = core_batch(&ctx, vec![c], &keys.key, &bl, &Placement::on(0)).unwrap();
    let theirs = native_proofs(vec![c], &keys.params, &bl);
    assert!(keys.key.verify(&ours[0].proof, &c.public_inputs()).unwrap());
    assert_eq!(proof_bytes(&ours[0].proof), proof_bytes(&theirs[0]));
}

#[test]
fn scalar_patterns_equal_bellperson() {
    // All-0, all-1 and mixed MSM scalars (the fixture the GPU test uses).
    let keys = keys_for(
        "pattern-97",
        Pattern {
            n: 97,
            values: Values::Mixed,
            seed: 0,
        },
    );
    let ctx = Context::host(1).unwrap();
    for values in [Values::Zeros, Values::Ones, Values::Mixed] {
        let c = Pattern {
            n: 97,
            values,
            seed: 5,
        };
        let bl = blinding(1, 13);
        let ours = core_batch(&ctx, vec![c], &keys.key, &bl, &Placement::on(0)).unwrap();
        let theirs = native_proofs(vec![c], &keys.params, &bl);
        assert!(keys.key.verify(&ours[0].proof, &c.public_inputs()).unwrap());
        assert_eq!(
            proof_bytes(&ours[0].proof),
            proof_bytes(&theirs[0]),
            "{values:?}"
        );
    }
}

#[test]
fn params_file_gives_the_same_proofs() {
    let keys = builtin_keys(Kind::Bits, 8);
    let mut file = Vec::new();
    keys.params.write(&mut file).unwrap();
    let dir = std::env::temp_dir().join(format!("cp-params-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("bits-8.params");
    std::fs::write(&path, &file).unwrap();
    let from_file = cuda_prover_bellperson::ProvingKey::from_file(&path).unwrap();
    assert_eq!(from_file.vk(), keys.key.vk());
    let ctx = Context::host(1).unwrap();
    let c = builtin(Kind::Bits, 8, 5);
    let s = synthesize(c).unwrap();
    let bl = blinding(1, 12);
    let a = prove_from_assignments(
        &ctx,
        &keys.key,
        std::slice::from_ref(&s),
        &bl,
        &Placement::on(0),
    )
    .unwrap();
    let b = prove_from_assignments(
        &ctx,
        &from_file,
        std::slice::from_ref(&s),
        &bl,
        &Placement::on(0),
    )
    .unwrap();
    assert_eq!(proof_bytes(&a[0].proof), proof_bytes(&b[0].proof));
    assert!(from_file.verify(&b[0].proof, &[c.public_input()]).unwrap());
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn random_blinding_differs_and_verifies() {
    let keys = builtin_keys(Kind::Chain, 8);
    let ctx = Context::host(2).unwrap();
    let c = builtin(Kind::Chain, 8, 1);
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let p = cuda_prover_bellperson::create_random_proof_batch(
        &ctx,
        vec![c, c],
        &keys.key,
        &mut rng,
        &Placement::AUTO,
    )
    .unwrap();
    assert_ne!(proof_bytes(&p[0].proof), proof_bytes(&p[1].proof));
    for o in &p {
        assert!(keys.key.verify(&o.proof, &[c.public_input()]).unwrap());
    }
}
