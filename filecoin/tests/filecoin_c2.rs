//! Commit phase 2 of a real 2 KiB sector through the engine (host backend,
//! two simulated devices), with TEST parameters: filecoin-proofs'
//! `verify_seal` accepts it, rejects it with one byte flipped, and for the
//! same r, s the bytes equal bellperson's own CPU prover's.

mod common;

use std::sync::OnceLock;

use bellperson::groth16::{create_proof_batch, Parameters};
use blstrs::{Bls12, Scalar};
use cuda_prover_engine::BlindingSource;
use cuda_prover_filecoin::c1::{C1File, Expected};
use cuda_prover_filecoin::c2::c2_from_bytes;
use cuda_prover_filecoin::prepare_c2;
use cuda_prover_filecoin::sealing::verify_commit;
use cuda_prover_filecoin::test_params::TestCircuit;
use cuda_prover_filecoin::SectorSize;
use cuda_prover_pipeline::SynthesisMode;
use ff::Field;
use filecoin_proofs::constants::SectorShape2KiB;
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;
use storage_proofs_core::sector::SectorId;

use common::{host_prover, registered_2kib, sealed_2kib, test_params};

const BLINDING_SEED: u64 = 0xb11d;

/// The C2 proof bytes, made once per test binary with seeded blinding.
fn c2_bytes() -> &'static Vec<u8> {
    static P: OnceLock<Vec<u8>> = OnceLock::new();
    P.get_or_init(|| {
        test_params(&[TestCircuit::Porep(SectorSize::KIB_2)]);
        let s = sealed_2kib();
        let prover = host_prover(2, BlindingSource::Seeded(BLINDING_SEED));
        let expected = Expected {
            size: Some(SectorSize::KIB_2),
            ..Default::default()
        };
        let (registered, out) =
            c2_from_bytes(&prover, &s.c1_json, &expected, s.prover_id, s.sector_id)
                .expect("C2 through the engine");
        assert_eq!(registered, registered_2kib());
        for line in out.times.partition_lines() {
            eprintln!("{line}");
        }
        out.output.proof
    })
}

fn verify(bytes: &[u8]) -> Result<bool, cuda_prover_filecoin::FilecoinError> {
    verify_commit(sealed_2kib(), bytes)
}

#[test]
fn c2_2kib_is_accepted_by_verify_seal() {
    let bytes = c2_bytes();
    let partitions = usize::from(registered_2kib().porep_config().unwrap().partitions);
    assert_eq!(
        bytes.len(),
        192 * partitions,
        "one 192-byte proof per partition"
    );
    assert!(verify(bytes).expect("verify_seal runs"));
}

#[test]
fn c2_with_one_flipped_byte_is_rejected_by_verify_seal() {
    let bytes = c2_bytes();
    for at in [0, 57, 96, 150, bytes.len() - 1] {
        let mut bad = bytes.clone();
        bad[at] ^= 0x01;
        // A flipped byte either decodes to another proof (false) or to no
        // point at all (an error): never to an accepted proof.
        let r = verify(&bad);
        assert!(!matches!(r, Ok(true)), "byte {at} flipped was accepted");
    }
}

/// The engine's documented reproducible blinding: partition k uses
/// ChaCha20 seeded with (seed, k), drawing r then s.
fn engine_blinding(seed: u64, k: usize) -> (Scalar, Scalar) {
    let mut s = [0u8; 32];
    s[..8].copy_from_slice(&seed.to_le_bytes());
    s[8..16].copy_from_slice(&(k as u64).to_le_bytes());
    let mut rng = ChaCha20Rng::from_seed(s);
    let r = Scalar::random(&mut rng);
    let s = Scalar::random(&mut rng);
    (r, s)
}

#[test]
fn c2_bytes_equal_bellperson_create_proof_batch_for_the_same_r_s() {
    let ours = c2_bytes();
    let s = sealed_2kib();
    let config = registered_2kib().porep_config().unwrap();
    let c1 = C1File::parse(&s.c1_json)
        .unwrap()
        .output::<SectorShape2KiB>()
        .unwrap();
    let prepared =
        prepare_c2::<SectorShape2KiB>(&config, c1, s.prover_id, SectorId::from(s.sector_id))
            .unwrap();
    let n = prepared.circuits.len();
    let (r, s_): (Vec<Scalar>, Vec<Scalar>) =
        (0..n).map(|k| engine_blinding(BLINDING_SEED, k)).unzip();
    let file = std::fs::File::open(&prepared.params).unwrap();
    let params =
        Parameters::<Bls12>::read(std::io::BufReader::new(file), false).expect("params file");
    let t = std::time::Instant::now();
    let theirs = create_proof_batch(prepared.circuits, &params, r, s_).expect("bellperson");
    eprintln!("bellperson CPU prover: {:.1} s", t.elapsed().as_secs_f64());
    let mut bytes = Vec::new();
    for p in &theirs {
        p.write(&mut bytes).unwrap();
    }
    assert_eq!(
        &bytes, ours,
        "proof bytes differ from bellperson's for the same r, s"
    );
}

/// The witness path (the circuit's shape kept next to the params, the core
/// evaluating a, b, c from witness-only synthesis) gives the bytes of the
/// full path, and refuses to run without a shape when told to use it.
#[test]
fn c2_witness_path_gives_the_bytes_of_the_full_path() {
    let ours = c2_bytes();
    let s = sealed_2kib();
    let expected = Expected {
        size: Some(SectorSize::KIB_2),
        ..Default::default()
    };
    let run = |mode: SynthesisMode| {
        let prover = host_prover(1, BlindingSource::Seeded(BLINDING_SEED)).with_synthesis(mode);
        c2_from_bytes(&prover, &s.c1_json, &expected, s.prover_id, s.sector_id)
            .expect("C2 through the engine")
            .1
    };
    let full = run(SynthesisMode::Full);
    assert_eq!(&full.output.proof, ours, "full path");
    assert!(full
        .times
        .report
        .per_partition
        .iter()
        .all(|p| p.witness_ms.is_none()));
    // Auto records the shape when it is not next to the params yet.
    let _ = run(SynthesisMode::Auto);
    let witness = run(SynthesisMode::Witness);
    assert_eq!(&witness.output.proof, ours, "witness path");
    for p in &witness.times.report.per_partition {
        assert!(
            p.witness_ms.is_some() && p.evaluation_ms > 0.0,
            "partition {}",
            p.partition
        );
        let f = &full.times.report.per_partition[p.partition];
        assert!(
            p.host_bytes < f.host_bytes,
            "{} < {}",
            p.host_bytes,
            f.host_bytes
        );
    }
    for line in witness.times.partition_lines() {
        eprintln!("{line}");
    }
}
