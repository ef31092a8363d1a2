//! The requests class (one simulated device, in process): submits whose
//! encoded bytes are flipped, cut, spliced, padded with unknown fields,
//! doubled or replaced by garbage; jobs with extreme field values;
//! oversized and garbage Filecoin C2 requests; await and cancel of unknown,
//! malformed and huge ids. Every job the daemon accepted must finish.

// The client's error is tonic's `Status` inside, unboxed (as in the
// library): the closures that map it to a `Status` carry it whole.
#![allow(clippy::result_large_err)]

use crate::common;

use std::time::{Duration, Instant};

use common::{client, job, start_with_params, temp_dir};
use cuda_prover_service::{proto, Client};
use prost::Message;
use tonic::Status;

use super::counts::{status_of, Counts, Expect, PER_REQUEST};
use super::raw_codec::Raw;
use super::Rng;

const LIMIT: usize = 16 << 10;
const C2_LIMIT: usize = 256 << 10;

/// A small valid built-in job (the daemon's limits keep every mutation of
/// it small: log_constraints at most 8, partitions at most 4).
fn base_job(rng: &mut Rng) -> proto::SubmitRequest {
    let circuit = if rng.below(2) == 0 { "chain" } else { "bits" };
    job(circuit, 6 + rng.below(2) as u32, 1, rng.below(1000), 0)
}

/// A mutation of a valid job's encoded bytes, and what it must do.
fn mutate(rng: &mut Rng) -> (String, Vec<u8>, Expect) {
    let mut b = base_job(rng).encode_to_vec();
    let kind = rng.below(8);
    let what = match kind {
        0 => {
            for _ in 0..1 + rng.below(4) {
                let i = rng.below(b.len() as u64) as usize;
                b[i] ^= 1 << rng.below(8);
            }
            "bit flips"
        }
        1 => {
            b.truncate(rng.below(b.len() as u64) as usize);
            "cut"
        }
        2 => {
            let at = rng.below(b.len() as u64 + 1) as usize;
            let n = 1 + rng.below(40) as usize;
            let ins = rng.bytes(n);
            b.splice(at..at, ins);
            "spliced bytes"
        }
        3 => {
            let len = rng.below(300) as usize;
            b = rng.bytes(len);
            "garbage"
        }
        4 => {
            // An unknown length-delimited field (999) the decoder drops.
            let n = if rng.below(2) == 0 {
                LIMIT + 1 + rng.below(100_000) as usize
            } else {
                rng.below(LIMIT as u64 / 2) as usize
            };
            b.extend_from_slice(&[0xba, 0x3e]);
            prost::encoding::encode_varint(n as u64, &mut b);
            b.extend(std::iter::repeat_n(7u8, n));
            "padded"
        }
        5 => {
            let again = b.clone();
            b.extend_from_slice(&again);
            "doubled (fields merged)"
        }
        6 => {
            // A varint field set to an extreme value.
            let mut r = base_job(rng);
            if let Some(proto::submit_request::Job::BuiltIn(j)) = &mut r.job {
                match rng.below(5) {
                    0 => j.log_constraints = [0, 9, 31, 32, 255, u32::MAX][rng.below(6) as usize],
                    1 => j.partitions = [0, 5, 10_001, u32::MAX][rng.below(4) as usize],
                    2 => j.circuit = String::from_utf8_lossy(&rng.bytes(12)).into_owned(),
                    3 => j.synthesis = ["x", "witness\0", "full "][rng.below(3) as usize].into(),
                    _ => j.seed = Some(u64::MAX),
                }
            }
            match rng.below(5) {
                0 => r.devices = vec![0, 0],
                1 => r.devices = vec![u32::MAX],
                2 => {
                    r.params_dir = ["..", "/etc", "a\0b", "../../tmp"][rng.below(4) as usize].into()
                }
                3 => r.priority = u32::MAX,
                _ => r.deadline_ms = u64::MAX,
            }
            b = r.encode_to_vec();
            "extreme values"
        }
        _ => {
            // A job with no job field at all, or a name too long.
            let mut r = base_job(rng);
            if rng.below(2) == 0 {
                r.job = None;
            } else {
                r.name = "n".repeat(257 + rng.below(3000) as usize);
            }
            b = r.encode_to_vec();
            "no job / long name"
        }
    };
    // What the daemon must do: refuse anything above its limit by its
    // size, anything its decoder refuses, a request naming no job.
    let expect = match proto::SubmitRequest::decode(&b[..]) {
        _ if b.len() > LIMIT => Expect::Fail,
        Err(_) => Expect::Fail,
        Ok(r) if r.job.is_none() => Expect::Fail,
        Ok(_) => Expect::Either,
    };
    (format!("{what} ({} bytes)", b.len()), b, expect)
}

/// The requests class: mutated submits, oversized and garbage C2
/// requests, unknown and malformed ids; the number of accepted jobs.
pub(super) async fn request_mutations(rng: &mut Rng, n: &mut Counts) -> usize {
    let d = start_with_params(1, temp_dir("mutation"), |c| {
        c.max_request_bytes = LIMIT;
        c.max_filecoin_request_bytes = C2_LIMIT;
        c.max_log_constraints = 8;
        c.max_partitions = 4;
        c.max_queue = 64;
    })
    .await;
    let cl = client(&d).await;
    let channel = tonic::transport::Endpoint::from_shared(format!("http://{}", d.addr))
        .unwrap()
        .connect()
        .await
        .unwrap();
    let grpc = tonic::client::Grpc::new(channel);
    let submit_raw = |bytes: Vec<u8>| {
        let mut grpc = grpc.clone();
        async move {
            grpc.ready()
                .await
                .map_err(|e| Status::unavailable(e.to_string()))?;
            let path = tonic::codegen::http::uri::PathAndQuery::from_static(
                "/cuda_prover.v1.Prover/Submit",
            );
            grpc.unary(tonic::Request::new(bytes), path, Raw)
                .await
                .map(|r| r.into_inner())
        }
    };
    let mut accepted: Vec<(String, String)> = Vec::new();

    // Submits: mutations of a valid job's bytes.
    for _ in 0..400 {
        let (what, bytes, expect) = mutate(rng);
        let r = tokio::time::timeout(PER_REQUEST, submit_raw(bytes)).await;
        if let Some(reply) = n.answer_within(&format!("submit {what}"), r, expect) {
            match proto::SubmitReply::decode(&reply[..]) {
                Ok(r) => accepted.push((r.job_id, what)),
                Err(e) => {
                    n.wrong_successes += 1;
                    eprintln!("WRONG SUCCESS: {what}: a reply that does not decode ({e})");
                }
            }
        }
    }

    // Filecoin C2 requests: above their own limit, and garbage below it.
    for k in 0..6 {
        let len = if k % 2 == 0 {
            C2_LIMIT + 1 + rng.below(10_000) as usize
        } else {
            rng.below(2000) as usize
        };
        let req = proto::SubmitRequest {
            job: Some(proto::submit_request::Job::FilecoinC2(
                proto::FilecoinC2Job {
                    c1_output: rng.bytes(len),
                    prover_id: "01".into(),
                    sector_id: rng.below(100),
                    sector_size: [0, 2048, 3000][rng.below(3) as usize],
                    registered_proof: String::new(),
                },
            )),
            ..Default::default()
        };
        let r = tokio::time::timeout(PER_REQUEST, cl.submit(req)).await;
        n.answer_within(
            &format!("C2 of {len} bytes"),
            r.map(|r| r.map_err(status_of)),
            Expect::Fail,
        );
    }

    // Ids: unknown, malformed, huge; awaited and cancelled.
    for _ in 0..150 {
        let id = match rng.below(4) {
            0 => format!("{:032x}", (rng.next() as u128) << 64 | rng.next() as u128),
            1 => format!("{:x}", rng.next()),
            2 => {
                let len = 1 + rng.below(40) as usize;
                String::from_utf8_lossy(&rng.bytes(len)).into_owned()
            }
            _ => "f".repeat(33 + rng.below(100_000) as usize),
        };
        let shown = format!("id of {} bytes", id.len());
        if rng.below(2) == 0 {
            let r = tokio::time::timeout(PER_REQUEST, cl.await_job(&id, |_, _, _| {})).await;
            n.answer_within(
                &format!("await {shown}"),
                r.map(|r| r.map_err(status_of)),
                Expect::Fail,
            );
        } else {
            let r = tokio::time::timeout(PER_REQUEST, cl.cancel(&id)).await;
            n.answer_within(
                &format!("cancel {shown}"),
                r.map(|r| r.map_err(status_of)),
                Expect::Fail,
            );
        }
    }

    // Every accepted job finishes: done and verified, or failed with a
    // reason (never lost, never a success without proofs).
    let deadline = Instant::now() + Duration::from_secs(60);
    for (id, what) in &accepted {
        let left = deadline
            .saturating_duration_since(Instant::now())
            .max(Duration::from_secs(1));
        match tokio::time::timeout(left, cl.await_job(id, |_, _, _| {})).await {
            Err(_) => {
                n.lost_jobs += 1;
                eprintln!("LOST: job {id} ({what}) did not finish");
            }
            Ok(Err(e)) => {
                n.lost_jobs += 1;
                eprintln!("LOST: job {id} ({what}): {e}");
            }
            Ok(Ok(out)) => {
                let finished = (out.ok() && !out.proofs.is_empty())
                    || (out.state == "failed" && !out.error.is_empty());
                if !finished {
                    n.lost_jobs += 1;
                    eprintln!("LOST: job {id} ({what}): {} {}", out.state, out.error);
                }
            }
        }
    }
    // The daemon still answers, with nothing left behind.
    match tokio::time::timeout(PER_REQUEST, cl.status()).await {
        Ok(Ok(st)) => {
            assert!(st.queued.is_empty() && st.running.is_empty(), "{st:?}");
        }
        other => {
            n.crashes += 1;
            eprintln!("CRASH: status after the campaign: {other:?}");
        }
    }
    let again = Client::connect(&d.addr, None).await;
    assert!(again.is_ok(), "a new connection after the campaign");
    accepted.len()
}
