//! Commit phase 2 of a real 2 KiB sector through the engine (host backend,
//! two simulated devices), with TEST parameters: filecoin-proofs'
//! `verify_seal` accepts it, rejects it with one byte flipped, and for the
//! same r, s the bytes equal bellperson's own CPU prover's, the full path's
//! and, on the witness path, those of the sequential witness (the C2 is
//! proved with the parallel witness).

use crate::common;

use std::sync::OnceLock;

use bellperson::groth16::{create_proof_batch, Parameters};
use blstrs::{Bls12, Scalar};
use cuda_prover_filecoin::c1::{C1File, Expected};
use cuda_prover_filecoin::c2::c2_from_bytes;
use cuda_prover_filecoin::prepare_c2;
use cuda_prover_filecoin::seal::SealCommit;
use cuda_prover_filecoin::sealing::verify_commit;
use cuda_prover_filecoin::test_params::{parameter_files, TestCircuit};
use cuda_prover_filecoin::{FilecoinError, FilecoinProver, SectorSize};
use cuda_prover_groth16::key_store::shape_path;
use cuda_prover_groth16::BlindingSource;
use cuda_prover_pipeline::SynthesisMode;
use ff::Field;
use filecoin_proofs::constants::SectorShape2KiB;
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;
use storage_proofs_core::sector::SectorId;

use common::{host_prover, registered_2kib, sealed_2kib, test_params};

const BLINDING_SEED: u64 = 0xb11d;

/// The C2 of the sealed sector (the witness path with the parallel
/// witness, where the circuit's shape is next to the params), made once
/// per test binary with seeded blinding: the proof bytes every test
/// checks, with the job's report.
fn c2() -> &'static SealCommit {
    static P: OnceLock<SealCommit> = OnceLock::new();
    P.get_or_init(|| {
        test_params(&[TestCircuit::Porep(SectorSize::KIB_2)]);
        let prover =
            host_prover(2, BlindingSource::Seeded(BLINDING_SEED)).with_parallel_witness(true);
        assert!(prover.parallel_witness());
        let out = prove(&prover);
        for line in out.times.partition_lines() {
            eprintln!("{line}");
        }
        out
    })
}

/// The C2 proof bytes of [`c2`].
fn c2_bytes() -> &'static Vec<u8> {
    &c2().output.proof
}

fn expected_2kib() -> Expected {
    Expected {
        size: Some(SectorSize::KIB_2),
        ..Default::default()
    }
}

/// A C2 of the sealed sector on one device with the shared C2's blinding.
fn run(mode: SynthesisMode, parallel_witness: bool) -> SealCommit {
    let prover = host_prover(1, BlindingSource::Seeded(BLINDING_SEED))
        .with_synthesis(mode)
        .with_parallel_witness(parallel_witness);
    assert_eq!(prover.parallel_witness(), parallel_witness);
    prove(&prover)
}

/// The sealed sector's C2 through `prover`, made for the 2 KiB seal.
fn prove(prover: &FilecoinProver) -> SealCommit {
    let s = sealed_2kib();
    let (registered, out) = c2_from_bytes(
        prover,
        &s.c1_json,
        &expected_2kib(),
        s.prover_id,
        s.sector_id,
    )
    .expect("C2 through the engine");
    assert_eq!(registered, registered_2kib());
    out
}

/// Every partition of the C2 took the witness path.
fn on_witness_path(out: &SealCommit) -> bool {
    out.times
        .report
        .per_partition
        .iter()
        .all(|p| p.witness_ms.is_some())
}

/// The shared C2 when it took the witness path (Auto does where the
/// circuit's shape is next to the params: the TEST parameters' generator
/// keeps it there); else (it recorded the shape) a C2 with the witness
/// path told, into `run`.
fn witness_c2(parallel_witness: bool, slot: &mut Option<SealCommit>) -> &SealCommit {
    if on_witness_path(c2()) {
        c2()
    } else {
        slot.insert(run(SynthesisMode::Witness, parallel_witness))
    }
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
    let full = run(SynthesisMode::Full, true);
    assert_eq!(&full.output.proof, ours, "full path");
    assert!(full
        .times
        .report
        .per_partition
        .iter()
        .all(|p| p.witness_ms.is_none()));
    for line in full.times.partition_lines() {
        eprintln!("full: {line}");
    }
    let mut slot = None;
    let witness = witness_c2(true, &mut slot);
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

    // Told to take the witness path where no shape is next to the params
    // (the same params file under another name, alone in its directory),
    // the prover refuses, naming the shape file it looked for.
    let bare = std::env::temp_dir().join(format!(
        "cuda-prover-filecoin-test-{}-no-shape",
        std::process::id()
    ));
    let params = parameter_files(TestCircuit::Porep(SectorSize::KIB_2))
        .unwrap()
        .params;
    std::fs::create_dir_all(&bare).unwrap();
    let alone = bare.join("porep-2kib.params");
    let _ = std::fs::remove_file(&alone);
    std::os::unix::fs::symlink(&params, &alone).unwrap();
    assert!(!shape_path(&alone).exists());
    let config = registered_2kib().porep_config().unwrap();
    let c1 = C1File::parse(&s.c1_json)
        .unwrap()
        .output::<SectorShape2KiB>()
        .unwrap();
    let prepared =
        prepare_c2::<SectorShape2KiB>(&config, c1, s.prover_id, SectorId::from(s.sector_id))
            .unwrap();
    let prover = host_prover(1, BlindingSource::Seeded(BLINDING_SEED))
        .with_synthesis(SynthesisMode::Witness);
    match prover.prove("c2", prepared.circuits, &alone) {
        Err(FilecoinError::Parameters { path, message }) => {
            assert_eq!(path, shape_path(&alone));
            assert!(message.contains("shape"), "{message}");
        }
        Err(e) => panic!("witness path without a shape: {e}"),
        Ok(_) => panic!("the witness path proved without a shape"),
    }
    let _ = std::fs::remove_dir_all(&bare);
}

/// C2 on the witness path with the parallel witness: `verify_seal` accepts
/// it, and for the same blinding its bytes are those of the sequential
/// witness.
#[test]
fn c2_with_parallel_witness_passes_verify_seal_2kib() {
    let s = sealed_2kib();
    let mut slot = None;
    let parallel = witness_c2(true, &mut slot);
    for p in &parallel.times.report.per_partition {
        assert!(
            p.witness_ms.is_some(),
            "partition {} on the witness path",
            p.partition
        );
    }
    assert!(verify_commit(s, &parallel.output.proof).expect("verify_seal runs"));
    let sequential = run(SynthesisMode::Witness, false);
    assert_eq!(
        parallel.output.proof, sequential.output.proof,
        "the parallel and sequential witnesses give other proofs"
    );
    let mut bad = parallel.output.proof.clone();
    bad[100] ^= 1;
    assert!(!matches!(verify_commit(s, &bad), Ok(true)));
    for line in parallel.times.partition_lines() {
        eprintln!("parallel: {line}");
    }
    for line in sequential.times.partition_lines() {
        eprintln!("sequential: {line}");
    }
}
