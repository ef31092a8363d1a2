//! The generator against bellperson's own: the same toxic waste and
//! generators give the same file, byte for byte, and the key proves and
//! verifies with bellperson's CPU prover and verifier.

use super::*;
use crate::circuits::{BuiltIn, Kind};
use crate::Placement;
use bellperson::groth16::{
    create_random_proof, generate_parameters, prepare_verifying_key, verify_proof, Parameters,
};
use group::Group;
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;

fn ours(circuit: BuiltIn, seed: [u8; 32]) -> (Vec<u8>, VerifyingKey<Bls12>, TestKeyReport) {
    let shape = ShapeData::record(circuit).unwrap();
    let mut bytes = Vec::new();
    let (vk, report) = write_test_key(&shape, seed, &mut bytes, &mut |_| {}).unwrap();
    (bytes, vk, report)
}

fn bellpersons(circuit: BuiltIn, seed: [u8; 32]) -> Vec<u8> {
    let shape = ShapeData::record(circuit).unwrap();
    let domain = Domain::for_rows(shape.num_constraints()).unwrap();
    let t = Toxic::from_seed(seed, &domain);
    let p = generate_parameters::<Bls12, _>(
        circuit,
        G1Projective::generator(),
        G2Projective::generator(),
        t.alpha,
        t.beta,
        t.gamma,
        t.delta,
        t.tau,
    )
    .unwrap();
    let mut bytes = Vec::new();
    p.write(&mut bytes).unwrap();
    bytes
}

#[test]
fn same_bytes_as_bellpersons_generator() {
    for (kind, seed) in [(Kind::Chain, [1u8; 32]), (Kind::Bits, [2u8; 32])] {
        let c = BuiltIn::new(kind, 9, 4).unwrap();
        let (mine, _, report) = ours(c, seed);
        assert_eq!(report.bytes as usize, mine.len());
        assert!(mine == bellpersons(c, seed), "{kind:?}: files differ");
    }
}

#[test]
fn same_seed_same_key_other_seed_other_key() {
    let c = BuiltIn::new(Kind::Bits, 8, 1).unwrap();
    let (a, _, _) = ours(c, [9; 32]);
    let (b, _, _) = ours(c, [9; 32]);
    let (d, _, _) = ours(c, [8; 32]);
    assert_eq!(a, b);
    assert_ne!(a, d);
}

#[test]
fn proves_and_verifies_with_bellperson() {
    let c = BuiltIn::new(Kind::Chain, 8, 3).unwrap();
    let (bytes, vk, _) = ours(c, [5; 32]);
    let params = Parameters::<Bls12>::read(&bytes[..], true).unwrap();
    assert_eq!(params.vk, vk);
    let mut rng = ChaCha20Rng::seed_from_u64(11);
    let proof = create_random_proof(c, &params, &mut rng).unwrap();
    let pvk = prepare_verifying_key(&vk);
    assert!(verify_proof(&pvk, &proof, &[c.public_input()]).unwrap());
    // A wrong input is refused: the key is not trivially permissive.
    assert!(!verify_proof(&pvk, &proof, &[c.public_input() + Scalar::ONE]).unwrap());
}

#[test]
fn a_shape_with_a_free_variable_is_refused() {
    let mut shape = ShapeData::record(BuiltIn::new(Kind::Chain, 7, 0).unwrap()).unwrap();
    shape.num_aux += 1;
    let e = write_test_key(&shape, [0; 32], &mut Vec::new(), &mut |_| {}).unwrap_err();
    assert!(e.to_string().contains("in no constraint"), "{e}");
}

/// A scratch directory of this test process, removed when dropped.
struct Scratch(std::path::PathBuf);

impl Scratch {
    fn new(name: &str) -> Self {
        let p = std::env::temp_dir().join(format!("cp-setup-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        Self(p)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn made_on_a_device_same_bytes_and_a_record_that_loads() {
    // The host backend runs the same builder ABI the CUDA one does; a chunk
    // smaller than a section would need a bigger circuit, so the chunking
    // is covered by the core's self-test.
    let ctx = cuda_prover_device::Context::host(2).unwrap();
    let c = BuiltIn::new(Kind::Chain, 9, 4).unwrap();
    let shape = ShapeData::record(c).unwrap();
    let (expected, vk, _) = ours(c, [3; 32]);
    let dir = Scratch::new("made-on");
    let path = dir.0.join("k.params");
    let mut lines = Vec::new();
    let (key, report) = make_test_key_on(&shape, [3; 32], &ctx, 1, Some(&path), &mut |l| {
        lines.push(l.to_string())
    })
    .unwrap();
    assert_eq!(*key.vk(), vk);
    assert_eq!(report.bytes as usize, expected.len());
    assert!(std::fs::read(&path).unwrap() == expected, "files differ");
    assert!(lines.iter().any(|l| l.starts_with("b_g2: ")), "{lines:?}");
    // The record written beside it vouches for exactly this file.
    let (loaded, rep) = ProvingKey::load_file(&path, crate::KeyCheck::Full).unwrap();
    assert_eq!(rep.subgroup, crate::SubgroupCheck::DigestMatched);
    assert_eq!(loaded.fingerprint(), key.fingerprint());
    // In memory only: the same key, no file.
    let (mem, rep) = make_test_key_on(&shape, [3; 32], &ctx, 0, None, &mut |_| {}).unwrap();
    assert_eq!(mem.fingerprint(), key.fingerprint());
    assert_eq!(rep.bytes, 0);
    assert_eq!(mem.shape().unwrap(), key.shape().unwrap());
}

#[test]
fn a_key_made_on_a_device_proves_and_verifies() {
    let ctx = cuda_prover_device::Context::host(1).unwrap();
    let c = BuiltIn::new(Kind::Bits, 8, 2).unwrap();
    let shape = ShapeData::record(c).unwrap();
    let (key, _) = make_test_key_on(&shape, [6; 32], &ctx, 0, None, &mut |_| {}).unwrap();
    let mut rng = ChaCha20Rng::seed_from_u64(4);
    let out =
        crate::create_random_proof_batch(&ctx, vec![c], &key, &mut rng, &Placement::AUTO).unwrap();
    let proof = &out[0].proof;
    assert!(key.verify(proof, &[c.public_input()]).unwrap());
    assert!(!key
        .verify(proof, &[c.public_input() + Scalar::ONE])
        .unwrap());
}
