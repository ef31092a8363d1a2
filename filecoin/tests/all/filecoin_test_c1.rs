//! Test C1 fixtures (`test-c1`, `test_c1::generate_test_c1`): C1 outputs of
//! committed-capacity sectors made without sealing. At 2 KiB and 8 MiB
//! their vanilla proofs pass storage-proofs' verifier (directly and through
//! `prepare_c2`), and a flipped column-path sibling, label or column
//! element is rejected by it; a flipped comm_d or comm_r_last sibling
//! (paths that verifier does not hash) is stopped by the C2 circuit. A
//! 32 GiB one passes `prepare_c2`; a 2 KiB one goes through C2 on the host
//! backend to a proof `verify_seal` accepts; the JSON has the layout of a
//! sealed sector's; the CLI writes the same bytes for the same seed,
//! refuses a wrapper not named "test" and ends with the ids C2 takes.

use crate::common;

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::OnceLock;

use cuda_prover_filecoin::c1::{C1File, Expected};
use cuda_prover_filecoin::c2::{c2_from_bytes, parse_prover_id};
use cuda_prover_filecoin::test_c1::{generate_test_c1, TestC1};
use cuda_prover_filecoin::test_params::TestCircuit;
use cuda_prover_filecoin::{
    prepare_c2, FilecoinError, FilecoinProver, RegisteredSeal, SealVersion, SectorSize,
};
use cuda_prover_groth16::BlindingSource;
use filecoin_proofs::constants::{
    DefaultPieceHasher, SectorShape2KiB, SectorShape32GiB, SectorShape8MiB,
};
use filecoin_proofs::{compute_comm_d, verify_seal, MerkleTreeTrait, SealCommitPhase1Output};
use serde_json::Value;
use storage_proofs_core::proof::ProofScheme;
use storage_proofs_core::sector::SectorId;
use storage_proofs_porep::stacked::StackedDrg;

use common::{filecoin_cli, host_prover, sealed_2kib, stacked_public, test_params};

const SEED: u64 = 7;

fn registered(size: SectorSize) -> RegisteredSeal {
    RegisteredSeal::new(size, SealVersion::V1_1)
}

fn size_8mib() -> SectorSize {
    "8MiB".parse().unwrap()
}

fn fixture(size: SectorSize) -> TestC1 {
    generate_test_c1(registered(size), SEED).expect("test C1")
}

/// What a C2 of the 2 KiB fixture takes: the fixture, a host-backend
/// prover with seeded blinding (one per test binary, so that its key is
/// loaded once), and the expected sector size.
fn c2_of_2kib_fixture() -> (TestC1, &'static FilecoinProver, Expected) {
    static PROVER: OnceLock<FilecoinProver> = OnceLock::new();
    test_params(&[TestCircuit::Porep(SectorSize::KIB_2)]);
    let prover = PROVER.get_or_init(|| host_prover(1, BlindingSource::Seeded(0x7e57)));
    let expected = Expected {
        size: Some(SectorSize::KIB_2),
        ..Default::default()
    };
    (fixture(SectorSize::KIB_2), prover, expected)
}

/// storage-proofs' `verify_all_partitions` with the public params and
/// inputs filecoin-proofs builds for the sector's `PoRepConfig` (as its
/// `seal_commit_phase2` does); a panic on malformed proofs counts as a
/// rejection.
fn vanilla_accepts<Tree: 'static + MerkleTreeTrait>(size: SectorSize, c1_json: &[u8]) -> bool {
    let config = registered(size).porep_config().unwrap();
    let c1: SealCommitPhase1Output<Tree> = serde_json::from_slice(c1_json).expect("C1 JSON");
    let (public_inputs, public_params) = stacked_public(&config, &c1);
    catch_unwind(AssertUnwindSafe(|| {
        StackedDrg::<Tree, DefaultPieceHasher>::verify_all_partitions(
            &public_params.vanilla_params,
            &public_inputs,
            &c1.vanilla_proofs,
        )
    }))
    .map(|r| r.unwrap_or(false))
    .unwrap_or(false)
}

/// This crate's C2 checks (`prepare_c2`: replica id, sizes, partitions and
/// filecoin-proofs' vanilla verifier) on the fixture's JSON.
fn prepare<Tree: 'static + MerkleTreeTrait>(
    c1: &TestC1,
    c1_json: &[u8],
) -> Result<(), FilecoinError> {
    let config = c1.registered.porep_config()?;
    let out = C1File::parse(c1_json)?.output::<Tree>()?;
    prepare_c2::<Tree>(
        &config,
        out,
        c1.identity.prover_id,
        SectorId::from(c1.identity.sector_id),
    )
    .map(|_| ())
}

fn check_valid<Tree: 'static + MerkleTreeTrait>(size: SectorSize) {
    let c1 = fixture(size);
    let fp_size = filecoin_proofs::SectorSize(size.bytes());
    assert_eq!(
        c1.comm_d,
        compute_comm_d(fp_size, &[]).unwrap(),
        "comm_d is filecoin-proofs' comm_d of an empty (all-zero) sector"
    );
    assert!(vanilla_accepts::<Tree>(size, &c1.c1_json), "{size}");
    prepare::<Tree>(&c1, &c1.c1_json).expect("prepare_c2 accepts the test C1");
    let config = c1.registered.porep_config().unwrap();
    let out: SealCommitPhase1Output<Tree> = serde_json::from_slice(&c1.c1_json).unwrap();
    assert_eq!(out.vanilla_proofs.len(), usize::from(config.partitions));
    assert_eq!(out.comm_r, c1.comm_r);
    assert_eq!(out.seed, c1.identity.seed);
    assert_eq!(out.ticket, c1.identity.ticket);
}

#[test]
fn test_c1_2kib_passes_storage_proofs_vanilla_verification() {
    check_valid::<SectorShape2KiB>(SectorSize::KIB_2);
}

#[test]
fn test_c1_8mib_passes_storage_proofs_vanilla_verification() {
    check_valid::<SectorShape8MiB>(size_8mib());
}

/// A 32 GiB fixture (ten partitions of 18 challenges, paths through the
/// 8-ary sub-tree level) passes this crate's C2 checks: the replica id, the
/// sector size its comm_d paths imply, the partition count and
/// filecoin-proofs' vanilla verifier.
#[test]
fn test_c1_32gib_passes_the_c2_checks() {
    let size: SectorSize = "32GiB".parse().unwrap();
    let t = std::time::Instant::now();
    let c1 = fixture(size);
    eprintln!(
        "32 GiB test C1: {} bytes in {:.1} s (build {:.1} s, check {:.1} s)",
        c1.c1_json.len(),
        t.elapsed().as_secs_f64(),
        c1.build.as_secs_f64(),
        c1.verify.as_secs_f64()
    );
    assert_eq!((c1.partitions, c1.challenges_per_partition), (10, 18));
    // The empty 32 GiB sector's comm_d, as lotus knows it (zerocomm):
    // baga6ea4seaqao7s73y24kcutaosvacpdjgfe5pw76ooefnyqw4ynr3d2y6x2mpq.
    // (filecoin-proofs' compute_comm_d would hash 32 GiB of zeros.)
    assert_eq!(
        hex(&c1.comm_d),
        "077e5fde35c50a9303a55009e3498a4ebedff39c42b710b730d8ec7ac7afa63e"
    );
    let file = C1File::parse(&c1.c1_json).unwrap();
    assert_eq!(file.proofs_size, Some(size));
    prepare::<SectorShape32GiB>(&c1, &c1.c1_json).expect("prepare_c2 accepts the 32 GiB test C1");
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A 32-byte field element in the JSON (an array of 32 numbers), its
/// lowest bit flipped (still a field element).
fn flip(v: &mut Value) {
    let bytes = v.as_array_mut().expect("a 32-byte array");
    assert_eq!(bytes.len(), 32);
    let b = bytes[0].as_u64().unwrap();
    bytes[0] = Value::from(b ^ 1);
}

fn tampered(json: &[u8], at: &[&str]) -> Vec<u8> {
    let mut v: Value = serde_json::from_slice(json).unwrap();
    let mut cur = &mut v;
    for key in at {
        cur = match key.parse::<usize>() {
            Ok(i) => &mut cur[i],
            Err(_) => &mut cur[*key],
        };
        assert!(!cur.is_null(), "no {key} in {at:?}");
    }
    flip(cur);
    serde_json::to_vec(&v).unwrap()
}

fn check_tamper_rejected<Tree: 'static + MerkleTreeTrait>(size: SectorSize) {
    let c1 = fixture(size);
    let p = ["vanilla_proofs", "0", "1"];
    let single = |proof: &[&'static str], step: &'static str| {
        let mut v: Vec<&str> = p.to_vec();
        v.extend_from_slice(proof);
        v.extend_from_slice(&["data", "Single", "path", "path", step, "hashes", "2"]);
        v
    };
    let cases: Vec<(&str, Vec<&str>)> = vec![
        (
            "the challenged column's path sibling",
            single(&["replica_column_proofs", "c_x", "inclusion_proof"], "1"),
        ),
        (
            "a DRG parent's column path sibling",
            single(
                &[
                    "replica_column_proofs",
                    "drg_parents",
                    "3",
                    "inclusion_proof",
                ],
                "0",
            ),
        ),
        (
            "an expander parent's column path sibling",
            single(
                &[
                    "replica_column_proofs",
                    "exp_parents",
                    "7",
                    "inclusion_proof",
                ],
                "1",
            ),
        ),
        (
            "a labeling proof's parent label",
            [&p[..], &["labeling_proofs", "1", "parents", "9"]].concat(),
        ),
        (
            "a layer-1 labeling proof's parent label",
            [&p[..], &["labeling_proofs", "0", "parents", "36"]].concat(),
        ),
        (
            "an encoding proof's parent label",
            [&p[..], &["encoding_proof", "parents", "0"]].concat(),
        ),
        (
            "a challenged column's element",
            [
                &p[..],
                &["replica_column_proofs", "c_x", "column", "rows", "1"],
            ]
            .concat(),
        ),
        (
            "an expander parent's column element",
            [
                &p[..],
                &[
                    "replica_column_proofs",
                    "exp_parents",
                    "5",
                    "column",
                    "rows",
                    "0",
                ],
            ]
            .concat(),
        ),
        (
            "a challenged node's replica leaf",
            [&p[..], &["comm_r_last_proof", "data", "Single", "leaf"]].concat(),
        ),
    ];
    for (what, at) in cases {
        let bad = tampered(&c1.c1_json, &at);
        assert!(
            !vanilla_accepts::<Tree>(size, &bad),
            "{size}: {what} flipped was accepted"
        );
        match prepare::<Tree>(&c1, &bad) {
            Err(FilecoinError::VanillaProofs(_)) => {}
            other => panic!("{size}: {what} flipped: prepare_c2 gave {other:?}"),
        }
    }
}

#[test]
fn test_c1_with_a_flipped_sibling_label_or_column_element_is_rejected() {
    check_tamper_rejected::<SectorShape2KiB>(SectorSize::KIB_2);
    check_tamper_rejected::<SectorShape8MiB>(size_8mib());
}

/// The keys and array lengths of a JSON value: what serde's layout is.
fn skeleton(v: &Value) -> Value {
    match v {
        Value::Object(m) => {
            Value::Object(m.iter().map(|(k, v)| (k.clone(), skeleton(v))).collect())
        }
        Value::Array(a) if a.iter().all(Value::is_number) => Value::from(format!("[{}]", a.len())),
        Value::Array(a) => Value::Array(a.iter().map(skeleton).collect()),
        Value::Number(_) => Value::from("n"),
        other => other.clone(),
    }
}

/// The fixture's JSON has the layout of a sealed 2 KiB sector's C1 (the
/// same fields, paths, columns and parents, in the same places).
#[test]
fn test_c1_2kib_has_the_json_layout_of_a_sealed_sectors_c1() {
    let sealed: Value = serde_json::from_slice(&sealed_2kib().c1_json).unwrap();
    let ours: Value = serde_json::from_slice(&fixture(SectorSize::KIB_2).c1_json).unwrap();
    assert_eq!(skeleton(&ours), skeleton(&sealed));
}

/// A 2 KiB test C1 through this crate's C2 (host backend, TEST parameters):
/// filecoin-proofs' `verify_seal` accepts the proof, and rejects it for
/// another seed's commitments.
#[test]
fn test_c1_2kib_through_c2_is_accepted_by_verify_seal() {
    let (c1, prover, expected) = c2_of_2kib_fixture();
    let id = c1.identity;
    let (reg, out) = c2_from_bytes(prover, &c1.c1_json, &expected, id.prover_id, id.sector_id)
        .expect("C2 of the test C1");
    assert_eq!(reg, registered(SectorSize::KIB_2));
    let config = reg.porep_config().unwrap();
    let verify = |comm_r: [u8; 32], seed: [u8; 32]| {
        verify_seal::<SectorShape2KiB>(
            &config,
            comm_r,
            c1.comm_d,
            id.prover_id,
            SectorId::from(id.sector_id),
            id.ticket,
            seed,
            &out.output.proof,
        )
        .expect("verify_seal runs")
    };
    assert!(verify(c1.comm_r, id.seed), "verify_seal accepts the proof");
    let other = generate_test_c1(registered(SectorSize::KIB_2), SEED + 1).unwrap();
    assert!(!verify(other.comm_r, id.seed), "another comm_r");
    assert!(!verify(c1.comm_r, other.identity.seed), "another seed");
}

/// The wrapper reads back through `C1File` as the same C1, with its
/// sector number and size.
#[test]
fn test_c1_wrapper_is_read_by_c1_file() {
    use cuda_prover_filecoin::test_c1::wrapper::wrap;
    let c1 = fixture(SectorSize::KIB_2);
    let bytes = wrap(&c1.c1_json, c1.identity.sector_id, SectorSize::KIB_2).unwrap();
    let v: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(v["test_fixture"], Value::Bool(true));
    let file = C1File::parse(&bytes).unwrap();
    assert_eq!(file.sector_num, Some(c1.identity.sector_id));
    assert_eq!(file.declared_size, Some(SectorSize::KIB_2));
    assert_eq!(file.proofs_size, Some(SectorSize::KIB_2));
    let expected = Expected {
        sector_id: Some(c1.identity.sector_id),
        ..Default::default()
    };
    assert_eq!(file.resolve(&expected).unwrap(), c1.registered);
    let read = serde_json::to_vec(&file.output::<SectorShape2KiB>().unwrap()).unwrap();
    assert_eq!(read, c1.c1_json);
    prepare::<SectorShape2KiB>(&c1, &bytes).expect("prepare_c2 accepts the wrapper");
}

#[test]
fn test_c1_cli_same_seed_same_bytes_ids_last_and_wrapper_names_test() {
    let dir = std::env::temp_dir().join(format!("cuda-prover-test-c1-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = |name: &str| dir.join(name).to_string_lossy().into_owned();
    let seed = SEED.to_string();

    // --wrapper to a name without "test" is refused before anything is written.
    let refused = path("c1-for-worker.json");
    let out = filecoin_cli(
        "test-c1",
        &[
            "--sector-size",
            "2KiB",
            "--seed",
            &seed,
            "--out",
            &refused,
            "--wrapper",
        ],
    );
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("must contain \"test\""), "{err}");
    assert!(!std::path::Path::new(&refused).exists());

    let run = |name: &str, wrapper: bool, seed: &str| {
        let mut args = vec!["--sector-size", "2KiB", "--seed", seed, "--out"];
        let p = path(name);
        args.push(&p);
        if wrapper {
            args.push("--wrapper");
        }
        let out = filecoin_cli("test-c1", &args);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let stdout = String::from_utf8(out.stdout).unwrap();
        let last = stdout.lines().last().unwrap().to_string();
        (std::fs::read(&p).unwrap(), last)
    };
    let (a, last_a) = run("a.json", false, &seed);
    let (b, last_b) = run("b.json", false, &seed);
    assert_eq!(a, b, "same seed, same bytes");
    assert_eq!(last_a, last_b);
    let (other, last_other) = run("c.json", false, "8");
    assert_ne!(a, other, "another seed, other bytes");
    assert_ne!(last_a, last_other);

    // The library's fixture for the seed: same bytes, same ids.
    let c1 = fixture(SectorSize::KIB_2);
    assert_eq!(a, c1.c1_json);
    let words: Vec<&str> = last_a.split(' ').collect();
    assert_eq!(words.len(), 4, "{last_a}");
    assert_eq!((words[0], words[2]), ("prover_id", "sector_id"), "{last_a}");
    assert_eq!(words[1].len(), 64);
    assert!(words[1]
        .chars()
        .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()));
    assert_eq!(parse_prover_id(words[1]).unwrap(), c1.identity.prover_id);
    assert_eq!(words[3].parse::<u64>().unwrap(), c1.identity.sector_id);

    // The wrapper, named as a test file, wraps the same C1.
    let (w1, last_w) = run("fixture-test.json", true, &seed);
    let (w2, _) = run("fixture-test-2.json", true, &seed);
    assert_eq!(w1, w2);
    assert_eq!(last_w, last_a);
    let file = C1File::parse(&w1).unwrap();
    assert_eq!(file.sector_num, Some(c1.identity.sector_id));
    let _ = std::fs::remove_dir_all(&dir);
}

/// storage-proofs' vanilla verifier checks the comm_d and comm_r_last
/// openings by their index and root fields only (it does not hash their
/// paths); the C2 circuit hashes them. A flipped sibling there passes the
/// vanilla check and is stopped by the core's a*b = c check before any
/// proving: the fixture's paths are real paths.
#[test]
fn test_c1_tree_path_siblings_are_checked_by_the_c2_circuit() {
    let (c1, prover, expected) = c2_of_2kib_fixture();
    let id = c1.identity;
    let p = ["vanilla_proofs", "0", "0"];
    let cases: Vec<(&str, Vec<&str>)> = vec![
        (
            "a comm_r_last path sibling",
            [
                &p[..],
                &[
                    "comm_r_last_proof",
                    "data",
                    "Single",
                    "path",
                    "path",
                    "1",
                    "hashes",
                    "3",
                ],
            ]
            .concat(),
        ),
        (
            "a comm_d path sibling",
            [
                &p[..],
                &[
                    "comm_d_proofs",
                    "data",
                    "Single",
                    "path",
                    "path",
                    "2",
                    "hashes",
                    "0",
                ],
            ]
            .concat(),
        ),
    ];
    for (what, at) in cases {
        let bad = tampered(&c1.c1_json, &at);
        assert!(
            vanilla_accepts::<SectorShape2KiB>(SectorSize::KIB_2, &bad),
            "{what}: storage-proofs' vanilla verifier now hashes this path; move the case to \
             the vanilla test"
        );
        match c2_from_bytes(prover, &bad, &expected, id.prover_id, id.sector_id) {
            Err(FilecoinError::Engine(e)) => {
                let msg = e.to_string();
                assert!(msg.contains("not satisfied"), "{what}: {msg}");
            }
            Err(e) => panic!("{what} flipped: C2 failed otherwise: {e}"),
            Ok(_) => panic!("{what} flipped: C2 made a proof"),
        }
    }
}
