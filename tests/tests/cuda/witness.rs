//! The witness path on the GPU: a, b, c evaluated on the device give the
//! proofs of the full path and of the host backend.

use cuda_prover_bellperson::circuits::Kind;
use cuda_prover_bellperson::Placement;
use cuda_prover_bellperson::{prove_from_assignments, synthesize, Blinding, Context, ErrorCode};
use cuda_prover_tests::{builtin, cached_builtin_keys, gpu, proof_bytes};
use rand_chacha::ChaCha8Rng;
use rand_core::SeedableRng;

use crate::common::{max_log, min_log};

/// The witness path on the GPU: a, b, c evaluated on the device give the
/// proofs of the full path and of the host backend, byte for byte; an
/// unsatisfied witness is caught on the device with its row; trim frees the
/// resident shape.
#[test]
fn cuda_witness_path_equals_full_path() {
    use cuda_prover_bellperson::{prove_from_witnesses, synthesize_witness, Shape, ShapeData};
    let Some(ctx) = gpu() else { return };
    let host = Context::host(1).unwrap();
    for kind in [Kind::Chain, Kind::Bits] {
        for log in (min_log()..=max_log()).step_by(2) {
            let keys = cached_builtin_keys(kind, log);
            let shape = Shape::new(&ShapeData::record(builtin(kind, log, 0)).unwrap()).unwrap();
            let circuits: Vec<_> = (0..3).map(|i| builtin(kind, log, 700 + i)).collect();
            let hint = keys.key.size_hint().unwrap();
            let synth: Vec<_> = circuits.iter().map(|c| synthesize(*c).unwrap()).collect();
            let wit: Vec<_> = circuits
                .iter()
                .map(|c| synthesize_witness(*c, hint).unwrap())
                .collect();
            let bl = Blinding::random_vec(&mut ChaCha8Rng::seed_from_u64(99), 3);
            let full =
                prove_from_assignments(&ctx, &keys.key, &synth, &bl, &Placement::on(0)).unwrap();
            let t = std::time::Instant::now();
            let w = prove_from_witnesses(&ctx, &keys.key, &shape, &wit, &bl, &Placement::on(0))
                .unwrap();
            let w_s = t.elapsed().as_secs_f64();
            let h = prove_from_witnesses(
                &host,
                &keys.key,
                &shape,
                &wit[..1],
                &bl[..1],
                &Placement::on(0),
            )
            .unwrap();
            for k in 0..3 {
                assert_eq!(
                    proof_bytes(&full[k].proof),
                    proof_bytes(&w[k].proof),
                    "{kind:?} 2^{log} #{k}"
                );
                assert!(keys
                    .key
                    .verify(&w[k].proof, &[circuits[k].public_input()])
                    .unwrap());
            }
            assert_eq!(
                proof_bytes(&h[0].proof),
                proof_bytes(&w[0].proof),
                "host = cuda, {kind:?} 2^{log}"
            );
            println!(
                "witness path identical: {} 2^{log}: 3 proofs {w_s:.3} s, evaluation {:.2} ms, device {:.2} ms",
                kind.name(),
                w[1].timings.eval_ns as f64 / 1e6,
                w[1].timings.device_ns as f64 / 1e6
            );

            let mut bad = wit[0].clone();
            let n = bad.aux.len();
            bad.aux[n / 2] += blstrs::Scalar::from(1u64);
            let e =
                prove_from_witnesses(&ctx, &keys.key, &shape, &[bad], &bl[..1], &Placement::on(0))
                    .unwrap_err();
            assert_eq!(e.code(), Some(ErrorCode::Unsatisfied), "{e}");
            assert!(e.to_string().contains("constraint "), "{e}");
        }
    }
    let freed = ctx.trim(0).unwrap();
    assert!(freed > 0, "trim frees the working cache and the shape");
}
