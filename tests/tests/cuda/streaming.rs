//! Keys larger than the memory limit on the GPU: streamed, phased and
//! shared passes equal the host's, and a key four times the limit.

use std::sync::Arc;

use cuda_prover_bellperson::circuits::Kind;
use cuda_prover_bellperson::Placement;
use cuda_prover_bellperson::{
    prove_from_assignments, synthesize, Blinding, Context, KeyCheck, ProvingKey,
};
use cuda_prover_engine::{DeviceSelection, Engine, EngineConfig};
use cuda_prover_groth16::Groth16Engine;
use cuda_prover_groth16::{BlindingSource, Job};
use cuda_prover_pipeline::SynthesisMode;
use cuda_prover_tests::{
    builtin, cached_builtin_keys, expected_stream_chunks, gpu, keys_for, proof_bytes, Keys,
};
use rand_chacha::ChaCha8Rng;
use rand_core::SeedableRng;

use crate::common::max_log;

/// A copy of a key that no device holds yet (keys stay resident once
/// uploaded, and the cached keys are shared by the tests of this process).
fn fresh_key(keys: &Keys) -> ProvingKey {
    ProvingKey::from_params_with(&keys.params, KeyCheck::TrustedUnchecked).unwrap()
}

#[test]
fn cuda_streamed_equals_resident() {
    let Some(ctx) = gpu() else { return };
    let host = Context::host(1).unwrap();
    let log = 14.min(max_log());
    for kind in [Kind::Chain, Kind::Bits] {
        let keys = cached_builtin_keys(kind, log);
        let key = fresh_key(&keys);
        let n = key.domain_size().unwrap();
        let est = key.device_memory_estimate(&ctx, 0, n).unwrap();
        let s: Vec<_> = (0..2)
            .map(|i| synthesize(builtin(kind, log, 30 + i)).unwrap())
            .collect();
        let bl = Blinding::random_vec(&mut ChaCha8Rng::seed_from_u64(9), 2);
        let want = prove_from_assignments(&host, &keys.key, &s, &bl, &Placement::on(0)).unwrap();
        let resident = est.working_bytes + est.key_bytes;
        // Smallest buffers (many chunks), a third of the key, just short of
        // resident.
        // (At small sizes the MSM buffers of a resident key can be smaller
        // than the streamed minimum: only limits that must stream count.)
        let mut streamed_limits = 0;
        for limit in [
            est.streamed_bytes,
            est.streamed_bytes + est.key_bytes / 3 + 1000,
            resident - 1,
        ]
        .into_iter()
        .filter(|&l| l >= est.streamed_bytes && l < resident)
        {
            streamed_limits += 1;
            ctx.set_memory_limit(0, Some(limit)).unwrap();
            let got = prove_from_assignments(&ctx, &key, &s, &bl, &Placement::on(0)).unwrap();
            for k in 0..2 {
                let t = &got[k].timings;
                assert!(t.stream_chunks > 0, "{kind:?} limit {limit}: streamed");
                assert!(
                    t.peak_device_bytes <= limit,
                    "{kind:?} limit {limit}: measured peak {}",
                    t.peak_device_bytes
                );
                assert_eq!(
                    t.stream_chunks,
                    expected_stream_chunks(&keys.params, t.stream_buffer_bytes)
                );
                assert_eq!(
                    proof_bytes(&got[k].proof),
                    proof_bytes(&want[k].proof),
                    "{kind:?} limit {limit} partition {k}: streamed on the GPU = host"
                );
            }
            eprintln!(
                "{kind:?} 2^{log} limit {} KiB: {} chunks of {} KiB, device part {:.1} ms",
                limit >> 10,
                got[0].timings.stream_chunks,
                got[0].timings.stream_buffer_bytes >> 10,
                got[1].timings.device_ns as f64 / 1e6
            );
        }
        assert!(
            streamed_limits > 0,
            "{kind:?} 2^{log}: streaming needs {} bytes, a resident key {resident}",
            est.streamed_bytes
        );
        ctx.set_memory_limit(0, None).unwrap();
        let got = prove_from_assignments(&ctx, &key, &s, &bl, &Placement::on(0)).unwrap();
        for k in 0..2 {
            assert_eq!(got[k].timings.stream_chunks, 0, "limit lifted: resident");
            assert_eq!(proof_bytes(&got[k].proof), proof_bytes(&want[k].proof));
        }
    }
}

/// A phased pass, where not even a streamed key fits next to the working
/// set (and the shape): the key streamed, a, b, c sent up from the host
/// (evaluated there from the shape on the witness path, a range of rows at
/// a time), the MSM scalars laid over a, b, c once H is computed. Proofs on
/// both paths equal the host backend's, within the limit; below the least
/// phased pass the error names what it needs; a witness that fails its
/// shape is refused by the host's row check.
#[test]
fn cuda_phased_pass_equals_host() {
    use cuda_prover_bellperson::{prove_from_witnesses, synthesize_witness, Shape, ShapeData};
    let Some(ctx) = gpu() else { return };
    let host = Context::host(1).unwrap();
    let log = 14.min(max_log());
    let keys = cached_builtin_keys(Kind::Chain, log);
    let key = fresh_key(&keys);
    let n = key.domain_size().unwrap();
    let est = key.device_memory_estimate(&ctx, 0, n).unwrap();
    assert!(
        est.compact_bytes < est.streamed_bytes,
        "phased {} against streamed {}",
        est.compact_bytes,
        est.streamed_bytes
    );
    let circuits: Vec<_> = (0..2).map(|i| builtin(Kind::Chain, log, 60 + i)).collect();
    let s: Vec<_> = circuits.iter().map(|c| synthesize(*c).unwrap()).collect();
    let data = ShapeData::record(circuits[0]).unwrap();
    let shape = Shape::new(&data).unwrap();
    let hint = key.size_hint().unwrap();
    let ws: Vec<_> = circuits
        .iter()
        .map(|c| synthesize_witness(*c, hint).unwrap())
        .collect();
    let bl = Blinding::random_vec(&mut ChaCha8Rng::seed_from_u64(61), 2);
    let want = prove_from_assignments(&host, &keys.key, &s, &bl, &Placement::on(0)).unwrap();
    let want_w =
        prove_from_witnesses(&host, &keys.key, &shape, &ws, &bl, &Placement::on(0)).unwrap();
    for limit in [
        est.compact_bytes,
        (est.compact_bytes + est.streamed_bytes) / 2,
        est.streamed_bytes - 1,
    ] {
        ctx.set_memory_limit(0, Some(limit)).unwrap();
        let got = prove_from_assignments(&ctx, &key, &s, &bl, &Placement::on(0)).unwrap();
        let got_w = prove_from_witnesses(&ctx, &key, &shape, &ws, &bl, &Placement::on(0)).unwrap();
        for k in 0..2 {
            for (path, got, want) in [("a, b, c", &got, &want), ("witness", &got_w, &want_w)] {
                let t = &got[k].timings;
                assert!(t.stream_chunks > 0, "{path} limit {limit}: streamed");
                // At 2^14 the chunk buffers are far below the 64 MiB from
                // which the shape's rows stream: a, b, c from the host.
                assert_eq!(
                    t.phased, 1,
                    "{path} limit {limit}: phased, a, b, c from the host"
                );
                assert!(
                    t.peak_device_bytes <= limit,
                    "{path} limit {limit}: measured peak {}",
                    t.peak_device_bytes
                );
                assert_eq!(
                    proof_bytes(&got[k].proof),
                    proof_bytes(&want[k].proof),
                    "{path} limit {limit} partition {k}: phased pass on the GPU = host"
                );
            }
        }
        eprintln!(
            "chain 2^{log} limit {} KiB (phased from {} KiB, streamed from {} KiB): device part {:.1} ms, witness path {:.1} ms",
            limit >> 10,
            est.compact_bytes >> 10,
            est.streamed_bytes >> 10,
            got[1].timings.device_ns as f64 / 1e6,
            got_w[1].timings.device_ns as f64 / 1e6
        );
    }
    // The shape's rows streamed through the chunk buffers and evaluated on
    // the device, wherever they fit (any buffer size for this test).
    std::env::set_var("CP_SHAPE_ROWS_MIN_BUFFER", "0");
    let mut on_device = 0;
    for limit in [
        (est.compact_bytes + est.streamed_bytes) / 2,
        est.streamed_bytes - 1,
        est.streamed_bytes + est.key_bytes / 4,
    ] {
        ctx.set_memory_limit(0, Some(limit)).unwrap();
        let got_w = prove_from_witnesses(&ctx, &key, &shape, &ws, &bl, &Placement::on(0)).unwrap();
        for k in 0..2 {
            let t = &got_w[k].timings;
            assert!(
                t.peak_device_bytes <= limit,
                "limit {limit}: peak {}",
                t.peak_device_bytes
            );
            assert_eq!(
                proof_bytes(&got_w[k].proof),
                proof_bytes(&want_w[k].proof),
                "limit {limit} partition {k}: shape rows on the GPU = host"
            );
            on_device += usize::from(t.phased == 2);
        }
        eprintln!(
            "chain 2^{log} limit {} KiB: phased {}, {} chunks of {} KiB, device part {:.1} ms",
            limit >> 10,
            got_w[1].timings.phased,
            got_w[1].timings.stream_chunks,
            got_w[1].timings.stream_buffer_bytes >> 10,
            got_w[1].timings.device_ns as f64 / 1e6
        );
    }
    std::env::remove_var("CP_SHAPE_ROWS_MIN_BUFFER");
    assert!(on_device > 0, "no limit streamed the shape's rows");

    ctx.set_memory_limit(0, Some(est.compact_bytes - 1))
        .unwrap();
    let e = prove_from_witnesses(&ctx, &key, &shape, &ws[..1], &bl[..1], &Placement::on(0))
        .unwrap_err()
        .to_string();
    assert!(e.contains("a, b, c sent up from the host"), "{e}");

    // The host's row check in a phased pass.
    let good = cuda_prover_tests::Broken {
        steps: 5000,
        bad_step: 5000,
    };
    let bad = cuda_prover_tests::Broken {
        steps: 5000,
        bad_step: 4321,
    };
    let bkeys = keys_for("broken-5000", good);
    let bkey = fresh_key(&bkeys);
    let bn = bkey.domain_size().unwrap();
    let best = bkey.device_memory_estimate(&ctx, 0, bn).unwrap();
    let bdata = ShapeData::record(good).unwrap();
    let bshape = Shape::new(&bdata).unwrap();
    let bhint = bkey.size_hint().unwrap();
    let w = vec![synthesize_witness(bad, bhint).unwrap()];
    ctx.set_memory_limit(0, Some(best.compact_bytes)).unwrap();
    let e = prove_from_witnesses(&ctx, &bkey, &bshape, &w, &bl[..1], &Placement::on(0))
        .unwrap_err()
        .to_string();
    assert!(e.contains("not satisfied"), "{e}");
    let w = vec![synthesize_witness(good, bhint).unwrap()];
    let ok = prove_from_witnesses(&ctx, &bkey, &bshape, &w, &bl[..1], &Placement::on(0)).unwrap();
    let want =
        prove_from_witnesses(&host, &bkeys.key, &bshape, &w, &bl[..1], &Placement::on(0)).unwrap();
    assert!(ok[0].timings.stream_chunks > 0);
    assert_eq!(proof_bytes(&ok[0].proof), proof_bytes(&want[0].proof));
    ctx.set_memory_limit(0, None).unwrap();
}

/// Proofs with one streamed key share passes over its chunks on the GPU:
/// the witnesses of one call, and the partitions the engine's workers hold
/// while the device is busy. Every proof equals the host backend's and
/// verifies; each pass's proofs report its size.
#[test]
fn cuda_shared_streamed_passes() {
    let Some(ctx) = gpu() else { return };
    let host = Context::host(1).unwrap();
    let log = 14.min(max_log());
    let keys = cached_builtin_keys(Kind::Chain, log);
    let key = fresh_key(&keys);
    let n = key.domain_size().unwrap();
    let est = key.device_memory_estimate(&ctx, 0, n).unwrap();
    let circuits: Vec<_> = (0..6).map(|i| builtin(Kind::Chain, log, 40 + i)).collect();
    let data = cuda_prover_bellperson::ShapeData::record(circuits[0]).unwrap();
    let shape = cuda_prover_bellperson::Shape::new(&data).unwrap();
    let hint = key.size_hint().unwrap();
    let ws: Vec<_> = circuits
        .iter()
        .map(|c| cuda_prover_bellperson::synthesize_witness(*c, hint).unwrap())
        .collect();
    let bl = Blinding::random_vec(&mut ChaCha8Rng::seed_from_u64(41), ws.len());
    let want = cuda_prover_bellperson::prove_from_witnesses(
        &host,
        &keys.key,
        &shape,
        &ws,
        &bl,
        &Placement::on(0),
    )
    .unwrap();
    let resident = est.working_bytes + est.key_bytes;
    // Whenever the memory allows (at 2^14 the copies are shorter than the
    // sums, so `Auto` would stream each alone).
    ctx.set_stream_sharing(0, cuda_prover_bellperson::StreamSharing::Always)
        .unwrap();
    let mut most = 0;
    for limit in [
        resident - 1,
        est.streamed_bytes + (resident - est.streamed_bytes) / 2,
    ] {
        ctx.set_memory_limit(0, Some(limit)).unwrap();
        let got = cuda_prover_bellperson::prove_from_witnesses(
            &ctx,
            &key,
            &shape,
            &ws,
            &bl,
            &Placement::on(0),
        )
        .unwrap();
        let passes: Vec<u64> = got.iter().map(|p| p.timings.stream_shared).collect();
        eprintln!(
            "chain 2^{log} limit {} KiB: proofs per pass {passes:?}, {} chunks of {} KiB",
            limit >> 10,
            got[0].timings.stream_chunks,
            got[0].timings.stream_buffer_bytes >> 10
        );
        let mut i = 0;
        while i < passes.len() {
            let p = passes[i] as usize;
            assert!(p >= 1 && i + p <= passes.len(), "{passes:?}");
            assert!(
                passes[i..i + p].iter().all(|&x| x as usize == p),
                "{passes:?}"
            );
            most = most.max(p);
            i += p;
        }
        for (k, p) in got.iter().enumerate() {
            assert_eq!(
                proof_bytes(&p.proof),
                proof_bytes(&want[k].proof),
                "limit {limit} partition {k}: shared pass on the GPU = host"
            );
            // The device memory measured (held bytes and the default
            // pool's high-water mark), not the plan.
            assert!(
                p.timings.peak_device_bytes <= limit,
                "limit {limit} partition {k} ({passes:?}): measured peak {}",
                p.timings.peak_device_bytes
            );
            assert!(key.verify(&p.proof, &[circuits[k].public_input()]).unwrap());
        }
    }
    assert!(most >= 2, "no limit let two proofs share a pass");

    // The engine's workers: each pass holds the device a while (a delay),
    // so the next finds the other workers' partitions waiting.
    let ctx = Arc::new(ctx);
    ctx.set_device_delay(0, std::time::Duration::from_millis(200))
        .unwrap();
    let job = Job {
        name: "shared".into(),
        partitions: (0..6).map(|i| builtin(Kind::Chain, log, 50 + i)).collect(),
        blinding: BlindingSource::Seeded(50),
        trim_after: false,
        synthesis: SynthesisMode::Full,
        shape: None,
    };
    let config = EngineConfig {
        devices: DeviceSelection::List(vec![0]),
        workers_per_device: 4,
        device_memory_limit: Some(resident - 1),
        stream_sharing: Some(cuda_prover_bellperson::StreamSharing::Always),
        ..Default::default()
    };
    let out = Engine::new(ctx.clone(), config)
        .unwrap()
        .run(job, &key, |_| {})
        .unwrap();
    ctx.set_device_delay(0, std::time::Duration::ZERO).unwrap();
    ctx.set_stream_sharing(0, cuda_prover_bellperson::StreamSharing::Auto)
        .unwrap();
    let shared: Vec<u64> = out
        .report
        .per_partition
        .iter()
        .map(|p| p.stream_shared)
        .collect();
    eprintln!("engine, 4 workers: proofs per pass {shared:?}");
    assert!(shared.iter().any(|&s| s >= 2), "{shared:?}");
    for d in &out.report.per_device {
        assert!(
            d.peak_device_bytes < resident,
            "engine: measured peak {} over the limit {}",
            d.peak_device_bytes,
            resident - 1
        );
    }
    for p in &out.proofs {
        assert!(key.verify(&p.output.proof, &p.public_inputs).unwrap());
    }
    ctx.set_memory_limit(0, None).unwrap();
}

/// A 2^22 key whose device share is a quarter of its size (the limit is the
/// working set plus a quarter of the key): streamed proofs equal resident
/// ones and verify; prints the device part of both. Runs when
/// CP_CUDA_MAX_LOG >= 22.
#[test]
fn cuda_key_four_times_the_limit() {
    const LOG: u32 = 22;
    if max_log() < LOG {
        eprintln!("SKIPPED: CP_CUDA_MAX_LOG < {LOG}");
        return;
    }
    let Some(ctx) = gpu() else { return };
    let keys = cached_builtin_keys(Kind::Chain, LOG);
    let key = fresh_key(&keys);
    let n = key.domain_size().unwrap();
    let est = key.device_memory_estimate(&ctx, 0, n).unwrap();
    let limit = est.working_bytes + est.key_bytes / 4;
    let circuits: Vec<_> = (0..3).map(|i| builtin(Kind::Chain, LOG, 70 + i)).collect();
    let s: Vec<_> = circuits
        .iter()
        .cloned()
        .map(|c| synthesize(c).unwrap())
        .collect();
    let bl = Blinding::random_vec(&mut ChaCha8Rng::seed_from_u64(22), 3);
    ctx.set_memory_limit(0, Some(limit)).unwrap();
    let streamed = prove_from_assignments(&ctx, &key, &s, &bl, &Placement::on(0)).unwrap();
    ctx.set_memory_limit(0, None).unwrap();
    let resident = prove_from_assignments(&ctx, &key, &s, &bl, &Placement::on(0)).unwrap();
    for k in 0..3 {
        assert!(streamed[k].timings.stream_chunks > 0);
        assert!(
            streamed[k].timings.peak_device_bytes <= limit,
            "partition {k}: measured peak {} over the limit {limit}",
            streamed[k].timings.peak_device_bytes
        );
        assert_eq!(resident[k].timings.stream_chunks, 0);
        assert_eq!(
            proof_bytes(&streamed[k].proof),
            proof_bytes(&resident[k].proof)
        );
        assert!(key
            .verify(&streamed[k].proof, &[circuits[k].public_input()])
            .unwrap());
    }
    // The first proof of each pays the warm-up; the others are the steady state.
    let ms = |p: &[cuda_prover_bellperson::ProofOutput]| {
        p[1..]
            .iter()
            .map(|x| x.timings.device_ns as f64 / 1e6)
            .sum::<f64>()
            / (p.len() - 1) as f64
    };
    let passes: Vec<u64> = streamed.iter().map(|p| p.timings.stream_shared).collect();
    eprintln!(
        "chain 2^{LOG}: key {} MiB, limit {} MiB ({} chunks of {} MiB, proofs per pass {passes:?}, peak {} MiB): device part resident {:.1} ms, streamed {:.1} ms ({:.2}x)",
        est.key_bytes >> 20,
        limit >> 20,
        streamed[1].timings.stream_chunks,
        streamed[1].timings.stream_buffer_bytes >> 20,
        streamed.iter().map(|p| p.timings.peak_device_bytes).max().unwrap_or(0) >> 20,
        ms(&resident),
        ms(&streamed),
        ms(&streamed) / ms(&resident)
    );
}
