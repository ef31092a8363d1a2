//! CUDA proofs equal the host backend's and bellperson's byte for byte, at
//! every size and for the MSMs' scalar patterns.

use cuda_prover_bellperson::circuits::Kind;
use cuda_prover_bellperson::Placement;
use cuda_prover_bellperson::{prove_from_assignments, synthesize, Blinding, Context};
use cuda_prover_tests::{
    builtin, cached_builtin_keys, gpu, keys_for, native_proofs, proof_bytes, Pattern, Values,
};
use rand_chacha::ChaCha8Rng;
use rand_core::SeedableRng;

use crate::common::{max_log, min_log};

#[test]
fn cuda_equals_host_and_bellperson() {
    let Some(ctx) = gpu() else { return };
    let host = Context::host(1).unwrap();
    for kind in [Kind::Chain, Kind::Bits] {
        for log in (min_log()..=max_log()).step_by(2) {
            let keys = cached_builtin_keys(kind, log);
            for batch in [1usize, 3] {
                let circuits: Vec<_> = (0..batch)
                    .map(|i| builtin(kind, log, 500 + i as u64))
                    .collect();
                let synth: Vec<_> = circuits.iter().map(|c| synthesize(*c).unwrap()).collect();
                let bl = Blinding::random_vec(&mut ChaCha8Rng::seed_from_u64(log as u64), batch);
                let t = std::time::Instant::now();
                let cuda = prove_from_assignments(&ctx, &keys.key, &synth, &bl, &Placement::on(0))
                    .unwrap();
                let cuda_s = t.elapsed().as_secs_f64();
                for (o, c) in cuda.iter().zip(&circuits) {
                    assert_eq!(o.device, 0);
                    assert!(
                        keys.key.verify(&o.proof, &[c.public_input()]).unwrap(),
                        "{kind:?} 2^{log}"
                    );
                }
                // The CPU references get slow at the top sizes: at 2^20
                // bellperson checks the single proof and the host backend
                // the batch.
                let mut compared = Vec::new();
                if log <= 18 || batch == 1 {
                    compared.push("bellperson");
                    let theirs = native_proofs(circuits.clone(), &keys.params, &bl);
                    for (o, t) in cuda.iter().zip(&theirs) {
                        assert_eq!(
                            proof_bytes(&o.proof),
                            proof_bytes(t),
                            "{kind:?} 2^{log} x{batch}: cuda == bellperson"
                        );
                    }
                }
                if log <= 18 || batch > 1 {
                    let h =
                        prove_from_assignments(&host, &keys.key, &synth, &bl, &Placement::on(0))
                            .unwrap();
                    for (o, t) in cuda.iter().zip(&h) {
                        assert_eq!(
                            proof_bytes(&o.proof),
                            proof_bytes(&t.proof),
                            "{kind:?} 2^{log} x{batch}: cuda == host"
                        );
                    }
                    compared.push("host");
                }
                eprintln!(
                    "{} 2^{log} x{batch}: cuda {:.3} s, identical to {}",
                    kind.name(),
                    cuda_s,
                    compared.join(" and ")
                );
            }
        }
    }
}

/// The MSMs' scalar patterns on the GPU (A, B and L scalars all 0, all 1,
/// or mixed 0 / 1 / random, at sizes that are multiples of nothing): proofs
/// identical to the host backend's and bellperson's, and valid.
#[test]
fn msm_scalar_patterns_equal_host() {
    let Some(ctx) = gpu() else { return };
    let host = Context::host(1).unwrap();
    for n in [997usize, 5003] {
        let keys = keys_for(
            &format!("pattern-{n}"),
            Pattern {
                n,
                values: Values::Mixed,
                seed: 0,
            },
        );
        for values in [Values::Zeros, Values::Ones, Values::Mixed] {
            let c = Pattern {
                n,
                values,
                seed: n as u64 + 7,
            };
            let synth = vec![synthesize(c).unwrap()];
            let bl = Blinding::random_vec(&mut ChaCha8Rng::seed_from_u64(n as u64), 1);
            let cuda =
                prove_from_assignments(&ctx, &keys.key, &synth, &bl, &Placement::on(0)).unwrap();
            let h =
                prove_from_assignments(&host, &keys.key, &synth, &bl, &Placement::on(0)).unwrap();
            let theirs = native_proofs(vec![c], &keys.params, &bl);
            assert!(
                keys.key.verify(&cuda[0].proof, &c.public_inputs()).unwrap(),
                "{values:?} n={n}: proof verifies"
            );
            assert_eq!(
                proof_bytes(&cuda[0].proof),
                proof_bytes(&h[0].proof),
                "{values:?} n={n}: cuda == host"
            );
            assert_eq!(
                proof_bytes(&cuda[0].proof),
                proof_bytes(&theirs[0]),
                "{values:?} n={n}: cuda == bellperson"
            );
        }
    }
}
