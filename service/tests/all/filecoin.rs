//! Filecoin C2 jobs through the daemon (host backend, two simulated
//! devices, 2 KiB TEST parameters): the proof a client gets back passes
//! filecoin-proofs' `verify_seal`; malformed and tampered C1 outputs are
//! clear errors and the daemon keeps serving.
#![cfg(feature = "filecoin")]

use crate::common;

use std::path::PathBuf;
use std::sync::OnceLock;

use common::{client, start, temp_dir};
use cuda_prover_filecoin::sealing::{seal_test_sector, verify_commit, SealedSector};
use cuda_prover_filecoin::test_params::TestCircuit;
use cuda_prover_filecoin::{RegisteredSeal, SealVersion, SectorSize};
use cuda_prover_service::{proto, ClientError};
use serde_json::Value;

fn registered_2kib() -> RegisteredSeal {
    RegisteredSeal::new(SectorSize::KIB_2, SealVersion::V1_1)
}

/// The TEST parameter directory (2 KiB PoRep parameters, made once).
fn c2_params() -> PathBuf {
    common::filecoin::test_params(&[TestCircuit::Porep(SectorSize::KIB_2)])
}

fn sealed() -> &'static SealedSector {
    static S: OnceLock<SealedSector> = OnceLock::new();
    S.get_or_init(|| {
        c2_params();
        seal_test_sector(registered_2kib(), &temp_dir("fc-sector"), 7).expect("sealing 2 KiB")
    })
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn c2_job(c1_output: Vec<u8>) -> proto::SubmitRequest {
    let s = sealed();
    proto::SubmitRequest {
        job: Some(proto::submit_request::Job::FilecoinC2(
            proto::FilecoinC2Job {
                c1_output,
                prover_id: hex(&s.prover_id),
                sector_id: s.sector_id,
                sector_size: 2048,
                registered_proof: String::new(),
            },
        )),
        ..Default::default()
    }
}

fn verify(proof: &[u8]) -> bool {
    verify_commit(sealed(), proof).unwrap_or(false)
}

/// Flips the lowest bit of the first 32-byte value inside `v`.
fn flip_first_hash(v: &mut Value) -> bool {
    match v {
        Value::Array(a) if a.len() == 32 && a.iter().all(Value::is_u64) => {
            a[0] = Value::from(a[0].as_u64().unwrap_or(0) ^ 1);
            true
        }
        Value::Array(a) => a.iter_mut().any(flip_first_hash),
        Value::Object(m) => m.values_mut().any(flip_first_hash),
        _ => false,
    }
}

/// Each kind of job has its own limit on the request's size: a Filecoin
/// C2 request above its limit is refused by its size (naming the kind and
/// the limit) even where the decoder admits it for the built-in jobs'
/// larger limit; below it, its content is checked. The default C2 limit is
/// 64 MiB, a built-in job's 64 KiB.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_size_limits_are_per_kind() {
    let defaults = cuda_prover_service::ServiceConfig::default();
    assert_eq!(defaults.max_filecoin_request_bytes, 64 << 20);
    assert_eq!(defaults.max_request_bytes, 64 << 10);
    let d = start(1, |c| {
        c.max_request_bytes = 4 << 20;
        c.max_filecoin_request_bytes = 1 << 20;
    })
    .await;
    let cl = client(&d).await;
    let c2 = |len: usize| proto::SubmitRequest {
        job: Some(proto::submit_request::Job::FilecoinC2(
            proto::FilecoinC2Job {
                c1_output: vec![b' '; len],
                prover_id: "01".into(),
                sector_id: 1,
                sector_size: 2048,
                registered_proof: String::new(),
            },
        )),
        ..Default::default()
    };
    let e = cl
        .submit(c2(2 << 20))
        .await
        .expect_err("a 2 MiB C2 request");
    let ClientError::Rpc(st) = &e else {
        panic!("expected an RPC error, got {e}")
    };
    assert_eq!(st.code(), tonic::Code::OutOfRange, "{e}");
    assert!(
        st.message().contains("for a Filecoin C2 job") && st.message().contains("(1 MiB)"),
        "{e}"
    );
    // Within the limit, the C1 output itself is what is wrong.
    let e = cl.submit(c2(1000)).await.expect_err("a blank C1 output");
    let ClientError::Rpc(st) = &e else {
        panic!("expected an RPC error, got {e}")
    };
    assert_eq!(st.code(), tonic::Code::InvalidArgument, "{e}");
    assert!(st.message().contains("C1 output"), "{e}");
}

/// Every number of `v` set to 0.
fn zero_all(v: &mut Value) {
    match v {
        Value::Number(_) => *v = Value::from(0u64),
        Value::Array(a) => a.iter_mut().for_each(zero_all),
        Value::Object(m) => m.values_mut().for_each(zero_all),
        _ => {}
    }
}

/// An all-zero or structurally empty C1 output is refused at submission
/// (INVALID_ARGUMENT, saying what is empty), not queued to fail later.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn empty_or_all_zero_c1_outputs_are_refused_at_submit() {
    let s = sealed();
    let d = start(1, |c| c.filecoin_test_params = Some(c2_params())).await;
    let cl = client(&d).await;
    let v: Value = serde_json::from_slice(&s.c1_json).unwrap();
    let mut zero = v.clone();
    zero_all(&mut zero);
    let mut no_proofs = v.clone();
    no_proofs["vanilla_proofs"] = serde_json::json!([]);
    let mut empty_partition = v.clone();
    empty_partition["vanilla_proofs"] = serde_json::json!([[]]);
    for (what, bad, says) in [
        ("all-zero", zero, "all zero"),
        ("no proofs", no_proofs, "no vanilla proofs"),
        ("empty partition", empty_partition, "partition 0"),
    ] {
        let e = cl
            .submit(c2_job(serde_json::to_vec(&bad).unwrap()))
            .await
            .expect_err(what);
        let ClientError::Rpc(st) = &e else {
            panic!("{what}: expected an RPC error, got {e}")
        };
        assert_eq!(st.code(), tonic::Code::InvalidArgument, "{what}: {e}");
        assert!(st.message().contains(says), "{what}: {e}");
    }
    let st = cl.status().await.unwrap();
    assert!(st.queued.is_empty() && st.running.is_empty());
}

/// The CLI end to end, against a daemon process on two simulated devices:
/// `serve --filecoin-test-params`, `submit --filecoin-c2` (again with the
/// same `--request-id`: the same job's id), `await --proof-out`. Before the
/// C2, malformed and tampered C1 outputs are clear errors through the
/// client and the daemon keeps serving; the C2 job runs at C2 priority, and
/// the proof (the file the CLI wrote, the same bytes the client gets back)
/// passes filecoin-proofs' `verify_seal` and fails it with a bit flipped.
#[test]
fn cli_submits_a_c2_job_that_proves_and_bad_c1_outputs_are_clear_errors() {
    use common::process::{serve_cmd, spawn, BIN};
    use std::process::Command;

    let s = sealed();
    let dir = temp_dir("fc-cli");
    let c1 = dir.join("c1.json");
    std::fs::write(&c1, &s.c1_json).unwrap();
    let mut cmd = serve_cmd("127.0.0.1:0", 2);
    cmd.arg("--filecoin-test-params")
        .arg(c2_params())
        .arg("--params-dir")
        .arg(dir.join("params"));
    let mut daemon = spawn(cmd, Some(&dir.join("daemon.log")));
    let addr = daemon.addr.clone();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let cl = rt
        .block_on(cuda_prover_service::Client::connect(&addr, None))
        .unwrap();

    // Malformed C1 output: refused at submission, with the reason.
    let e = rt
        .block_on(cl.submit(c2_job(b"{\"not\": \"a C1 output\"".to_vec())))
        .expect_err("malformed C1 output");
    let ClientError::Rpc(st) = &e else {
        panic!("expected an RPC error, got {e}")
    };
    assert_eq!(st.code(), tonic::Code::InvalidArgument, "{e}");
    assert!(st.message().contains("C1 output"), "{e}");

    // A wrong sector size is refused at submission too.
    let mut wrong = c2_job(s.c1_json.clone());
    if let Some(proto::submit_request::Job::FilecoinC2(j)) = &mut wrong.job {
        j.sector_size = 4096;
    }
    let e = rt
        .block_on(cl.submit(wrong))
        .expect_err("wrong sector size");
    assert!(e.to_string().contains("sector size"), "{e}");

    // Tampered vanilla proofs parse, then fail the job before proving:
    // filecoin-proofs' check rejects them.
    let mut v: Value = serde_json::from_slice(&s.c1_json).unwrap();
    assert!(flip_first_hash(
        &mut v["vanilla_proofs"][0][0]["comm_r_last_proof"]
    ));
    let id = rt
        .block_on(cl.submit(c2_job(serde_json::to_vec(&v).unwrap())))
        .unwrap();
    let out = rt.block_on(cl.await_job(&id, |_, _, _| {})).unwrap();
    assert_eq!(out.state, "failed", "{}", out.error);
    assert!(!out.verified && out.proofs.is_empty());
    assert!(
        out.error.contains("vanilla proofs rejected"),
        "{}",
        out.error
    );

    // The daemon keeps serving: the real C1 output, submitted by the CLI,
    // proves.
    let run = |args: &[&str]| {
        Command::new(BIN)
            .args(args)
            .args(["--server", &addr])
            .output()
            .unwrap()
    };
    let sector_id = s.sector_id.to_string();
    let prover_id = hex(&s.prover_id);
    let submit = [
        "submit",
        "--filecoin-c2",
        c1.to_str().unwrap(),
        "--prover-id",
        &prover_id,
        "--sector-id",
        &sector_id,
        "--sector-size",
        "2KiB",
        "--request-id",
        "c2-cli",
    ];
    let out = run(&submit);
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8(out.stdout).unwrap();
    let id = stdout.lines().last().unwrap().trim().to_string();
    // At C2 priority.
    let st = rt.block_on(cl.status()).unwrap();
    let mine = st
        .queued
        .iter()
        .chain(&st.running)
        .find(|j| j.job_id == id)
        .map(|j| j.priority);
    assert!(mine.is_none() || mine == Some(100), "{mine:?}");
    let again = run(&submit);
    assert!(again.status.success(), "{again:?}");
    assert_eq!(
        String::from_utf8(again.stdout).unwrap().lines().last(),
        Some(id.as_str()),
        "the same request id, the same job"
    );
    let proof_file = dir.join("c2.proof");
    let out = run(&["await", &id, "--proof-out", proof_file.to_str().unwrap()]);
    assert!(out.status.success(), "{out:?}");
    let proof = std::fs::read(&proof_file).unwrap();
    // The bytes pass filecoin-proofs' verifier (and fail it with one bit
    // flipped: the check is not vacuous).
    assert!(verify(&proof), "verify_seal rejected the CLI's proof");
    let mut bad = proof.clone();
    bad[10] ^= 1;
    assert!(!verify(&bad));
    // The client gets the same proof back, with the job's report.
    let out = rt.block_on(cl.await_job(&id, |_, _, _| {})).unwrap();
    assert!(out.ok(), "{}: {}", out.state, out.error);
    assert_eq!(out.proofs.len(), 1);
    assert_eq!(out.proofs[0], proof, "the client's proof is the CLI's");
    assert_eq!(proof.len() % 192, 0);
    let report: Value = serde_json::from_str(&out.report_json).unwrap();
    assert!(report["per_partition"]
        .as_array()
        .is_some_and(|p| !p.is_empty()));
    let st = rt.block_on(cl.status()).unwrap();
    let proved: u64 = st.devices.iter().map(|d| d.partitions).sum();
    assert_eq!(
        proved,
        registered_2kib().porep_config().unwrap().partitions.0 as u64
    );
    // The request id with other options: a clear error.
    let mut other = submit.to_vec();
    other.extend(["--priority", "150"]);
    let out = run(&other);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("other inputs"),
        "{out:?}"
    );
    // A malformed file: submit fails with a clear message.
    let bad = dir.join("bad.json");
    std::fs::write(&bad, b"not json").unwrap();
    let out = run(&[
        "submit",
        "--filecoin-c2",
        bad.to_str().unwrap(),
        "--prover-id",
        "01",
        "--sector-id",
        "1",
    ]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("C1 output"),
        "{out:?}"
    );
    let _ = run(&["shutdown", "--now"]);
    let _ = daemon.child.wait();
}
