//! Keys larger than the device memory: under a memory limit that cannot hold
//! the key next to a proof's working set, the host backend (simulating a
//! device) streams the key's bases in chunks through two bounded buffers,
//! and the proofs are byte-identical to those of a resident key and of
//! bellperson's own prover. A limit too small even for that is a clear
//! out-of-memory error, in the core and in the engine's check.

use std::sync::Arc;

use cuda_prover_bellperson::circuits::{BuiltIn, Kind};
use cuda_prover_bellperson::Placement;
use cuda_prover_bellperson::{
    prove_from_assignments, prove_from_witnesses, synthesize, synthesize_witness, Blinding,
    Context, ErrorCode, Shape, ShapeData, StreamSharing,
};
use cuda_prover_engine::{Engine, EngineConfig};
use cuda_prover_groth16::Groth16Engine;
use cuda_prover_groth16::{BlindingSource, Job};
use cuda_prover_pipeline::SynthesisMode;
use cuda_prover_tests::{
    builtin, builtin_keys, expected_stream_chunks, native_proofs, proof_bytes, Keys,
};
use rand_chacha::ChaCha8Rng;
use rand_core::SeedableRng;

const LOG: u32 = 10;
// The core's smallest chunk buffer and its granularity (stream_plan.hpp).
const MIN_BUFFER: u64 = 16 * 768;
const GRAIN: u64 = 768;

fn blinding(n: usize, seed: u64) -> Vec<Blinding> {
    Blinding::random_vec(&mut ChaCha8Rng::seed_from_u64(seed), n)
}

/// What the host device streams besides its two buffers, from the
/// estimate: streamed_bytes is that plus two of the smallest buffers.
fn fixed_bytes(keys: &Keys, ctx: &Context) -> u64 {
    let n = keys.key.domain_size().unwrap();
    let est = keys.key.device_memory_estimate(ctx, 1, n).unwrap();
    est.streamed_bytes - 2 * MIN_BUFFER
}

/// Limits that make device 1 stream with buffers of the given sizes: the
/// smallest (many chunks), one whose G1 chunk divides neither the H+L nor
/// the A bases, and the largest (one chunk per MSM).
fn limits(keys: &Keys, ctx: &Context) -> Vec<(u64, u64)> {
    let n = keys.key.domain_size().unwrap();
    let est = keys.key.device_memory_estimate(ctx, 1, n).unwrap();
    let fixed = fixed_bytes(keys, ctx);
    let p = &keys.params;
    let n_hl = (p.h.len() + p.l.len()) as u64;
    let n_a = p.a.len() as u64;
    let odd = (1..64)
        .map(|k| MIN_BUFFER + k * GRAIN)
        .find(|b| !n_hl.is_multiple_of(b / 96) && !n_a.is_multiple_of(b / 96) && b / 96 < n_a)
        .unwrap();
    let largest = [
        n_hl * 96,
        n_a * 96,
        p.b_g1.len() as u64 * 96,
        p.b_g2.len() as u64 * 192,
    ]
    .into_iter()
    .max()
    .unwrap()
    .div_ceil(GRAIN)
        * GRAIN;
    let whole = fixed + 2 * largest;
    assert!(
        whole < est.working_bytes + est.key_bytes,
        "one chunk per MSM still streams"
    );
    vec![
        (fixed + 2 * MIN_BUFFER, MIN_BUFFER),
        (fixed + 2 * odd + GRAIN / 2, odd),
        (whole, largest),
    ]
}

/// Device 0 keeps the key resident, device 1 streams it under each limit:
/// the same bytes as bellperson, the timings say which path ran.
fn streamed_same_as_resident(kind: Kind, witness: bool) {
    let keys = builtin_keys(kind, LOG);
    let ctx = Context::host(2).unwrap();
    let cs: Vec<BuiltIn> = (0..2).map(|i| builtin(kind, LOG, 90 + i)).collect();
    let bl = blinding(cs.len(), 5);
    let native = native_proofs(cs.clone(), &keys.params, &bl);
    let data = ShapeData::record(cs[0]).unwrap();
    let shape = Shape::new(&data).unwrap();
    let hint = keys.key.size_hint().unwrap();
    // One call per circuit: each streams alone, by the plan for one proof
    // (proofs sharing a pass: `proofs_share_one_streamed_pass`).
    let prove = |device: u32| {
        let mut out = Vec::new();
        for (k, c) in cs.iter().enumerate() {
            let bl = &bl[k..k + 1];
            out.extend(if witness {
                let ws = [synthesize_witness(*c, hint).unwrap()];
                prove_from_witnesses(&ctx, &keys.key, &shape, &ws, bl, &Placement::on(device))
                    .unwrap()
            } else {
                let full = [synthesize(*c).unwrap()];
                prove_from_assignments(&ctx, &keys.key, &full, bl, &Placement::on(device)).unwrap()
            });
        }
        out
    };
    let resident = prove(0);
    for (k, p) in resident.iter().enumerate() {
        assert_eq!(p.timings.stream_chunks, 0, "resident key");
        assert_eq!(proof_bytes(&p.proof), proof_bytes(&native[k]));
    }
    for (limit, buffer) in limits(&keys, &ctx) {
        ctx.set_memory_limit(1, Some(limit)).unwrap();
        let streamed = prove(1);
        // What the device holds for the next job (the engine counts it as
        // room next to the free memory): the cache and both chunk buffers.
        let s = ctx.device_stats(1).unwrap();
        assert_eq!(
            s.held_bytes,
            s.cache_bytes + 2 * buffer,
            "limit {limit}: held"
        );
        for (k, p) in streamed.iter().enumerate() {
            assert_eq!(p.device, 1);
            assert_eq!(
                p.timings.stream_buffer_bytes, buffer,
                "limit {limit}: buffers as planned"
            );
            assert_eq!(
                p.timings.stream_chunks,
                expected_stream_chunks(&keys.params, buffer),
                "limit {limit}: chunks"
            );
            assert!(p.timings.stream_chunks >= 4);
            assert_eq!(p.timings.stream_shared, 1, "limit {limit}: alone");
            assert!(
                p.timings.peak_device_bytes <= limit,
                "stays within the limit"
            );
            assert_eq!(
                proof_bytes(&p.proof),
                proof_bytes(&resident[k].proof),
                "limit {limit}, partition {k}: streamed = resident"
            );
            assert!(keys.key.verify(&p.proof, &[cs[k].public_input()]).unwrap());
        }
    }
    ctx.set_memory_limit(1, None).unwrap();
    let again = prove(1);
    assert_eq!(again[0].timings.stream_chunks, 0, "limit lifted: resident");
}

#[test]
fn chain_streamed_is_byte_identical() {
    streamed_same_as_resident(Kind::Chain, false);
}

#[test]
fn bits_streamed_is_byte_identical() {
    streamed_same_as_resident(Kind::Bits, false);
}

#[test]
fn witness_path_streamed_is_byte_identical() {
    streamed_same_as_resident(Kind::Chain, true);
}

/// The MSM scalars a proof keeps on the host device while it shares a
/// streamed pass: H's, A's and B's (host/device.cpp, set_bytes).
fn scalar_set_bytes(keys: &Keys) -> u64 {
    let p = &keys.params;
    ((p.h.len() + p.a.len() + p.b_g1.len()) * 32) as u64
}

/// A call's proofs on a device that streams the key share passes over its
/// chunks when the limit holds their scalars next to the buffers: at most
/// eight a pass, each chunk streamed once for all of them, and the bytes
/// those of a resident key. Without room for a second proof's scalars each
/// streams alone.
fn call_shares_passes(witness: bool) {
    let keys = builtin_keys(Kind::Chain, LOG);
    let ctx = Context::host(2).unwrap();
    let cs: Vec<BuiltIn> = (0..10).map(|i| builtin(Kind::Chain, LOG, 60 + i)).collect();
    let bl = blinding(cs.len(), 8);
    let data = ShapeData::record(cs[0]).unwrap();
    let shape = Shape::new(&data).unwrap();
    let hint = keys.key.size_hint().unwrap();
    let prove = |device: u32| {
        if witness {
            let ws: Vec<_> = cs
                .iter()
                .cloned()
                .map(|c| synthesize_witness(c, hint).unwrap())
                .collect();
            prove_from_witnesses(&ctx, &keys.key, &shape, &ws, &bl, &Placement::on(device)).unwrap()
        } else {
            let full: Vec<_> = cs.iter().cloned().map(|c| synthesize(c).unwrap()).collect();
            prove_from_assignments(&ctx, &keys.key, &full, &bl, &Placement::on(device)).unwrap()
        }
    };
    let resident = prove(0);
    let (whole, largest) = *limits(&keys, &ctx).last().unwrap();
    let n = keys.key.domain_size().unwrap();
    let est = keys.key.device_memory_estimate(&ctx, 1, n).unwrap();
    // Room for a second proof's scalars next to one chunk per MSM (and for
    // more with smaller chunks).
    let limit = whole + scalar_set_bytes(&keys);
    assert!(limit < est.working_bytes + est.key_bytes, "still streams");
    ctx.set_memory_limit(1, Some(limit)).unwrap();
    // Where that pays: on the host, copies cost far less than sums, so each
    // proof streams alone.
    ctx.set_stream_sharing(1, StreamSharing::Auto).unwrap();
    let auto = prove(1);
    assert!(
        auto.iter().all(|p| p.timings.stream_shared == 1),
        "auto: alone"
    );
    ctx.set_stream_sharing(1, StreamSharing::Always).unwrap();
    let streamed = prove(1);
    let shared: Vec<u64> = streamed.iter().map(|p| p.timings.stream_shared).collect();
    assert_passes(&shared);
    assert!(shared[0] >= 2, "proofs shared a pass: {shared:?}");
    for (k, p) in streamed.iter().enumerate() {
        assert_eq!(p.device, 1);
        let buffer = p.timings.stream_buffer_bytes;
        assert!(
            buffer <= largest && 2 * buffer >= largest,
            "buffer {buffer}"
        );
        assert_eq!(
            p.timings.stream_chunks,
            expected_stream_chunks(&keys.params, buffer)
        );
        assert!(p.timings.peak_device_bytes <= limit, "within the limit");
        assert_eq!(
            proof_bytes(&p.proof),
            proof_bytes(&resident[k].proof),
            "partition {k}: shared pass = resident"
        );
        assert!(keys.key.verify(&p.proof, &[cs[k].public_input()]).unwrap());
    }
    // The smallest limit leaves no room for a second proof's scalars.
    ctx.set_memory_limit(1, Some(limits(&keys, &ctx)[0].0))
        .unwrap();
    let alone = prove(1);
    for (k, p) in alone.iter().enumerate() {
        assert_eq!(p.timings.stream_shared, 1);
        assert_eq!(proof_bytes(&p.proof), proof_bytes(&resident[k].proof));
    }
    // Never: alone under the larger limit too.
    ctx.set_memory_limit(1, Some(limit)).unwrap();
    ctx.set_stream_sharing(1, StreamSharing::Never).unwrap();
    assert!(
        prove(1).iter().all(|p| p.timings.stream_shared == 1),
        "never"
    );
    for (k, p) in auto.iter().enumerate() {
        assert_eq!(proof_bytes(&p.proof), proof_bytes(&resident[k].proof));
    }
}

/// The proofs of one call, in order, as passes: each pass's proofs report
/// its size, at most eight.
fn assert_passes(shared: &[u64]) {
    let mut i = 0;
    while i < shared.len() {
        let n = shared[i] as usize;
        assert!((1..=8).contains(&n), "{shared:?}");
        let end = (i + n).min(shared.len());
        assert!(
            end - i == n && shared[i..end].iter().all(|&s| s as usize == n),
            "passes: {shared:?}"
        );
        i = end;
    }
}

#[test]
fn proofs_share_one_streamed_pass() {
    call_shares_passes(false);
}

#[test]
fn witnesses_share_one_streamed_pass() {
    call_shares_passes(true);
}

/// A witness that fails its shape fails the call under its own name, also
/// when it would have shared a pass with the others.
#[test]
fn unsatisfied_witness_in_a_shared_pass() {
    let keys = builtin_keys(Kind::Chain, LOG);
    let ctx = Context::host(2).unwrap();
    let cs: Vec<BuiltIn> = (0..3).map(|i| builtin(Kind::Chain, LOG, 70 + i)).collect();
    let data = ShapeData::record(cs[0]).unwrap();
    let shape = Shape::new(&data).unwrap();
    let hint = keys.key.size_hint().unwrap();
    let mut ws: Vec<_> = cs
        .iter()
        .cloned()
        .map(|c| synthesize_witness(c, hint).unwrap())
        .collect();
    let (whole, _) = *limits(&keys, &ctx).last().unwrap();
    ctx.set_memory_limit(1, Some(whole + scalar_set_bytes(&keys)))
        .unwrap();
    ctx.set_stream_sharing(1, StreamSharing::Always).unwrap();
    let bl = blinding(3, 9);
    let mid = ws[1].aux.len() / 2;
    ws[1].aux[mid] += blstrs::Scalar::from(1u64);
    let err =
        prove_from_witnesses(&ctx, &keys.key, &shape, &ws, &bl, &Placement::on(1)).unwrap_err();
    assert_eq!(err.code(), Some(ErrorCode::Unsatisfied), "{err}");
    assert!(err.to_string().contains("circuit 1"), "{err}");
}

/// Callers on several threads that wait on one device with the same key
/// join one streamed pass: while one pass holds the device, the others
/// queue, and the next pass takes them all. The engine's workers share
/// passes this way.
#[test]
fn waiting_callers_share_one_streamed_pass() {
    let keys = builtin_keys(Kind::Chain, LOG);
    let ctx = Arc::new(Context::host(2).unwrap());
    let (whole, _) = *limits(&keys, &ctx).last().unwrap();
    // Partition 0's pass holds the device a second, so that the other
    // workers' partitions are waiting when it ends (a tag delay also keeps
    // partition 0 out of other passes).
    ctx.set_tag_delay(0, std::time::Duration::from_secs(1))
        .unwrap();
    let job = Job {
        name: "shared".into(),
        partitions: (0..5).map(|i| builtin(Kind::Chain, LOG, 80 + i)).collect(),
        blinding: BlindingSource::Seeded(80),
        trim_after: false,
        synthesis: SynthesisMode::Full,
        shape: None,
    };
    let config = EngineConfig {
        devices: cuda_prover_engine::DeviceSelection::List(vec![0]),
        workers_per_device: 4,
        device_memory_limit: Some(whole + scalar_set_bytes(&keys)),
        stream_sharing: Some(StreamSharing::Always),
        ..Default::default()
    };
    let engine = Engine::new(ctx.clone(), config).unwrap();
    let out = engine.run(job, &keys.key, |_| {}).unwrap();
    ctx.set_tag_delay(0, std::time::Duration::ZERO).unwrap();
    let shared: Vec<u64> = out
        .report
        .per_partition
        .iter()
        .map(|p| p.stream_shared)
        .collect();
    assert!(shared.iter().all(|&s| s >= 1), "all streamed: {shared:?}");
    assert!(
        shared.iter().filter(|&&s| s >= 2).count() >= 2,
        "the waiting workers' partitions shared a pass: {shared:?}"
    );
    for p in &out.proofs {
        assert!(keys.key.verify(&p.output.proof, &p.public_inputs).unwrap());
    }
}

#[test]
fn many_chunks_for_the_smallest_buffers() {
    let keys = builtin_keys(Kind::Chain, LOG);
    let ctx = Context::host(2).unwrap();
    let limit = limits(&keys, &ctx)[0].0;
    // 2^10 constraints: thousands of bases, 128 G1 / 64 G2 bases a chunk.
    assert!(expected_stream_chunks(&keys.params, MIN_BUFFER) > 40);
    ctx.set_memory_limit(1, Some(limit)).unwrap();
    let s = synthesize(builtin(Kind::Chain, LOG, 3)).unwrap();
    let p =
        prove_from_assignments(&ctx, &keys.key, &[s], &blinding(1, 3), &Placement::on(1)).unwrap();
    assert_eq!(
        p[0].timings.stream_chunks,
        expected_stream_chunks(&keys.params, MIN_BUFFER)
    );
}

#[test]
fn too_small_for_one_chunk_is_a_clear_error() {
    let keys = builtin_keys(Kind::Chain, LOG);
    let ctx = Arc::new(Context::host(2).unwrap());
    let n = keys.key.domain_size().unwrap();
    let est = keys.key.device_memory_estimate(&ctx, 1, n).unwrap();
    ctx.set_memory_limit(1, Some(est.streamed_bytes - 1))
        .unwrap();
    let s = synthesize(builtin(Kind::Chain, LOG, 4)).unwrap();
    let err = prove_from_assignments(&ctx, &keys.key, &[s], &blinding(1, 4), &Placement::on(1))
        .unwrap_err();
    assert_eq!(err.code(), Some(ErrorCode::OutOfMemory), "{err}");
    let msg = err.to_string();
    assert!(
        msg.contains("device 1") && msg.contains("streaming"),
        "{msg}"
    );
    ctx.set_memory_limit(1, None).unwrap();

    // The engine applies its limit to its devices and refuses up front.
    let job = |seed| Job {
        name: "streamed".into(),
        partitions: (0..2)
            .map(|i| builtin(Kind::Chain, LOG, seed + i))
            .collect(),
        blinding: BlindingSource::Seeded(seed),
        trim_after: false,
        synthesis: SynthesisMode::Full,
        shape: None,
    };
    let config = |limit| EngineConfig {
        device_memory_limit: Some(limit),
        ..Default::default()
    };
    let engine = Engine::new(ctx.clone(), config(est.streamed_bytes - 1)).unwrap();
    let e = engine
        .run(job(10), &keys.key, |_| {})
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("device 0") && e.contains("streamed"), "{e}");

    // At the least streamed memory the engine accepts the job and streams.
    let engine = Engine::new(ctx.clone(), config(est.streamed_bytes)).unwrap();
    let out = engine.run(job(20), &keys.key, |_| {}).unwrap();
    for p in &out.report.per_partition {
        assert_eq!(
            p.stream_chunks,
            expected_stream_chunks(&keys.params, MIN_BUFFER)
        );
    }
    for p in &out.proofs {
        assert!(keys.key.verify(&p.output.proof, &p.public_inputs).unwrap());
    }
}
