//! cuzk.v1 on the wire: messages as Curio's Go client builds them, their
//! bytes written out by hand from the field numbers and types of cuzk's
//! proto (fields in number order, as both protobuf runtimes emit them).

use crate::cuzk_proto::{
    self as pb, await_proof_response::Status as AwaitStatus, srs_status::Tier as SrsTier,
};
use prost::Message;

/// A length-delimited field: its tag, the length as a varint (one
/// byte under 128, two under 16,384) and the bytes.
fn field(tag: &[u8], body: &[u8]) -> Vec<u8> {
    let n = body.len();
    assert!(n < 1 << 14);
    let mut out = tag.to_vec();
    if n < 128 {
        out.push(n as u8);
    } else {
        out.extend([(n & 0x7f) as u8 | 0x80, (n >> 7) as u8]);
    }
    out.extend_from_slice(body);
    out
}

/// Decodes `bytes` as `M`, checks it is `expected`, and that encoding
/// it gives the same bytes back.
fn both_ways<M: Message + Default + PartialEq + std::fmt::Debug>(bytes: &[u8], expected: &M) {
    let decoded = M::decode(bytes).expect("decodes");
    assert_eq!(&decoded, expected);
    assert_eq!(expected.encode_to_vec(), bytes, "{expected:?}");
}

#[test]
fn a_prove_request_as_curio_sends_it() {
    let mut inner = Vec::new();
    inner.extend(field(&[0x0a], b"snap-1000-7")); // 1 request_id
    inner.extend([0x10, 0x02]); // 2 proof_kind SNAP_DEALS_UPDATE
    inner.extend([0x18, 0x80, 0x10]); // 3 sector_size 2048
    inner.extend([0x20, 0x05]); // 4 registered_proof 5
    inner.extend([0x28, 0x02]); // 5 priority NORMAL
    inner.extend(field(&[0x52], b"{}")); // 10 vanilla_proof
    inner.extend(field(&[0x5a], b"a")); // 11 vanilla_proofs[0]
    inner.extend(field(&[0x5a], b"bc")); // 11 vanilla_proofs[1]
    inner.extend([0xa0, 0x01, 0x07]); // 20 sector_number 7
    inner.extend([0xa8, 0x01, 0xe8, 0x07]); // 21 miner_id 1000
    inner.extend(field(&[0xb2, 0x01], &[1, 2])); // 22 randomness
    inner.extend([0xb8, 0x01, 0x03]); // 23 partition_index 3
    inner.extend(field(&[0xf2, 0x01], &[0xaa; 32])); // 30 comm_r_old
    inner.extend(field(&[0xfa, 0x01], &[0xbb; 32])); // 31 comm_r_new
    inner.extend(field(&[0x82, 0x02], &[0xcc; 32])); // 32 comm_d_new
    assert_eq!(inner.len(), 153);
    let bytes = field(&[0x0a], &inner); // ProveRequest 1 submit
    assert_eq!(&bytes[..3], &[0x0a, 0x99, 0x01]);
    let expected = pb::ProveRequest {
        submit: Some(pb::SubmitProofRequest {
            request_id: "snap-1000-7".into(),
            proof_kind: pb::ProofKind::SnapDealsUpdate as i32,
            sector_size: 2048,
            registered_proof: 5,
            priority: pb::Priority::Normal as i32,
            vanilla_proof: b"{}".to_vec(),
            vanilla_proofs: vec![b"a".to_vec(), b"bc".to_vec()],
            sector_number: 7,
            miner_id: 1000,
            randomness: vec![1, 2],
            partition_index: 3,
            comm_r_old: vec![0xaa; 32],
            comm_r_new: vec![0xbb; 32],
            comm_d_new: vec![0xcc; 32],
        }),
    };
    both_ways(&bytes, &expected);
}

#[test]
fn the_answers_curio_reads() {
    // ProveResponse { result: AwaitProofResponse }.
    let mut inner = Vec::new();
    inner.extend(field(&[0x0a], b"j")); // 1 job_id
    inner.extend([0x10, 0x01]); // 2 status COMPLETED
    inner.extend(field(&[0x1a], &[1, 2, 3])); // 3 proof
    inner.extend(field(&[0x22], b"e")); // 4 error_message
    inner.extend([0x50, 0x05]); // 10 queue_wait_ms
    inner.extend([0x58, 0x06]); // 11 srs_load_ms
    inner.extend([0x60, 0x07]); // 12 synthesis_ms
    inner.extend([0x68, 0x08]); // 13 gpu_compute_ms
    inner.extend([0x70, 0xac, 0x02]); // 14 total_ms 300
    both_ways(
        &field(&[0x0a], &inner),
        &pb::ProveResponse {
            result: Some(pb::AwaitProofResponse {
                job_id: "j".into(),
                status: AwaitStatus::Completed as i32,
                proof: vec![1, 2, 3],
                error_message: "e".into(),
                queue_wait_ms: 5,
                srs_load_ms: 6,
                synthesis_ms: 7,
                gpu_compute_ms: 8,
                total_ms: 300,
            }),
        },
    );

    // GetStatusResponse with a device, a key and a queue.
    let mut gpu = vec![0x08, 0x01]; // 1 ordinal
    gpu.extend(field(&[0x12], b"g")); // 2 name
    gpu.extend([0x18, 0x10, 0x20, 0x08]); // 3 vram_total 16, 4 vram_free 8
    gpu.extend(field(&[0x2a], b"x")); // 5 current_job_id
    gpu.extend(field(&[0x32], b"porep-c2")); // 6 current_proof_kind
    let mut srs = field(&[0x0a], b"porep-2k"); // 1 circuit_id
    srs.extend([0x10, 0x01, 0x18, 0x64, 0x20, 0x02]); // 2 WARM, 3 100, 4 2
    let mut queue = field(&[0x0a], b"porep-c2"); // 1 proof_kind (a string)
    queue.extend([0x10, 0x02, 0x18, 0x01]); // 2 pending, 3 in_progress
    let mut status = field(&[0x0a], &gpu);
    status.extend(field(&[0x12], &srs));
    status.extend(field(&[0x1a], &queue));
    // 4 completed, 5 failed, 6 uptime, 7 pinned, 8 limit.
    status.extend([0x20, 0x05, 0x28, 0x01, 0x30, 0x09, 0x38, 0x0a, 0x40, 0x0b]);
    both_ways(
        &status,
        &pb::GetStatusResponse {
            gpus: vec![pb::GpuStatus {
                ordinal: 1,
                name: "g".into(),
                vram_total_bytes: 16,
                vram_free_bytes: 8,
                current_job_id: "x".into(),
                current_proof_kind: "porep-c2".into(),
            }],
            loaded_srs: vec![pb::SrsStatus {
                circuit_id: "porep-2k".into(),
                tier: SrsTier::Warm as i32,
                size_bytes: 100,
                ref_count: 2,
            }],
            queues: vec![pb::QueueStatus {
                proof_kind: "porep-c2".into(),
                pending: 2,
                in_progress: 1,
            }],
            total_proofs_completed: 5,
            total_proofs_failed: 1,
            uptime_seconds: 9,
            pinned_memory_bytes: 10,
            pinned_memory_limit_bytes: 11,
        },
    );
}

#[test]
fn the_other_messages() {
    let mut b = field(&[0x0a], b"j");
    b.extend([0x10, 0xe8, 0x07]); // 2 timeout_ms 1000
    both_ways(
        &b,
        &pb::AwaitProofRequest {
            job_id: "j".into(),
            timeout_ms: 1000,
        },
    );
    let mut b = field(&[0x0a], b"j");
    b.extend([0x10, 0x03]); // 2 queue_position
    b.extend(field(&[0x1a], b"0")); // 3 assigned_gpu
    both_ways(
        &b,
        &pb::SubmitProofResponse {
            job_id: "j".into(),
            queue_position: 3,
            assigned_gpu: "0".into(),
        },
    );
    both_ways(
        &field(&[0x0a], b"j"),
        &pb::CancelProofRequest { job_id: "j".into() },
    );
    both_ways(
        &[0x08, 0x01],
        &pb::CancelProofResponse { was_running: true },
    );
    both_ways(
        &field(&[0x0a], b"porep-32g"),
        &pb::PreloadSrsRequest {
            circuit_id: "porep-32g".into(),
        },
    );
    both_ways(
        &[0x08, 0x01, 0x10, 0xac, 0x02],
        &pb::PreloadSrsResponse {
            already_loaded: true,
            load_time_ms: 300,
        },
    );
    both_ways(
        &field(&[0x0a], b"snap-32g"),
        &pb::EvictSrsRequest {
            circuit_id: "snap-32g".into(),
        },
    );
    both_ways(
        &[0x08, 0x01, 0x10, 0xac, 0x02],
        &pb::EvictSrsResponse {
            was_loaded: true,
            freed_bytes: 300,
        },
    );
    both_ways(
        &field(&[0x0a], b"m 1\n"),
        &pb::GetMetricsResponse {
            prometheus_text: "m 1\n".into(),
        },
    );
}

#[test]
fn the_service_is_cuzks() {
    use tonic::server::NamedService;
    assert_eq!(
        <crate::cuzk_proto::proving_engine_server::ProvingEngineServer<
            std::sync::Arc<super::Cuzk>,
        > as NamedService>::NAME,
        "cuzk.v1.ProvingEngine"
    );
    // The gRPC paths Curio's stubs call.
    let generated = include_str!(concat!(env!("OUT_DIR"), "/cuzk.v1.rs"));
    for method in [
        "SubmitProof",
        "AwaitProof",
        "Prove",
        "CancelProof",
        "GetStatus",
        "GetMetrics",
        "PreloadSRS",
        "EvictSRS",
    ] {
        let path = format!("\"/cuzk.v1.ProvingEngine/{method}\"");
        assert!(generated.contains(&path), "{path}");
    }
}
