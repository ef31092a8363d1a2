//! Bad input gives a clear error, never a crash or a panic across the FFI.

use cuda_prover_bellperson::circuits::Kind;
use cuda_prover_bellperson::Placement;
use cuda_prover_bellperson::{
    create_proof_batch, prove_from_assignments, synthesize, Blinding, Context, ErrorCode,
    ProvingKey,
};
use cuda_prover_tests::{builtin, builtin_keys, Broken};
use rand_chacha::ChaCha8Rng;
use rand_core::SeedableRng;

fn bl(n: usize) -> Vec<Blinding> {
    Blinding::random_vec(&mut ChaCha8Rng::seed_from_u64(5), n)
}

fn params_bytes() -> Vec<u8> {
    let keys = builtin_keys(Kind::Chain, 7);
    let mut v = Vec::new();
    keys.params.write(&mut v).unwrap();
    v
}

#[test]
fn truncated_params_are_rejected() {
    let full = params_bytes();
    for cut in [0, 10, 96 * 2 + 5, full.len() / 2, full.len() - 1] {
        let err = match ProvingKey::from_bytes(&full[..cut]) {
            Err(e) => e,
            Ok(_) => panic!("{cut} bytes of {} accepted", full.len()),
        };
        assert_eq!(
            err.code(),
            Some(ErrorCode::ParamsFormat),
            "cut at {cut}: {err}"
        );
    }
    // Trailing garbage is not silently ignored either.
    let mut longer = full.clone();
    longer.extend_from_slice(&[0u8; 7]);
    assert_eq!(
        ProvingKey::from_bytes(&longer).err().and_then(|e| e.code()),
        Some(ErrorCode::ParamsFormat)
    );
}

#[test]
fn corrupted_point_is_rejected() {
    let full = params_bytes();
    // Vk is 96*3 + 192*3 + 4 + ic; the h section starts after it. Flip a byte
    // in the middle of the file: it lands in some point's coordinates.
    let mut bad = full.clone();
    let mid = full.len() / 2;
    bad[mid] ^= 0x5a;
    let err = ProvingKey::from_bytes(&bad)
        .err()
        .expect("corrupt point accepted");
    assert_eq!(err.code(), Some(ErrorCode::ParamsFormat), "{err}");
    // A length field that claims far more points than the file holds.
    let mut huge = full.clone();
    let ic_len_at = 96 * 3 + 192 * 3;
    huge[ic_len_at..ic_len_at + 4].copy_from_slice(&u32::MAX.to_be_bytes());
    let err = ProvingKey::from_bytes(&huge)
        .err()
        .expect("huge length accepted");
    assert_eq!(err.code(), Some(ErrorCode::ParamsFormat), "{err}");
}

#[test]
fn missing_params_file_is_an_io_error() {
    let err = ProvingKey::from_file(std::path::Path::new("/nonexistent/cp.params"))
        .err()
        .unwrap();
    assert_eq!(err.code(), Some(ErrorCode::ParamsIo), "{err}");
    assert!(err.to_string().contains("/nonexistent/cp.params"));
}

#[test]
fn params_of_another_circuit_are_rejected() {
    let ctx = Context::host(1).unwrap();
    let chain7 = builtin_keys(Kind::Chain, 7);
    // Same domain, different shape.
    let bits = builtin(Kind::Bits, 7, 1);
    let err =
        create_proof_batch(&ctx, vec![bits], &chain7.key, &bl(1), &Placement::on(0)).unwrap_err();
    assert_eq!(err.code(), Some(ErrorCode::ShapeMismatch), "{err}");
    // Bigger circuit of the same kind.
    let chain8 = builtin(Kind::Chain, 8, 1);
    let err =
        create_proof_batch(&ctx, vec![chain8], &chain7.key, &bl(1), &Placement::on(0)).unwrap_err();
    assert_eq!(err.code(), Some(ErrorCode::ShapeMismatch), "{err}");
    assert_eq!(ctx.device_stats(0).unwrap().proofs, 0);
}

#[test]
fn unsatisfied_circuit_is_rejected() {
    let shape = Broken {
        steps: 60,
        bad_step: 60,
    };
    let keys = cuda_prover_tests::keys_for("broken-60", shape);
    let ctx = Context::host(1).unwrap();
    // The honest witness proves.
    let good = create_proof_batch(&ctx, vec![shape], &keys.key, &bl(1), &Placement::on(0)).unwrap();
    assert_eq!(good.len(), 1);
    let err = create_proof_batch(
        &ctx,
        vec![Broken {
            steps: 60,
            bad_step: 17,
        }],
        &keys.key,
        &bl(1),
        &Placement::on(0),
    )
    .unwrap_err();
    assert_eq!(err.code(), Some(ErrorCode::Unsatisfied), "{err}");
    assert!(
        err.to_string().contains("17"),
        "names the constraint: {err}"
    );
}

#[test]
fn mismatched_lengths_are_rejected_before_the_core() {
    let keys = builtin_keys(Kind::Chain, 7);
    let ctx = Context::host(1).unwrap();
    let mut s = synthesize(builtin(Kind::Chain, 7, 1)).unwrap();
    s.b.pop();
    let err = prove_from_assignments(&ctx, &keys.key, &[s], &bl(1), &Placement::on(0)).unwrap_err();
    assert_eq!(err.code(), Some(ErrorCode::InvalidArgument), "{err}");
    let s = synthesize(builtin(Kind::Chain, 7, 1)).unwrap();
    let err = prove_from_assignments(&ctx, &keys.key, &[s], &bl(2), &Placement::on(0)).unwrap_err();
    assert!(err.to_string().contains("blinding"), "{err}");
}

#[test]
fn memory_limit_gives_a_clean_out_of_memory_error() {
    let keys = builtin_keys(Kind::Chain, 10);
    let ctx = Context::host(2).unwrap();
    let s = synthesize(builtin(Kind::Chain, 10, 1)).unwrap();
    ctx.set_memory_limit(1, Some(1024)).unwrap();
    assert!(ctx.device_info(1).unwrap().free_bytes <= 1024);
    let err = prove_from_assignments(
        &ctx,
        &keys.key,
        std::slice::from_ref(&s),
        &bl(1),
        &Placement::on(1),
    )
    .unwrap_err();
    assert_eq!(err.code(), Some(ErrorCode::OutOfMemory), "{err}");
    assert!(err.to_string().contains("device 1"), "{err}");
    // Device 0 is not limited.
    prove_from_assignments(
        &ctx,
        &keys.key,
        std::slice::from_ref(&s),
        &bl(1),
        &Placement::on(0),
    )
    .unwrap();
    ctx.set_memory_limit(1, None).unwrap();
    prove_from_assignments(&ctx, &keys.key, &[s], &bl(1), &Placement::on(1)).unwrap();
}
