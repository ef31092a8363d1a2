//! Failed and cancelled jobs carry their `JobState` and `ErrorCode` on the
//! cuda_prover.v1 wire, one code per cause; refused calls take their gRPC
//! status from the same codes.

use crate::common;

use std::time::Duration;

use common::{client, job, slow_partitions, start, start_with_params, temp_dir};
use cuda_prover_groth16::key_store::shape_path;
use cuda_prover_groth16::params::key_path;
use cuda_prover_pipeline::circuits::{BuiltIn, Kind};
use cuda_prover_pipeline::{shape_file, ProvingKey};
use cuda_prover_service::proto::{self, ErrorCode, JobState};
use cuda_prover_service::ClientError;

fn witness_job(seed: u64) -> proto::SubmitRequest {
    let mut j = job("chain", 7, 1, seed, 0);
    if let Some(proto::submit_request::Job::BuiltIn(b)) = &mut j.job {
        b.synthesis = "witness".into();
    }
    j
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_unsatisfied_witness_and_a_corrupt_key_fail_with_their_codes() {
    let params = temp_dir("codes-unsat");
    let c = BuiltIn::new(Kind::Chain, 7, 0).unwrap();
    {
        // A first job writes the key and its shape; done jobs carry no code.
        let d = start_with_params(1, params.clone(), |_| {}).await;
        let out = client(&d)
            .await
            .prove(witness_job(1), |_, _, _| {})
            .await
            .unwrap();
        assert!(out.ok(), "{out:?}");
        assert_eq!(out.job_state, JobState::Done, "{out:?}");
        assert_eq!(out.error_code, ErrorCode::Unspecified, "{out:?}");
    }
    // The shape with the sign of one coefficient of c flipped (codes 0 and
    // 1 are +1 and -1): it still fits the key, but the circuit's witness no
    // longer satisfies a * b = c on that row.
    let key = ProvingKey::from_file(&key_path(&params, &c)).unwrap();
    let path = shape_path(&key_path(&params, &c));
    let mut forged = shape_file::load(&path, &key).unwrap();
    let n = forged.c.entries.len();
    let e = forged
        .c
        .entries
        .iter_mut()
        .find(|e| e.coeff < 2)
        .unwrap_or_else(|| panic!("no entry of c is +1 or -1 ({n} entries)"));
    e.coeff ^= 1;
    shape_file::save(&forged, &key, &path).unwrap();
    let d = start_with_params(1, params.clone(), |_| {}).await;
    let unsat = client(&d)
        .await
        .prove(witness_job(2), |_, _, _| {})
        .await
        .unwrap();
    assert_eq!(unsat.state, "failed", "{unsat:?}");
    assert_eq!(unsat.job_state, JobState::Failed, "{unsat:?}");
    assert_eq!(unsat.error_code, ErrorCode::UnsatisfiedWitness, "{unsat:?}");
    assert!(unsat.error.contains("constraint"), "{}", unsat.error);
    drop(d);

    // A params file that is not one: the key is invalid, not the input.
    let bad = temp_dir("codes-key");
    std::fs::write(key_path(&bad, &c), [0x5a; 4096]).unwrap();
    let d = start_with_params(1, bad.clone(), |_| {}).await;
    let out = client(&d)
        .await
        .prove(job("chain", 7, 1, 3, 0), |_, _, _| {})
        .await
        .unwrap();
    assert_eq!(out.state, "failed", "{out:?}");
    assert_eq!(out.job_state, JobState::Failed, "{out:?}");
    assert_eq!(out.error_code, ErrorCode::KeyInvalid, "{out:?}");
    assert!(out.error.contains("delete the file"), "{}", out.error);
    assert_ne!(out.error_code, unsat.error_code);
    let _ = std::fs::remove_dir_all(&params);
    let _ = std::fs::remove_dir_all(&bad);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn bad_input_memory_deadline_and_cancel_have_their_codes() {
    let d = start(2, |_| {}).await;
    let cl = client(&d).await;
    // A built-in circuit with a bad parameter is refused at submission,
    // with the gRPC status of ERROR_CODE_INVALID_INPUT.
    let e = cl.submit(job("chain", 3, 1, 1, 0)).await.unwrap_err();
    match &e {
        ClientError::Rpc(s) => assert_eq!(s.code(), tonic::Code::InvalidArgument, "{e}"),
        other => panic!("expected an RPC error, got {other}"),
    }
    // A device too small for the job fails it as out of device memory.
    d.ctx.set_memory_limit(1, Some(1 << 10)).unwrap();
    let mut j = job("chain", 7, 1, 4, 0);
    j.devices = vec![1];
    let out = cl.prove(j, |_, _, _| {}).await.unwrap();
    assert_eq!(out.job_state, JobState::Failed, "{out:?}");
    assert_eq!(out.error_code, ErrorCode::OutOfDeviceMemory, "{out:?}");
    // A deadline that passes while the job runs, and a client's cancel.
    slow_partitions(&d.ctx, 1, Duration::from_secs(2));
    let mut j = job("chain", 7, 1, 5, 0);
    j.devices = vec![0];
    j.deadline_ms = 300;
    let out = cl.prove(j, |_, _, _| {}).await.unwrap();
    assert_eq!(out.state, "cancelled", "{out:?}");
    assert_eq!(out.job_state, JobState::Cancelled, "{out:?}");
    assert_eq!(out.error_code, ErrorCode::DeadlineExceeded, "{out:?}");
    let mut j = job("chain", 7, 1, 6, 0);
    j.devices = vec![0];
    let id = cl.submit(j).await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    cl.cancel(&id).await.unwrap();
    let out = cl.await_job(&id, |_, _, _| {}).await.unwrap();
    assert_eq!(out.job_state, JobState::Cancelled, "{out:?}");
    assert_eq!(out.error_code, ErrorCode::Cancelled, "{out:?}");
    // An unknown job: NOT_FOUND.
    let e = cl.await_job("99999", |_, _, _| {}).await.unwrap_err();
    match &e {
        ClientError::Rpc(s) => assert_eq!(s.code(), tonic::Code::NotFound, "{e}"),
        other => panic!("expected an RPC error, got {other}"),
    }
}
