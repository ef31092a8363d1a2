//! Test PoSt fixtures (`test-post`, `test_post::generate_test_post`):
//! Winning and Window PoSt inputs made without sealing. At 2 KiB they are
//! proved through this crate's engine path (host backend, TEST
//! parameters) and filecoin-proofs' `verify_winning_post` /
//! `verify_window_post` accept the proofs; a 32 GiB Winning PoSt input
//! builds in seconds and its vanilla proofs pass filecoin-proofs' own
//! partitioning check; the same seed gives the same bytes; a flipped path
//! sibling, leaf, comm_c or comm_r, and other randomness, are refused by
//! the vanilla check; the file reads back through `PostInput`, and the CLI
//! writes it.

use crate::common;

use std::collections::BTreeMap;
use std::time::Instant;

use cuda_prover_filecoin::post_input::PostInput;
use cuda_prover_filecoin::test_params::TestCircuit;
use cuda_prover_filecoin::test_post::{generate_test_post, TestPost};
use cuda_prover_filecoin::vanilla::{prove_post_bytes, verify_post_vanilla, PostJob};
use cuda_prover_filecoin::{post_config, FilecoinError, PostKind, SectorSize};
use cuda_prover_groth16::BlindingSource;
use filecoin_hashers::{Domain, Hasher};
use filecoin_proofs::constants::{SectorShape2KiB, SectorShape32GiB};
use filecoin_proofs::parameters::winning_post_setup_params;
use filecoin_proofs::{
    as_safe_commitment, partition_vanilla_proofs, verify_window_post, verify_winning_post,
    FallbackPoStSectorProof, MerkleTreeTrait, PublicReplicaInfo,
};
use storage_proofs_core::merkle::MerkleProofTrait;
use storage_proofs_core::proof::ProofScheme;
use storage_proofs_core::sector::SectorId;
use storage_proofs_post::fallback::{FallbackPoSt, PublicInputs, PublicSector};

use common::{filecoin_cli, host_prover, test_params};

const SEED: u64 = 11;

fn fixture(kind: PostKind, size: SectorSize, sectors: usize) -> TestPost {
    generate_test_post(kind, size, SEED, sectors).expect("test PoSt")
}

fn size_32gib() -> SectorSize {
    "32GiB".parse().unwrap()
}

fn decode<Tree: 'static + MerkleTreeTrait>(
    input: &PostInput,
) -> Vec<FallbackPoStSectorProof<Tree>> {
    input
        .vanilla_proofs
        .iter()
        .map(|b| bincode::deserialize(b).expect("bincode FallbackPoStSectorProof"))
        .collect()
}

/// The fixture's Winning PoSt vanilla proofs as filecoin-proofs lays them
/// out (`partition_vanilla_proofs`: one proof per challenge), checked by
/// storage-proofs' verifier with the sector named once per challenge, as
/// `verify_winning_post` names it, so that every opening is checked
/// (independent of this crate's check).
fn filecoin_proofs_accepts_winning<Tree: 'static + MerkleTreeTrait>(input: &PostInput) -> bool {
    let config = post_config(input.size, PostKind::Winning).unwrap();
    let proofs = decode::<Tree>(input);
    let safe = |b: &[u8; 32]| {
        as_safe_commitment::<<Tree::Hasher as Hasher>::Domain, _>(b, "value").unwrap()
    };
    let sector = PublicSector {
        id: proofs[0].sector_id,
        comm_r: proofs[0].comm_r,
    };
    let mut public_inputs = PublicInputs {
        randomness: safe(&input.randomness),
        prover_id: safe(&input.prover_id),
        sectors: vec![sector.clone()],
        k: None,
    };
    let params = FallbackPoSt::<Tree>::setup(&winning_post_setup_params(&config).unwrap()).unwrap();
    let Ok(partitions) = partition_vanilla_proofs(&config, &params, &public_inputs, 1, &proofs)
    else {
        return false;
    };
    assert_eq!(partitions[0].sectors.len(), config.challenge_count);
    public_inputs.sectors = vec![sector; params.sector_count];
    FallbackPoSt::<Tree>::verify_all_partitions(&params, &public_inputs, &partitions)
        .unwrap_or(false)
}

/// The fixture through this crate's prover on `devices` simulated host
/// devices: the PoSt proof bytes.
fn prove(input: &PostInput, job: PostJob, devices: u32) -> Vec<u8> {
    let prover = host_prover(devices, BlindingSource::Random);
    prove_post_bytes(
        &prover,
        input.size,
        job,
        input.randomness,
        input.prover_id,
        &input.vanilla_proofs,
    )
    .expect("PoSt of the test fixture")
    .proof
}

/// The 2 KiB Winning PoSt fixture through this crate's prover (host
/// backend, TEST parameters): `verify_winning_post` accepts the proof for
/// the fixture's sector, randomness and prover id, and rejects it for
/// other randomness.
#[test]
fn test_post_2kib_winning_is_proved_and_accepted_by_verify_winning_post() {
    test_params(&[TestCircuit::WinningPost(SectorSize::KIB_2)]);
    let post = fixture(PostKind::Winning, SectorSize::KIB_2, 1);
    let input = &post.input;
    assert_eq!(post.challenges_per_sector, 66);
    let proof = prove(input, PostJob::Winning, 1);
    let config = post_config(SectorSize::KIB_2, PostKind::Winning).unwrap();
    let verify = |randomness: &[u8; 32]| {
        verify_winning_post::<SectorShape2KiB>(
            &config,
            randomness,
            &input.replicas().unwrap(),
            input.prover_id,
            &proof,
        )
        .unwrap_or(false)
    };
    assert!(verify(&input.randomness), "verify_winning_post rejects it");
    let mut other = input.randomness;
    other[0] ^= 1;
    assert!(!verify(&other), "accepted for other randomness");
}

/// Three 2 KiB sectors make two Window PoSt partitions (two sectors a
/// partition at 2 KiB): both proved, and `verify_window_post` accepts the
/// bytes for the fixture's sectors, and rejects them with one sector's
/// comm_r taken from another.
#[test]
fn test_post_2kib_window_of_two_partitions_is_accepted_by_verify_window_post() {
    test_params(&[TestCircuit::WindowPost(SectorSize::KIB_2)]);
    let post = fixture(PostKind::Window, SectorSize::KIB_2, 3);
    let input = &post.input;
    assert_eq!(input.sectors.len(), 3);
    assert!(
        input
            .sectors
            .windows(2)
            .all(|w| w[0].sector_id < w[1].sector_id),
        "sectors in ascending order, as Window PoSt takes them"
    );
    let proof = prove(input, PostJob::Window, 2);
    assert_eq!(proof.len(), 2 * 192, "two partitions");
    let config = post_config(SectorSize::KIB_2, PostKind::Window).unwrap();
    let verify = |replicas: &BTreeMap<SectorId, PublicReplicaInfo>| {
        verify_window_post::<SectorShape2KiB>(
            &config,
            &input.randomness,
            replicas,
            input.prover_id,
            &proof,
        )
        .unwrap_or(false)
    };
    let mut map: BTreeMap<_, _> = input.replicas().unwrap().into_iter().collect();
    assert!(verify(&map), "verify_window_post rejects it");
    let first = SectorId::from(input.sectors[0].sector_id);
    map.insert(
        first,
        PublicReplicaInfo::new(input.sectors[2].comm_r).unwrap(),
    );
    assert!(!verify(&map), "accepted with another sector's comm_r");
}

/// A 32 GiB Winning PoSt input (66 openings through the 8-ary base and
/// sub-tree levels) builds and passes the vanilla checks in seconds, and
/// filecoin-proofs' own partitioning check accepts it.
#[test]
fn test_post_32gib_winning_builds_in_seconds_and_its_vanilla_proofs_verify() {
    let t = Instant::now();
    let post = fixture(PostKind::Winning, size_32gib(), 1);
    let total = t.elapsed();
    eprintln!(
        "32 GiB test Winning PoSt: {} vanilla proof bytes in {:.2} s (build {:.2} s, check {:.2} s)",
        post.input.vanilla_proofs[0].len(),
        total.as_secs_f64(),
        post.build.as_secs_f64(),
        post.verify.as_secs_f64()
    );
    assert!(
        total.as_secs() < 30,
        "a 32 GiB Winning PoSt input took {total:?}"
    );
    let proofs = decode::<SectorShape32GiB>(&post.input);
    let sector = &proofs[0].vanilla_proof.sectors[0];
    assert_eq!(sector.inclusion_proofs.len(), 66);
    // 2^30 leaves: nine 8-ary base levels, then the sub-tree's 8-ary level.
    assert_eq!(sector.inclusion_proofs[0].path().len(), 10);
    assert!(filecoin_proofs_accepts_winning::<SectorShape32GiB>(
        &post.input
    ));
    verify_post_vanilla(&post.input).expect("the crate's vanilla check");
}

#[test]
fn test_post_same_seed_same_bytes() {
    for (kind, size, n) in [
        (PostKind::Winning, SectorSize::KIB_2, 1),
        (PostKind::Window, SectorSize::KIB_2, 3),
        (PostKind::Winning, size_32gib(), 1),
    ] {
        let a = fixture(kind, size, n).input;
        let b = fixture(kind, size, n).input;
        assert_eq!(a.to_json(true).unwrap(), b.to_json(true).unwrap());
        let other = generate_test_post(kind, size, SEED + 1, n).unwrap().input;
        assert_ne!(a.vanilla_proofs, other.vanilla_proofs);
        assert_ne!(a.randomness, other.randomness);
    }
}

/// Flips the lowest bit of the first copy of `value` in `bytes` (a
/// canonical field element stays one).
fn flip_at(bytes: &[u8], value: &[u8]) -> Vec<u8> {
    let at = bytes
        .windows(value.len())
        .position(|w| w == value)
        .expect("the value is in the encoding");
    let mut out = bytes.to_vec();
    out[at] ^= 1;
    out
}

/// A vanilla proof with a flipped path sibling, challenged leaf, comm_c or
/// comm_r is refused by the vanilla check (a `VanillaProofs` error), as
/// are untouched proofs for other randomness (the challenges follow from
/// the randomness and the sector number alone); the untouched fixture
/// passes it.
#[test]
fn test_post_tampered_vanilla_proof_is_refused() {
    for size in [SectorSize::KIB_2, size_32gib()] {
        let post = fixture(PostKind::Winning, size, 1);
        let input = &post.input;
        verify_post_vanilla(input).expect("the untouched fixture passes");
        let proofs = match size {
            s if s == SectorSize::KIB_2 => {
                let p = &decode::<SectorShape2KiB>(input)[0];
                let s = &p.vanilla_proof.sectors[0];
                let i = &s.inclusion_proofs;
                vec![
                    ("a path sibling", i[5].path()[1].0[0].into_bytes()),
                    ("a challenged leaf", i[0].leaf().into_bytes()),
                    ("comm_c", s.comm_c.into_bytes()),
                    ("comm_r", p.comm_r.into_bytes()),
                ]
            }
            _ => {
                let p = &decode::<SectorShape32GiB>(input)[0];
                let s = &p.vanilla_proof.sectors[0];
                let i = &s.inclusion_proofs;
                vec![
                    // The sub-tree level's sibling (the path's last).
                    ("a sub-tree sibling", i[7].path()[9].0[3].into_bytes()),
                    ("a base sibling", i[3].path()[4].0[6].into_bytes()),
                    ("a challenged leaf", i[65].leaf().into_bytes()),
                    ("comm_r", p.comm_r.into_bytes()),
                ]
            }
        };
        for (what, value) in proofs {
            let mut bad = input.clone();
            bad.vanilla_proofs[0] = flip_at(&input.vanilla_proofs[0], &value);
            match verify_post_vanilla(&bad) {
                Err(FilecoinError::VanillaProofs(_)) => {}
                other => panic!("{size}: {what} flipped: {other:?}"),
            }
        }
        let mut other = input.clone();
        other.randomness[3] ^= 0x10;
        assert!(
            matches!(
                verify_post_vanilla(&other),
                Err(FilecoinError::VanillaProofs(_))
            ),
            "{size}: other randomness"
        );
    }
}

/// A Winning PoSt is of one sector; a Window PoSt of at least one.
#[test]
fn test_post_sector_counts_are_checked() {
    for (kind, n) in [
        (PostKind::Winning, 2),
        (PostKind::Winning, 0),
        (PostKind::Window, 0),
    ] {
        match generate_test_post(kind, SectorSize::KIB_2, SEED, n) {
            Err(FilecoinError::Input(m)) => assert!(m.contains("sector"), "{m}"),
            other => panic!("{kind} of {n} sectors: {other:?}"),
        }
    }
}

/// The file reads back as the same input; a sector whose number or comm_r
/// is not its vanilla proof's, a proof that is not base64 or does not
/// decode, a short randomness and an unknown kind are refused with the
/// reason.
#[test]
fn test_post_file_reads_back_and_mismatches_are_refused() {
    let post = fixture(PostKind::Window, SectorSize::KIB_2, 3);
    let json = post.input.to_json(true).unwrap();
    assert_eq!(PostInput::parse(&json).unwrap(), post.input);
    let edit = |f: &dyn Fn(&mut serde_json::Value)| {
        let mut v: serde_json::Value = serde_json::from_slice(&json).unwrap();
        f(&mut v);
        PostInput::parse(&serde_json::to_vec(&v).unwrap())
    };
    type Edit = Box<dyn Fn(&mut serde_json::Value)>;
    let cases: Vec<(&str, Edit, &str)> = vec![
        (
            "another sector number",
            Box::new(|v| {
                let id = v["sectors"][1]["sector_id"].as_u64().unwrap();
                v["sectors"][1]["sector_id"] = (id + 1).into();
            }),
            "its vanilla proof is of sector",
        ),
        (
            "another sector's comm_r",
            Box::new(|v| v["sectors"][0]["comm_r"] = v["sectors"][2]["comm_r"].clone()),
            "its vanilla proof is of sector",
        ),
        (
            "a proof that is not base64",
            Box::new(|v| v["sectors"][2]["vanilla_proof"] = "not base64!".into()),
            "not base64",
        ),
        (
            "a truncated vanilla proof",
            Box::new(|v| {
                let b = v["sectors"][0]["vanilla_proof"].as_str().unwrap();
                v["sectors"][0]["vanilla_proof"] = b[..b.len() / 2 / 4 * 4].into();
            }),
            "PoSt vanilla proof 0",
        ),
        (
            "a short randomness",
            Box::new(|v| v["randomness"] = "00ff".into()),
            "not 32 bytes of hex",
        ),
        (
            "an unknown kind",
            Box::new(|v| v["kind"] = "window-partition".into()),
            "not a PoSt kind",
        ),
    ];
    for (what, f, expect) in cases {
        match edit(&*f) {
            Err(e) => assert!(e.to_string().contains(expect), "{what}: {e}"),
            Ok(_) => panic!("{what} was read"),
        }
    }
}

/// The CLI writes the library's fixture as the file `PostInput` reads,
/// the same bytes for the same seed, and refuses a Winning PoSt of two
/// sectors before writing anything.
#[test]
fn test_post_cli_writes_the_fixture_file() {
    let dir =
        std::env::temp_dir().join(format!("cuda-prover-test-post-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = |name: &str| dir.join(name).to_string_lossy().into_owned();
    let seed = SEED.to_string();
    let run = |name: &str, extra: &[&str]| {
        let p = path(name);
        let mut args = vec!["--sector-size", "2KiB", "--seed", &seed, "--out", &p];
        args.extend_from_slice(extra);
        let out = filecoin_cli("test-post", &args);
        (out, p)
    };
    let (out, a) = run("a.json", &["--kind", "window", "--sectors", "3"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("built in") && stdout.contains("checked"),
        "{stdout}"
    );
    let (_, b) = run("b.json", &["--kind", "window", "--sectors", "3"]);
    let bytes = std::fs::read(&a).unwrap();
    assert_eq!(bytes, std::fs::read(&b).unwrap(), "same seed, same bytes");
    let post = fixture(PostKind::Window, SectorSize::KIB_2, 3);
    assert_eq!(bytes, post.input.to_json(true).unwrap());
    assert_eq!(
        PostInput::read(std::path::Path::new(&a)).unwrap(),
        post.input
    );
    let v: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(v["test_fixture"], serde_json::Value::Bool(true));

    let (out, refused) = run("c.json", &["--kind", "winning", "--sectors", "2"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("proves 1 sector"), "{err}");
    assert!(!std::path::Path::new(&refused).exists());
    let _ = std::fs::remove_dir_all(&dir);
}
