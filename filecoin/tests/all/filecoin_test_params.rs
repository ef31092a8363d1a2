//! TEST parameters from the shape generator: the cached keys are its own,
//! the same seed gives the same bytes on any thread count, and the
//! project's full key checks (canonical, on curve, in the subgroup) accept
//! the file. That the PoRep key proves and verifies is checked by
//! `filecoin_c2.rs` (our proof passes verify_seal and equals bellperson's
//! CPU prover's bytes for the same r, s), the PoSt and SnapDeals keys by
//! their own tests.

use crate::common;

use cuda_prover_filecoin::test_params::{
    parameter_files, write_test_parameters, TestCircuit, TestMarker,
};
use cuda_prover_filecoin::SectorSize;
use cuda_prover_pipeline::{KeyCheck, ProvingKey};
use sha2::{Digest, Sha256};

use common::test_params;

const WINNING: TestCircuit = TestCircuit::WinningPost(SectorSize::KIB_2);

#[test]
fn cached_keys_come_from_the_shape_generator_and_say_test() {
    let circuits = [TestCircuit::Porep(SectorSize::KIB_2), WINNING];
    test_params(&circuits);
    for c in circuits {
        let files = parameter_files(c).unwrap();
        let m = TestMarker::read(&files.params).expect("a .test marker beside the params");
        assert!(m.test_parameters);
        assert_eq!(m.generator, "cuda-prover", "{c:?}");
        assert_eq!(m.circuit, c.label());
        assert!(files.vk.exists() && files.meta.exists());
        let meta: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&files.meta).unwrap()).unwrap();
        assert_eq!(meta["sector_size"], 2048);
    }
}

fn digest_with_threads(threads: usize) -> [u8; 32] {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap();
    let mut bytes = Vec::new();
    pool.install(|| write_test_parameters(WINNING, &mut bytes))
        .expect("generating");
    Sha256::digest(&bytes).into()
}

#[test]
fn same_seed_same_bytes_on_any_thread_count() {
    test_params(&[WINNING]);
    let files = parameter_files(WINNING).unwrap();
    let cached: [u8; 32] = Sha256::digest(std::fs::read(&files.params).unwrap()).into();
    assert_eq!(digest_with_threads(1), cached);
    assert_eq!(digest_with_threads(3), cached);
}

#[test]
fn full_key_checks_accept_the_file() {
    test_params(&[WINNING]);
    let files = parameter_files(WINNING).unwrap();
    let (key, _) = ProvingKey::load_file(&files.params, KeyCheck::FullNoDigest)
        .expect("canonical points on the curve and in the subgroup");
    let vk_file = std::fs::read(&files.vk).unwrap();
    let mut vk = Vec::new();
    key.vk().write(&mut vk).unwrap();
    assert_eq!(vk, vk_file, "the .vk file is the key's verifying key");
}
