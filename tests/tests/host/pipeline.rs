//! The pipeline layer: start/finish and overlapped partitions.

use cuda_prover_bellperson::circuits::Kind;
use cuda_prover_bellperson::Placement;
use cuda_prover_pipeline::{
    gpu_prove, gpu_prove_start, prove_overlapped, synthesize, Blinding, Context, SynthesizedJob,
};
use cuda_prover_tests::{builtin, builtin_keys, Broken};
use rand_chacha::ChaCha8Rng;
use rand_core::SeedableRng;

#[test]
fn start_then_finish_keeps_order_and_devices() {
    let keys = builtin_keys(Kind::Chain, 8);
    let ctx = Context::host(2).unwrap();
    let circuits: Vec<_> = (0..4).map(|k| builtin(Kind::Chain, 8, k)).collect();
    let job = SynthesizedJob {
        partitions: circuits
            .iter()
            .map(|c| synthesize(*c).unwrap().into())
            .collect(),
        blinding: Blinding::random_vec(&mut ChaCha8Rng::seed_from_u64(1), 4),
        tags: vec![10, 11, 12, 13],
    };
    let h = gpu_prove_start(&ctx, &job, &keys.key, &Placement::AUTO).unwrap();
    assert_eq!(h.devices(), vec![0, 0, 1, 1]);
    let out = h.finish().unwrap();
    for (i, (tag, o, public)) in out.iter().enumerate() {
        assert_eq!(*tag, 10 + i as i64);
        assert_eq!(public, &vec![circuits[i].public_input()]);
        assert!(keys.key.verify(&o.proof, public).unwrap());
    }
    let again = gpu_prove(&ctx, &job, &keys.key, &Placement::on(1)).unwrap();
    assert!(again.iter().all(|(_, o, _)| o.device == 1));
}

#[test]
fn overlapped_partitions_verify_in_order() {
    let keys = builtin_keys(Kind::Bits, 9);
    let ctx = Context::host(1).unwrap();
    let circuits: Vec<_> = (0..5).map(|k| builtin(Kind::Bits, 9, 70 + k)).collect();
    let mut seen = Vec::new();
    let out = prove_overlapped(
        &ctx,
        &keys.key,
        None,
        circuits.clone(),
        |k| Blinding::random(&mut ChaCha8Rng::seed_from_u64(k as u64)),
        &Placement::on(0),
        |p| seen.push(p.partition),
    )
    .unwrap();
    assert_eq!(seen, vec![0, 1, 2, 3, 4]);
    for (k, p) in out.iter().enumerate() {
        assert_eq!(p.partition, k);
        assert!(keys
            .key
            .verify(&p.output.proof, &[circuits[k].public_input()])
            .unwrap());
    }
}

#[test]
fn overlapped_stops_at_the_first_failure() {
    let shape = Broken {
        steps: 60,
        bad_step: 60,
    };
    let keys = cuda_prover_tests::keys_for("broken-60", shape);
    let ctx = Context::host(1).unwrap();
    let circuits = vec![
        shape,
        Broken {
            steps: 60,
            bad_step: 3,
        },
        shape,
        shape,
    ];
    let mut done = 0;
    let err = prove_overlapped(
        &ctx,
        &keys.key,
        None,
        circuits,
        |_| Blinding::random(&mut ChaCha8Rng::seed_from_u64(1)),
        &Placement::on(0),
        |_| done += 1,
    )
    .unwrap_err();
    assert_eq!(done, 1, "partition 0 finished, then the pipeline stopped");
    assert!(err.to_string().contains("not satisfied"), "{err}");
}

#[test]
fn overlapped_turns_a_circuit_panic_into_an_error() {
    use bellpepper_core::{Circuit, ConstraintSystem, SynthesisError};
    struct Panics;
    impl Circuit<blstrs::Scalar> for Panics {
        fn synthesize<CS: ConstraintSystem<blstrs::Scalar>>(
            self,
            _: &mut CS,
        ) -> Result<(), SynthesisError> {
            panic!("bad witness code")
        }
    }
    let keys = builtin_keys(Kind::Bits, 9);
    let ctx = Context::host(1).unwrap();
    let err = prove_overlapped(
        &ctx,
        &keys.key,
        None,
        vec![Panics],
        |_| Blinding::random(&mut ChaCha8Rng::seed_from_u64(1)),
        &Placement::on(0),
        |_| {},
    )
    .unwrap_err();
    assert!(err.to_string().contains("bad witness code"), "{err}");
}
