//! The witness path (a shape recorded once, witness-only synthesis, a, b, c
//! evaluated and checked by the core) gives the proofs of the full path byte
//! for byte, and refuses what does not fit.

use std::sync::Arc;

use bellpepper_core::Circuit;
use blstrs::Scalar;
use cuda_prover_bellperson::circuits::Kind;
use cuda_prover_bellperson::Placement;
use cuda_prover_bellperson::{
    prove_from_assignments, prove_from_witnesses, shape_file, synthesize, synthesize_recording,
    synthesize_witness, Blinding, Context, ErrorCode, Shape, ShapeData, SizeHint,
};
use cuda_prover_groth16::Groth16Engine;
use cuda_prover_tests::{
    builtin, builtin_keys, keys_for, native_proofs, proof_bytes, Broken, COnly, Keys, MultiInput,
};
use rand_chacha::ChaCha8Rng;
use rand_core::SeedableRng;

fn blinding(n: usize, seed: u64) -> Vec<Blinding> {
    Blinding::random_vec(&mut ChaCha8Rng::seed_from_u64(seed), n)
}

/// Full path, witness path and bellperson's own prover on the same circuits
/// and blinding: identical bytes, and the proofs verify.
fn same_proofs<C>(keys: &Arc<Keys>, circuits: Vec<C>, public: impl Fn(&C) -> Vec<Scalar>)
where
    C: Circuit<Scalar> + Clone + Send,
{
    let ctx = Context::host(2).unwrap();
    let n = circuits.len();
    let bl = blinding(n, 11);
    let full: Vec<_> = circuits
        .iter()
        .cloned()
        .map(|c| synthesize(c).unwrap())
        .collect();
    let data = ShapeData::record(circuits[0].clone()).unwrap();
    let shape = Shape::new(&data).unwrap();
    keys.key.check_shape(&shape).unwrap();
    let hint = keys.key.size_hint().unwrap();
    let witnesses: Vec<_> = circuits
        .iter()
        .cloned()
        .map(|c| synthesize_witness(c, hint).unwrap())
        .collect();
    for (w, f) in witnesses.iter().zip(&full) {
        assert_eq!(
            w.inputs, f.inputs,
            "witness-only inputs equal the full synthesis"
        );
        assert_eq!(w.aux, f.aux, "witness-only aux equal the full synthesis");
    }
    let a = prove_from_assignments(&ctx, &keys.key, &full, &bl, &Placement::AUTO).unwrap();
    let b =
        prove_from_witnesses(&ctx, &keys.key, &shape, &witnesses, &bl, &Placement::AUTO).unwrap();
    let native = native_proofs(circuits.clone(), &keys.params, &bl);
    for k in 0..n {
        assert_eq!(
            proof_bytes(&a[k].proof),
            proof_bytes(&b[k].proof),
            "partition {k}"
        );
        assert_eq!(
            proof_bytes(&b[k].proof),
            proof_bytes(&native[k]),
            "partition {k}"
        );
        assert!(keys.key.verify(&b[k].proof, &public(&circuits[k])).unwrap());
        assert!(b[k].timings.eval_ns > 0, "the evaluation is timed");
        assert_eq!(a[k].timings.eval_ns, 0, "no evaluation on the full path");
    }
    assert_eq!(b[0].device, 0);
    assert_eq!(b[n - 1].device, 1, "GPU_AUTO spreads witnesses too");
}

#[test]
fn chain_witness_path_is_byte_identical() {
    let keys = builtin_keys(Kind::Chain, 9);
    let cs: Vec<_> = (0..3).map(|i| builtin(Kind::Chain, 9, 40 + i)).collect();
    same_proofs(&keys, cs, |c| vec![c.public_input()]);
}

#[test]
fn bits_witness_path_is_byte_identical() {
    let keys = builtin_keys(Kind::Bits, 9);
    let cs: Vec<_> = (0..3).map(|i| builtin(Kind::Bits, 9, 50 + i)).collect();
    same_proofs(&keys, cs, |c| vec![c.public_input()]);
}

#[test]
fn general_coefficients_are_byte_identical() {
    // MultiInput uses the coefficient 5 and several public inputs.
    let keys = keys_for("multi-4", MultiInput { inputs: 4, seed: 0 });
    let cs: Vec<_> = (0..2)
        .map(|i| MultiInput {
            inputs: 4,
            seed: 60 + i,
        })
        .collect();
    let data = ShapeData::record(cs[0]).unwrap();
    assert!(
        !data.coeffs.is_empty(),
        "a coefficient other than +1 and -1 is recorded"
    );
    same_proofs(&keys, cs, |c| c.public_inputs());
}

#[test]
fn aux_only_in_c_is_byte_identical() {
    let keys = keys_for("conly-16", COnly { n: 16, seed: 0 });
    let cs: Vec<_> = (0..2)
        .map(|i| COnly {
            n: 16,
            seed: 70 + i,
        })
        .collect();
    let shape = Shape::new(&ShapeData::record(cs[0]).unwrap()).unwrap();
    assert!(shape.info().a_aux_count < shape.num_aux() as u64);
    same_proofs(&keys, cs, |c| c.public_inputs());
}

#[test]
fn recording_during_synthesis_equals_structure_only() {
    let c = builtin(Kind::Bits, 8, 3);
    let (synth, recorded) = synthesize_recording(c, SizeHint::default()).unwrap();
    assert_eq!(recorded, ShapeData::record(c).unwrap());
    assert_eq!(recorded.num_constraints(), synth.num_constraints());
    let shape = Shape::new(&recorded).unwrap();
    assert_eq!(
        shape.info().a_aux_count as usize,
        synth.a_aux_density.count()
    );
    assert_eq!(
        shape.info().b_input_count as usize,
        synth.b_input_density.count()
    );
    assert_eq!(
        shape.info().b_aux_count as usize,
        synth.b_aux_density.count()
    );
}

#[test]
fn unsatisfied_witness_is_refused_with_its_row() {
    let good = Broken {
        steps: 32,
        bad_step: usize::MAX,
    };
    let keys = keys_for("broken-32", good);
    let shape = Shape::new(&ShapeData::record(good).unwrap()).unwrap();
    let w = synthesize_witness(
        Broken {
            steps: 32,
            bad_step: 5,
        },
        SizeHint::default(),
    )
    .unwrap();
    let ctx = Context::host(1).unwrap();
    let e = prove_from_witnesses(
        &ctx,
        &keys.key,
        &shape,
        &[w],
        &blinding(1, 1),
        &Placement::on(0),
    )
    .unwrap_err();
    assert_eq!(e.code(), Some(ErrorCode::Unsatisfied), "{e}");
    assert!(e.to_string().contains("constraint 5 "), "{e}");
    assert!(e.to_string().contains("on device 0"), "{e}");
}

#[test]
fn mismatched_shapes_and_witnesses_are_refused() {
    let chain = builtin_keys(Kind::Chain, 8);
    let bits_shape = Shape::new(&ShapeData::record(builtin(Kind::Bits, 8, 0)).unwrap()).unwrap();
    let e = chain.key.check_shape(&bits_shape).unwrap_err();
    assert_eq!(e.code(), Some(ErrorCode::ShapeMismatch), "{e}");

    let ctx = Context::host(1).unwrap();
    let w = synthesize_witness(builtin(Kind::Bits, 8, 1), SizeHint::default()).unwrap();
    let e = prove_from_witnesses(
        &ctx,
        &chain.key,
        &bits_shape,
        &[w],
        &blinding(1, 2),
        &Placement::on(0),
    )
    .unwrap_err();
    assert_eq!(e.code(), Some(ErrorCode::ShapeMismatch), "{e}");

    // A witness of another size than its shape.
    let chain_shape = Shape::new(&ShapeData::record(builtin(Kind::Chain, 8, 0)).unwrap()).unwrap();
    let mut w = synthesize_witness(builtin(Kind::Chain, 8, 2), SizeHint::default()).unwrap();
    w.aux.pop();
    let e = prove_from_witnesses(
        &ctx,
        &chain.key,
        &chain_shape,
        &[w],
        &blinding(1, 3),
        &Placement::on(0),
    )
    .unwrap_err();
    assert_eq!(e.code(), Some(ErrorCode::ShapeMismatch), "{e}");

    // inputs[0] must be ONE.
    let mut w = synthesize_witness(builtin(Kind::Chain, 8, 2), SizeHint::default()).unwrap();
    w.inputs[0] = Scalar::from(2u64);
    let e = prove_from_witnesses(
        &ctx,
        &chain.key,
        &chain_shape,
        &[w],
        &blinding(1, 3),
        &Placement::on(0),
    )
    .unwrap_err();
    assert_eq!(e.code(), Some(ErrorCode::InvalidArgument), "{e}");
}

#[test]
fn shape_files_round_trip_and_refuse_corruption() {
    let keys = builtin_keys(Kind::Chain, 8);
    let other = builtin_keys(Kind::Bits, 8);
    let data = ShapeData::record(builtin(Kind::Chain, 8, 0)).unwrap();
    let dir = std::env::temp_dir().join(format!("cp-shape-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("chain.shape");
    shape_file::save(&data, &keys.key, &path).unwrap();
    assert_eq!(shape_file::load(&path, &keys.key).unwrap(), data);

    let e = shape_file::load(&path, &other.key).unwrap_err();
    assert!(e.to_string().contains("another proving key"), "{e}");

    let bytes = std::fs::read(&path).unwrap();
    let mut flipped = bytes.clone();
    flipped[bytes.len() / 2] ^= 1;
    let e = shape_file::decode(&flipped, &keys.key).unwrap_err();
    assert!(e.contains("checksum"), "{e}");
    let e = shape_file::decode(&bytes[..bytes.len() - 40], &keys.key).unwrap_err();
    assert!(e.contains("checksum") || e.contains("sizes"), "{e}");
    let e = shape_file::decode(&bytes[..20], &keys.key).unwrap_err();
    assert!(e.contains("not a shape file"), "{e}");
    // Any single flipped byte anywhere is refused.
    for at in (0..bytes.len()).step_by(bytes.len() / 97 + 1) {
        let mut b = bytes.clone();
        b[at] ^= 0x80;
        assert!(shape_file::decode(&b, &keys.key).is_err(), "flip at {at}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn corrupt_shape_parts_are_refused_by_the_core() {
    let mut data = ShapeData::record(builtin(Kind::Chain, 7, 0)).unwrap();
    let cols = (data.num_inputs + data.num_aux) as u32;
    data.b.entries[3].col = cols;
    let e = Shape::new(&data).unwrap_err();
    assert_eq!(e.code(), Some(ErrorCode::InvalidArgument), "{e}");
    assert!(e.to_string().contains("matrix B"), "{e}");

    let mut data = ShapeData::record(builtin(Kind::Chain, 7, 0)).unwrap();
    data.a.entries[0].coeff = 9;
    let e = Shape::new(&data).unwrap_err();
    assert!(e.to_string().contains("coefficient code 9"), "{e}");

    let mut data = ShapeData::record(builtin(Kind::Chain, 7, 0)).unwrap();
    let n = data.c.row_ptr.len();
    data.c.row_ptr[n / 2] = data.c.row_ptr[n / 2 + 1] + 1;
    assert!(Shape::new(&data).is_err());
}

mod engine {
    use super::*;
    use cuda_prover_engine::{Engine, EngineConfig};
    use cuda_prover_groth16::{BlindingSource, Job};
    use cuda_prover_pipeline::SynthesisMode;

    fn run(mode: SynthesisMode, shape: Option<Arc<Shape>>) -> cuda_prover_groth16::JobOutput {
        let keys = builtin_keys(Kind::Chain, 8);
        let ctx = Arc::new(Context::host(2).unwrap());
        let e = Engine::new(ctx, EngineConfig::default()).unwrap();
        let mut job = Job::new(
            "witness",
            (0..6).map(|k| builtin(Kind::Chain, 8, 90 + k)).collect(),
        );
        job.blinding = BlindingSource::Seeded(5);
        job.synthesis = mode;
        job.shape = shape;
        e.run(job, &keys.key, |_| {}).unwrap()
    }

    #[test]
    fn every_mode_gives_the_same_proofs() {
        let full = run(SynthesisMode::Full, None);
        assert!(full.shape.is_none() && full.recorded_shape.is_none());
        assert!(full
            .report
            .per_partition
            .iter()
            .all(|p| p.synthesis_ms.is_some() && p.witness_ms.is_none() && p.evaluation_ms == 0.0));

        // Auto without a shape: recorded from one full synthesis, then the
        // witness path.
        let auto = run(SynthesisMode::Auto, None);
        let recorded = auto
            .recorded_shape
            .as_ref()
            .expect("the shape was recorded");
        assert_eq!(
            *recorded,
            ShapeData::record(builtin(Kind::Chain, 8, 0)).unwrap()
        );
        let witness_parts = auto
            .report
            .per_partition
            .iter()
            .filter(|p| p.witness_ms.is_some())
            .count();
        assert!(witness_parts >= 1, "later partitions take the witness path");

        let shape = Arc::new(Shape::new(recorded).unwrap());
        let witness = run(SynthesisMode::Witness, Some(shape));
        assert!(witness.recorded_shape.is_none());
        for p in &witness.report.per_partition {
            assert!(p.witness_ms.is_some() && p.synthesis_ms.is_none());
            assert!(p.evaluation_ms > 0.0);
        }
        // A witness holds 32 bytes per variable; a full synthesis three more
        // values per constraint.
        let f = &full.report.per_partition[0];
        let w = &witness.report.per_partition[0];
        assert!(
            w.host_bytes < f.host_bytes,
            "{} < {}",
            w.host_bytes,
            f.host_bytes
        );
        for k in 0..6 {
            let b = proof_bytes(&full.proofs[k].output.proof);
            assert_eq!(
                b,
                proof_bytes(&auto.proofs[k].output.proof),
                "auto, partition {k}"
            );
            assert_eq!(
                b,
                proof_bytes(&witness.proofs[k].output.proof),
                "witness, partition {k}"
            );
        }
    }

    #[test]
    fn witness_mode_needs_a_fitting_shape() {
        let keys = builtin_keys(Kind::Chain, 8);
        let ctx = Arc::new(Context::host(1).unwrap());
        let e = Engine::new(ctx, EngineConfig::default()).unwrap();
        let mut job = Job::new("w", vec![builtin(Kind::Chain, 8, 1)]);
        job.synthesis = SynthesisMode::Witness;
        let err = e.run(job, &keys.key, |_| {}).err().unwrap();
        assert!(
            err.to_string().contains("needs the circuit's shape"),
            "{err}"
        );

        let bits = Shape::new(&ShapeData::record(builtin(Kind::Bits, 8, 0)).unwrap()).unwrap();
        let mut job = Job::new("w", vec![builtin(Kind::Chain, 8, 1)]);
        job.shape = Some(Arc::new(bits));
        let err = e.run(job, &keys.key, |_| {}).err().unwrap();
        assert!(err.to_string().contains("does not fit its key"), "{err}");
    }
}
