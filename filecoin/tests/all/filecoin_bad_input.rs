//! Bad C1 input: each case is a clear error before any proving, never a
//! proof that fails verification later. No parameters are needed: every
//! check runs before the proving key is loaded.

use crate::common;

use base64::Engine as _;
use cuda_prover_filecoin::c1::{C1File, Expected};
use cuda_prover_filecoin::c2::c2_from_bytes;
use cuda_prover_filecoin::{FilecoinError, FilecoinProver, SectorSize};
use cuda_prover_groth16::BlindingSource;
use serde_json::Value;

use common::{host_prover, registered_2kib, sealed_2kib, sealed_4kib};

fn prover() -> FilecoinProver {
    host_prover(1, BlindingSource::Random)
}

fn expect_2kib() -> Expected {
    Expected {
        size: Some(SectorSize::KIB_2),
        ..Default::default()
    }
}

fn c2_err(bytes: &[u8], prover_id: [u8; 32], sector_id: u64, expected: &Expected) -> FilecoinError {
    match c2_from_bytes(&prover(), bytes, expected, prover_id, sector_id) {
        Ok(_) => panic!("bad input produced a proof"),
        Err(e) => {
            eprintln!("error (as expected): {e}");
            e
        }
    }
}

#[test]
fn truncated_c1_is_an_input_error() {
    let s = sealed_2kib();
    for cut in [s.c1_json.len() / 2, s.c1_json.len() - 1, 10] {
        let e = c2_err(&s.c1_json[..cut], s.prover_id, s.sector_id, &expect_2kib());
        assert!(
            matches!(&e, FilecoinError::Input(m) if m.contains("truncated")),
            "cut at {cut}: {e}"
        );
    }
}

/// Flips the lowest bit of the first 32-byte value (a hash, a label, a
/// leaf) inside the first vanilla proof: still a valid field element.
fn flip_first_hash(v: &mut Value) -> bool {
    match v {
        Value::Array(a) if a.len() == 32 && a.iter().all(Value::is_u64) => {
            let b = a[0].as_u64().unwrap_or(0) ^ 1;
            a[0] = Value::from(b);
            true
        }
        Value::Array(a) => a.iter_mut().any(flip_first_hash),
        Value::Object(m) => m.values_mut().any(flip_first_hash),
        _ => false,
    }
}

#[test]
fn tampered_vanilla_proof_is_rejected_before_proving() {
    let s = sealed_2kib();
    let mut v: Value = serde_json::from_slice(&s.c1_json).unwrap();
    for field in [
        "comm_d_proofs",
        "comm_r_last_proof",
        "replica_column_proofs",
        "labeling_proofs",
    ] {
        let mut t = v.clone();
        let proof = &mut t["vanilla_proofs"][0][0][field];
        assert!(flip_first_hash(proof), "no hash found in {field}");
        let bytes = serde_json::to_vec(&t).unwrap();
        let e = c2_err(&bytes, s.prover_id, s.sector_id, &expect_2kib());
        assert!(
            matches!(e, FilecoinError::VanillaProofs(_)),
            "{field} tampered: {e}"
        );
    }
    // The untampered file passes the same checks (no false alarm): parse
    // and resolve succeed.
    let bytes = serde_json::to_vec(&v.take()).unwrap();
    let f = C1File::parse(&bytes).unwrap();
    assert_eq!(f.resolve(&expect_2kib()).unwrap(), registered_2kib());
}

#[test]
fn c1_of_another_sector_size_is_a_sector_size_error() {
    let s4 = sealed_4kib();
    // Asked for 2 KiB, given a 4 KiB sector's C1.
    let e = c2_err(&s4.c1_json, s4.prover_id, s4.sector_id, &expect_2kib());
    assert!(
        matches!(&e, FilecoinError::SectorSize(m) if m.contains("4KiB") && m.contains("2KiB")),
        "{e}"
    );
    // The lotus-bench wrapper says 2 KiB, the proofs are 4 KiB.
    let wrapper = serde_json::json!({
        "SectorNum": s4.sector_id,
        "Phase1Out": base64::engine::general_purpose::STANDARD.encode(&s4.c1_json),
        "SectorSize": 2048u64,
    });
    let bytes = serde_json::to_vec(&wrapper).unwrap();
    let e = c2_err(&bytes, s4.prover_id, s4.sector_id, &Expected::default());
    assert!(matches!(e, FilecoinError::SectorSize(_)), "{e}");
}

#[test]
fn wrong_prover_id_or_sector_id_is_an_identity_error() {
    let s = sealed_2kib();
    let mut other = s.prover_id;
    other[0] ^= 1;
    let e = c2_err(&s.c1_json, other, s.sector_id, &expect_2kib());
    assert!(matches!(e, FilecoinError::Identity(_)), "{e}");
    let e = c2_err(&s.c1_json, s.prover_id, s.sector_id + 1, &expect_2kib());
    assert!(matches!(e, FilecoinError::Identity(_)), "{e}");
}

#[test]
fn lotus_wrapper_and_api_form_read_as_the_plain_form() {
    let s = sealed_2kib();
    let plain = C1File::parse(&s.c1_json).unwrap();
    assert_eq!(plain.proofs_size, Some(SectorSize::KIB_2));

    // filecoin-proofs-api's form: registered_proof and vanilla proofs
    // under their shape's name.
    let mut api: Value = serde_json::from_slice(&s.c1_json).unwrap();
    let proofs = api["vanilla_proofs"].take();
    api["vanilla_proofs"] = serde_json::json!({ "StackedDrg2KiBV1": proofs });
    api["registered_proof"] = Value::from("StackedDrg2KiBV1_1");
    let api_bytes = serde_json::to_vec(&api).unwrap();
    let wrapper = serde_json::json!({
        "SectorNum": s.sector_id,
        "Phase1Out": base64::engine::general_purpose::STANDARD.encode(&api_bytes),
        "SectorSize": 2048u64,
    });
    let wrapper_bytes = serde_json::to_vec(&wrapper).unwrap();
    let w = C1File::parse(&wrapper_bytes).unwrap();
    assert_eq!(w.sector_num, Some(s.sector_id));
    assert_eq!(w.registered, Some(registered_2kib()));
    assert_eq!(w.resolve(&Expected::default()).unwrap(), registered_2kib());
    let a = w
        .output::<filecoin_proofs::constants::SectorShape2KiB>()
        .unwrap();
    let p = plain
        .output::<filecoin_proofs::constants::SectorShape2KiB>()
        .unwrap();
    assert_eq!(
        serde_json::to_vec(&a).unwrap(),
        serde_json::to_vec(&p).unwrap()
    );

    // The wrapper's sector number must be the sector being proved.
    let e = c2_err(
        &serde_json::to_vec(&wrapper).unwrap(),
        s.prover_id,
        s.sector_id + 1,
        &Expected::default(),
    );
    assert!(matches!(e, FilecoinError::Identity(_)), "{e}");
    // An unknown registered proof is refused.
    api["registered_proof"] = Value::from("StackedDrg2KiBV9");
    assert!(C1File::parse(&serde_json::to_vec(&api).unwrap()).is_err());
}

/// A C1 file larger than 256 MiB is refused before it is read (a sparse
/// file of 300 MB), a stream without end (`/dev/zero`) is read only up to
/// the limit, and a directory is named as one.
#[test]
fn oversized_or_endless_c1_files_are_refused_with_bounded_reads() {
    use cuda_prover_filecoin::c1::{read_c1_file, MAX_C1_BYTES};
    let dir = std::env::temp_dir().join(format!("cp-fc-c1-size-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let sparse = dir.join("sparse.json");
    std::fs::File::create(&sparse)
        .unwrap()
        .set_len(300_000_000)
        .unwrap();
    let e = read_c1_file(&sparse).unwrap_err().to_string();
    assert!(
        e.contains("300000000 bytes") && e.contains("256 MiB"),
        "{e}"
    );
    if std::path::Path::new("/dev/zero").exists() {
        let e = read_c1_file(std::path::Path::new("/dev/zero"))
            .unwrap_err()
            .to_string();
        assert!(e.contains(&format!("more than {MAX_C1_BYTES}")), "{e}");
    }
    let e = read_c1_file(&dir).unwrap_err().to_string();
    assert!(e.contains("is a directory"), "{e}");
    let small = dir.join("small.json");
    std::fs::write(&small, b"{}").unwrap();
    assert_eq!(read_c1_file(&small).unwrap(), b"{}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Every number of `v` set to 0: the C1 output's layout with nothing in it.
fn zero_all(v: &mut Value) {
    match v {
        Value::Number(_) => *v = Value::from(0u64),
        Value::Array(a) => a.iter_mut().for_each(zero_all),
        Value::Object(m) => m.values_mut().for_each(zero_all),
        _ => {}
    }
}

/// An all-zero or structurally empty C1 output is refused when it is
/// parsed (and resolved against the sector's partition count), before
/// anything else runs, with what is empty named.
#[test]
fn empty_or_all_zero_c1_is_refused_at_parse() {
    let s = sealed_2kib();
    let v: Value = serde_json::from_slice(&s.c1_json).unwrap();
    let parse_err = |v: &Value| {
        let bytes = serde_json::to_vec(v).unwrap();
        match C1File::parse(&bytes).and_then(|f| f.resolve(&expect_2kib())) {
            Ok(r) => panic!("an empty C1 output resolved to {r}"),
            Err(e) => e.to_string(),
        }
    };
    let mut zero = v.clone();
    zero_all(&mut zero);
    let e = parse_err(&zero);
    assert!(
        e.contains("comm_d, comm_r, replica_id, seed are all zero"),
        "{e}"
    );
    for field in ["comm_d", "comm_r", "replica_id", "seed"] {
        let mut t = v.clone();
        zero_all(&mut t[field]);
        let e = parse_err(&t);
        assert!(e.contains(&format!("{field} is all zero")), "{field}: {e}");
    }
    let mut t = v.clone();
    t["vanilla_proofs"] = serde_json::json!([]);
    assert!(parse_err(&t).contains("no vanilla proofs"));
    let mut t = v.clone();
    t["vanilla_proofs"] = serde_json::json!([[]]);
    assert!(parse_err(&t).contains("partition 0"));
    let mut t = v.clone();
    let p = t["vanilla_proofs"][0].clone();
    t["vanilla_proofs"] = serde_json::json!([p, p]);
    let e = parse_err(&t);
    assert!(e.contains("2 partitions") && e.contains("has 1"), "{e}");
    // The real output passes the same checks.
    let f = C1File::parse(&s.c1_json).unwrap();
    assert_eq!(f.resolve(&expect_2kib()).unwrap(), registered_2kib());
    // c2 stops there too, before any proving.
    let e = c2_err(
        &serde_json::to_vec(&zero).unwrap(),
        s.prover_id,
        s.sector_id,
        &expect_2kib(),
    );
    assert!(matches!(e, FilecoinError::Input(_)), "{e}");
}
