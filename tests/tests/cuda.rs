//! The CUDA backend on a real GPU: the host backend's test list, plus
//! identical proofs across CUDA, host and bellperson for equal r, s.
//!
//! Needs a build with `--features cuda-prover-tests/cuda` and a GPU. Without
//! a GPU each test says it skipped, unless `CP_REQUIRE_GPU=1` (set on GPU
//! machines) makes that a failure. `CP_CUDA_MIN_LOG` and `CP_CUDA_MAX_LOG`
//! (default 10 and 16) bound the sizes of the equality test; params come
//! from `CP_PARAMS_DIR`.
#![cfg(feature = "cuda")]

use std::sync::Arc;

use cuda_prover_bellperson::circuits::Kind;
use cuda_prover_bellperson::Placement;
use cuda_prover_bellperson::{
    prove_from_assignments, synthesize, Backend, Blinding, Context, ContextOptions, ErrorCode,
    KeyCheck, ProvingKey,
};
use cuda_prover_engine::{DeviceSelection, Engine, EngineConfig, Policy};
use cuda_prover_groth16::Groth16Engine;
use cuda_prover_groth16::{BlindingSource, Job};
use cuda_prover_pipeline::SynthesisMode;
use cuda_prover_tests::{
    builtin, cached_builtin_keys, expected_stream_chunks, gpu, keys_for, native_proofs,
    proof_bytes, Keys, Pattern, Values,
};
use rand_chacha::ChaCha8Rng;
use rand_core::SeedableRng;

fn max_log() -> u32 {
    std::env::var("CP_CUDA_MAX_LOG")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(16)
}

fn min_log() -> u32 {
    std::env::var("CP_CUDA_MIN_LOG")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10)
}

#[test]
fn cuda_equals_host_and_bellperson() {
    let Some(ctx) = gpu() else { return };
    let host = Context::host(1).unwrap();
    for kind in [Kind::Chain, Kind::Bits] {
        for log in (min_log()..=max_log()).step_by(2) {
            let keys = cached_builtin_keys(kind, log);
            for batch in [1usize, 3] {
                let circuits: Vec<_> = (0..batch)
                    .map(|i| builtin(kind, log, 500 + i as u64))
                    .collect();
                let synth: Vec<_> = circuits.iter().map(|c| synthesize(*c).unwrap()).collect();
                let bl = Blinding::random_vec(&mut ChaCha8Rng::seed_from_u64(log as u64), batch);
                let t = std::time::Instant::now();
                let cuda = prove_from_assignments(&ctx, &keys.key, &synth, &bl, &Placement::on(0))
                    .unwrap();
                let cuda_s = t.elapsed().as_secs_f64();
                for (o, c) in cuda.iter().zip(&circuits) {
                    assert_eq!(o.device, 0);
                    assert!(
                        keys.key.verify(&o.proof, &[c.public_input()]).unwrap(),
                        "{kind:?} 2^{log}"
                    );
                }
                // The CPU references get slow at the top sizes: at 2^20
                // bellperson checks the single proof and the host backend
                // the batch.
                let mut compared = Vec::new();
                if log <= 18 || batch == 1 {
                    compared.push("bellperson");
                    let theirs = native_proofs(circuits.clone(), &keys.params, &bl);
                    for (o, t) in cuda.iter().zip(&theirs) {
                        assert_eq!(
                            proof_bytes(&o.proof),
                            proof_bytes(t),
                            "{kind:?} 2^{log} x{batch}: cuda == bellperson"
                        );
                    }
                }
                if log <= 18 || batch > 1 {
                    let h =
                        prove_from_assignments(&host, &keys.key, &synth, &bl, &Placement::on(0))
                            .unwrap();
                    for (o, t) in cuda.iter().zip(&h) {
                        assert_eq!(
                            proof_bytes(&o.proof),
                            proof_bytes(&t.proof),
                            "{kind:?} 2^{log} x{batch}: cuda == host"
                        );
                    }
                    compared.push("host");
                }
                eprintln!(
                    "{} 2^{log} x{batch}: cuda {:.3} s, identical to {}",
                    kind.name(),
                    cuda_s,
                    compared.join(" and ")
                );
            }
        }
    }
}

/// The MSMs' scalar patterns on the GPU (A, B and L scalars all 0, all 1,
/// or mixed 0 / 1 / random, at sizes that are multiples of nothing): proofs
/// identical to the host backend's and bellperson's, and valid.
#[test]
fn msm_scalar_patterns_equal_host() {
    let Some(ctx) = gpu() else { return };
    let host = Context::host(1).unwrap();
    for n in [997usize, 5003] {
        let keys = keys_for(
            &format!("pattern-{n}"),
            Pattern {
                n,
                values: Values::Mixed,
                seed: 0,
            },
        );
        for values in [Values::Zeros, Values::Ones, Values::Mixed] {
            let c = Pattern {
                n,
                values,
                seed: n as u64 + 7,
            };
            let synth = vec![synthesize(c).unwrap()];
            let bl = Blinding::random_vec(&mut ChaCha8Rng::seed_from_u64(n as u64), 1);
            let cuda =
                prove_from_assignments(&ctx, &keys.key, &synth, &bl, &Placement::on(0)).unwrap();
            let h =
                prove_from_assignments(&host, &keys.key, &synth, &bl, &Placement::on(0)).unwrap();
            let theirs = native_proofs(vec![c], &keys.params, &bl);
            assert!(
                keys.key.verify(&cuda[0].proof, &c.public_inputs()).unwrap(),
                "{values:?} n={n}: proof verifies"
            );
            assert_eq!(
                proof_bytes(&cuda[0].proof),
                proof_bytes(&h[0].proof),
                "{values:?} n={n}: cuda == host"
            );
            assert_eq!(
                proof_bytes(&cuda[0].proof),
                proof_bytes(&theirs[0]),
                "{values:?} n={n}: cuda == bellperson"
            );
        }
    }
}

#[test]
fn routing_on_one_gpu() {
    let Some(ctx) = gpu() else { return };
    let n = ctx.device_count().unwrap();
    assert!(n >= 1);
    let info = ctx.device_info(0).unwrap();
    eprintln!(
        "device 0: {} cc {:?}, {} MiB free",
        info.name,
        info.compute_capability,
        info.free_bytes >> 20
    );
    assert!(!info.simulated && info.total_bytes > 0);
    // A key of its own: device copies belong to the key, shared by every
    // context on the device, so a key another test used is already there.
    let params = cached_builtin_keys(Kind::Bits, 10);
    let key = ProvingKey::from_params(&params.params).unwrap();
    let keys = Keys {
        params: params.params.clone(),
        key,
    };
    let s = vec![synthesize(builtin(Kind::Bits, 10, 1)).unwrap()];
    let bl = Blinding::random_vec(&mut ChaCha8Rng::seed_from_u64(1), 1);
    let o = prove_from_assignments(&ctx, &keys.key, &s, &bl, &Placement::on(0)).unwrap();
    assert_eq!(o[0].device, 0);
    let err =
        prove_from_assignments(&ctx, &keys.key, &s, &bl, &Placement::on(n as u32)).unwrap_err();
    assert_eq!(err.code(), Some(ErrorCode::DeviceIndex), "{err}");
    let o = prove_from_assignments(&ctx, &keys.key, &s, &bl, &Placement::AUTO).unwrap();
    assert_eq!(o[0].device, 0);
    assert_eq!(
        ctx.device_stats(0).unwrap().srs_uploads,
        1,
        "key uploaded once and reused"
    );
}

#[test]
fn many_threads_on_one_gpu() {
    let Some(ctx) = gpu() else { return };
    let keys = cached_builtin_keys(Kind::Chain, 14);
    std::thread::scope(|s| {
        for t in 0..8u64 {
            let (ctx, keys) = (&ctx, &keys);
            s.spawn(move || {
                for i in 0..3 {
                    let c = builtin(Kind::Chain, 14, 100 * t + i);
                    let syn = vec![synthesize(c).unwrap()];
                    let bl = Blinding::random_vec(&mut ChaCha8Rng::seed_from_u64(t * 10 + i), 1);
                    let o = prove_from_assignments(ctx, &keys.key, &syn, &bl, &Placement::on(0))
                        .unwrap();
                    assert!(keys.key.verify(&o[0].proof, &[c.public_input()]).unwrap());
                }
            });
        }
    });
    assert_eq!(ctx.device_stats(0).unwrap().proofs, 24);
}

#[test]
fn too_big_for_the_card_is_a_clean_error() {
    let Some(ctx) = gpu() else { return };
    let keys = cached_builtin_keys(Kind::Chain, 14);
    let s = vec![synthesize(builtin(Kind::Chain, 14, 2)).unwrap()];
    let bl = Blinding::random_vec(&mut ChaCha8Rng::seed_from_u64(2), 1);
    // A card with 1 MiB left: neither the key nor, for streaming it, the
    // working set fits.
    ctx.set_memory_limit(0, Some(1 << 20)).unwrap();
    let err = prove_from_assignments(&ctx, &keys.key, &s, &bl, &Placement::on(0)).unwrap_err();
    assert_eq!(err.code(), Some(ErrorCode::OutOfMemory), "{err}");
    assert!(err.to_string().contains("MiB"), "says how much: {err}");
    // The engine refuses the job before it starts, naming the device.
    let ctx = Arc::new(ctx);
    let engine = Engine::new(ctx.clone(), EngineConfig::default()).unwrap();
    let job = Job {
        name: "big".into(),
        partitions: vec![builtin(Kind::Chain, 14, 3)],
        blinding: BlindingSource::Seeded(1),
        trim_after: false,
        synthesis: SynthesisMode::Auto,
        shape: None,
    };
    let e = engine
        .run(job, &keys.key, |_| {})
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("device 0"), "{e}");
    // Lifting the limit makes the same request work.
    ctx.set_memory_limit(0, None).unwrap();
    let o = prove_from_assignments(&ctx, &keys.key, &s, &bl, &Placement::on(0)).unwrap();
    assert!(keys
        .key
        .verify(&o[0].proof, &[builtin(Kind::Chain, 14, 2).public_input()])
        .unwrap());
}

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
        let resident = est.working_bytes + est.srs_bytes;
        // Smallest buffers (many chunks), a third of the key, just short of
        // resident.
        // (At small sizes the MSM buffers of a resident key can be smaller
        // than the streamed minimum: only limits that must stream count.)
        let mut streamed_limits = 0;
        for limit in [
            est.streamed_bytes,
            est.streamed_bytes + est.srs_bytes / 3 + 1000,
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
        est.streamed_bytes + est.srs_bytes / 4,
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
    let resident = est.working_bytes + est.srs_bytes;
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
    let limit = est.working_bytes + est.srs_bytes / 4;
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
        est.srs_bytes >> 20,
        limit >> 20,
        streamed[1].timings.stream_chunks,
        streamed[1].timings.stream_buffer_bytes >> 20,
        streamed.iter().map(|p| p.timings.peak_device_bytes).max().unwrap_or(0) >> 20,
        ms(&resident),
        ms(&streamed),
        ms(&streamed) / ms(&resident)
    );
}

#[test]
fn trim_returns_device_memory() {
    let Some(ctx) = gpu() else { return };
    let keys = cached_builtin_keys(Kind::Chain, 16);
    let s = vec![synthesize(builtin(Kind::Chain, 16, 2)).unwrap()];
    let bl = Blinding::random_vec(&mut ChaCha8Rng::seed_from_u64(2), 1);
    prove_from_assignments(&ctx, &keys.key, &s, &bl, &Placement::on(0)).unwrap();
    let held = ctx.device_stats(0).unwrap().cache_bytes;
    let held_all = ctx.device_stats(0).unwrap().held_bytes;
    let before = ctx.device_info(0).unwrap().free_bytes;
    let freed = ctx.trim(0).unwrap();
    let after = ctx.device_info(0).unwrap().free_bytes;
    // held_bytes: the cache and whatever else trim gives back.
    assert!(held_all >= held, "held {held_all} < cache {held}");
    assert!(ctx.device_stats(0).unwrap().held_bytes < held_all);
    eprintln!(
        "trim: cache {} MiB, freed {} MiB, free {} -> {} MiB",
        held >> 20,
        freed >> 20,
        before >> 20,
        after >> 20
    );
    assert!(held > 0 && freed == held);
    assert!(after >= before + freed / 2, "memory returned to the device");
    assert_eq!(ctx.device_stats(0).unwrap().cache_bytes, 0);
    // The next proof makes the cache again: lane 0's, and lane 1's where
    // the card has room for a second pass in flight.
    let allocs = ctx.device_stats(0).unwrap().cache_allocations;
    prove_from_assignments(&ctx, &keys.key, &s, &bl, &Placement::on(0)).unwrap();
    let again = ctx.device_stats(0).unwrap().cache_allocations - allocs;
    assert!((1..=2).contains(&again), "{again} allocations");
    // And a proof after that makes none.
    prove_from_assignments(&ctx, &keys.key, &s, &bl, &Placement::on(0)).unwrap();
    assert_eq!(
        ctx.device_stats(0).unwrap().cache_allocations,
        allocs + again
    );
}

#[test]
fn engine_on_the_gpu() {
    let Some(ctx) = gpu() else { return };
    let keys = cached_builtin_keys(Kind::Bits, 14);
    let engine = Engine::new(
        Arc::new(ctx),
        EngineConfig {
            devices: DeviceSelection::All,
            policy: Policy::LeastLoaded,
            ..Default::default()
        },
    )
    .unwrap();
    let job = Job {
        name: "gpu".into(),
        partitions: (0..16).map(|k| builtin(Kind::Bits, 14, k)).collect(),
        blinding: BlindingSource::Seeded(4),
        trim_after: true,
        synthesis: SynthesisMode::Auto,
        shape: None,
    };
    let out = engine.run(job, &keys.key, |_| {}).unwrap();
    assert_eq!(out.proofs.len(), 16);
    eprintln!("{}", out.report.summary());
}

/// Without a GPU (or driver) a cuda build reports zero devices with the
/// reason, refuses an explicit CUDA context and falls back to the host
/// backend in automatic mode; with a GPU, automatic mode picks CUDA. Runs in
/// CI, where there is no GPU.
#[test]
fn automatic_backend_follows_the_hardware() {
    use cuda_prover_engine::{open_context, BackendChoice};
    assert!(cuda_prover_bellperson::built_with_cuda());
    let (n, why) = cuda_prover_bellperson::cuda_device_count().unwrap();
    let auto = open_context(BackendChoice::Auto, 2, &DeviceSelection::All).unwrap();
    if n == 0 {
        assert!(why.is_some(), "a zero count says why");
        let err = Context::new(ContextOptions {
            backend: Backend::Cuda,
            host_devices: 0,
            host_threads: 0,
            devices: Vec::new(),
        })
        .err()
        .expect("an explicit CUDA context needs a GPU");
        assert_eq!(err.code, ErrorCode::Device, "{err}");
        assert_eq!(auto.backend_name(), "host");
        assert_eq!(auto.device_count().unwrap(), 2);
        assert!(open_context(BackendChoice::Cuda, 0, &DeviceSelection::All).is_err());
    } else {
        assert_eq!(auto.backend_name(), "cuda");
        assert_eq!(auto.device_count().unwrap(), n);
    }
}

/// The witness path on the GPU: a, b, c evaluated on the device give the
/// proofs of the full path and of the host backend, byte for byte; an
/// unsatisfied witness is caught on the device with its row; trim frees the
/// resident shape.
#[test]
fn cuda_witness_path_equals_full_path() {
    use cuda_prover_bellperson::{prove_from_witnesses, synthesize_witness, Shape, ShapeData};
    let Some(ctx) = gpu() else { return };
    let host = Context::host(1).unwrap();
    for kind in [Kind::Chain, Kind::Bits] {
        for log in (min_log()..=max_log()).step_by(2) {
            let keys = cached_builtin_keys(kind, log);
            let shape = Shape::new(&ShapeData::record(builtin(kind, log, 0)).unwrap()).unwrap();
            let circuits: Vec<_> = (0..3).map(|i| builtin(kind, log, 700 + i)).collect();
            let hint = keys.key.size_hint().unwrap();
            let synth: Vec<_> = circuits.iter().map(|c| synthesize(*c).unwrap()).collect();
            let wit: Vec<_> = circuits
                .iter()
                .map(|c| synthesize_witness(*c, hint).unwrap())
                .collect();
            let bl = Blinding::random_vec(&mut ChaCha8Rng::seed_from_u64(99), 3);
            let full =
                prove_from_assignments(&ctx, &keys.key, &synth, &bl, &Placement::on(0)).unwrap();
            let t = std::time::Instant::now();
            let w = prove_from_witnesses(&ctx, &keys.key, &shape, &wit, &bl, &Placement::on(0))
                .unwrap();
            let w_s = t.elapsed().as_secs_f64();
            let h = prove_from_witnesses(
                &host,
                &keys.key,
                &shape,
                &wit[..1],
                &bl[..1],
                &Placement::on(0),
            )
            .unwrap();
            for k in 0..3 {
                assert_eq!(
                    proof_bytes(&full[k].proof),
                    proof_bytes(&w[k].proof),
                    "{kind:?} 2^{log} #{k}"
                );
                assert!(keys
                    .key
                    .verify(&w[k].proof, &[circuits[k].public_input()])
                    .unwrap());
            }
            assert_eq!(
                proof_bytes(&h[0].proof),
                proof_bytes(&w[0].proof),
                "host = cuda, {kind:?} 2^{log}"
            );
            println!(
                "witness path identical: {} 2^{log}: 3 proofs {w_s:.3} s, evaluation {:.2} ms, device {:.2} ms",
                kind.name(),
                w[1].timings.eval_ns as f64 / 1e6,
                w[1].timings.device_ns as f64 / 1e6
            );

            let mut bad = wit[0].clone();
            let n = bad.aux.len();
            bad.aux[n / 2] += blstrs::Scalar::from(1u64);
            let e =
                prove_from_witnesses(&ctx, &keys.key, &shape, &[bad], &bl[..1], &Placement::on(0))
                    .unwrap_err();
            assert_eq!(e.code(), Some(ErrorCode::Unsatisfied), "{e}");
            assert!(e.to_string().contains("constraint "), "{e}");
        }
    }
    let freed = ctx.trim(0).unwrap();
    assert!(freed > 0, "trim frees the working cache and the shape");
}

/// What nvidia-smi answers to `--query-gpu=index,uuid,memory.used`, or None
/// without nvidia-smi.
fn smi_gpus() -> Option<Vec<(u32, String, u64)>> {
    let out = std::process::Command::new("nvidia-smi")
        .args([
            "--query-gpu=index,uuid,memory.used",
            "--format=csv,noheader,nounits",
        ])
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let rows = text
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split(',').map(str::trim).collect();
            Some((
                f.first()?.parse().ok()?,
                f.get(1)?.to_string(),
                f.get(2)?.parse().ok()?,
            ))
        })
        .collect();
    Some(rows)
}

/// (pid, used MiB, gpu uuid) of every compute process nvidia-smi sees.
fn smi_apps() -> Vec<(u32, u64, String)> {
    let Ok(out) = std::process::Command::new("nvidia-smi")
        .args([
            "--query-compute-apps=pid,used_memory,gpu_uuid",
            "--format=csv,noheader,nounits",
        ])
        .output()
    else {
        return Vec::new();
    };
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split(',').map(str::trim).collect();
            Some((
                f.first()?.parse().ok()?,
                f.get(1)?.parse().ok()?,
                f.get(2)?.to_string(),
            ))
        })
        .collect()
}

/// GPU isolation, in a process of its own (CUDA contexts are per process,
/// and the other tests of this binary use every GPU): a job given only the
/// last GPU proves there, the core's record says it touched no other GPU,
/// and nvidia-smi never shows the child on another GPU. With
/// `CP_GPU_TEST_ALONE=1` (this test run by itself) the memory nvidia-smi
/// reports for the other GPUs must not grow by a context's worth either.
#[test]
fn gpu_isolation_in_a_child_process() {
    let usable = cuda_prover_bellperson::cuda_usable_devices().unwrap();
    let Some(&target) = usable.last() else {
        if std::env::var("CP_REQUIRE_GPU").is_ok() {
            panic!("CP_REQUIRE_GPU is set but no usable CUDA device is visible");
        }
        eprintln!("SKIPPED: no CUDA device");
        return;
    };
    let before = smi_gpus();
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "gpu_isolation_child",
            "--include-ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("CP_ISOLATION_CHILD", target.to_string())
        .env("CUDA_DEVICE_ORDER", "PCI_BUS_ID")
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let mut seen: Vec<(u32, u64, String)> = Vec::new();
    let mut peak_used: Vec<(u32, u64)> = Vec::new();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        seen.extend(smi_apps().into_iter().filter(|a| a.0 == pid));
        if let Some(g) = smi_gpus() {
            for (i, _, used) in g {
                match peak_used.iter_mut().find(|p| p.0 == i) {
                    Some(p) => p.1 = p.1.max(used),
                    None => peak_used.push((i, used)),
                }
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(150));
    };
    let mut out = String::new();
    std::io::Read::read_to_string(child.stdout.as_mut().unwrap(), &mut out).unwrap();
    eprintln!("child stdout:\n{out}");
    assert!(status.success(), "the child failed: {status}");
    assert!(out.contains("CHILD_OK"), "the child ran the job");

    let Some(before) = before else {
        eprintln!("no nvidia-smi: the core's record was checked, nvidia-smi was not");
        return;
    };
    let uuid_index = |u: &str| before.iter().find(|g| g.1 == u).map(|g| g.0);
    eprintln!("nvidia-smi before: {before:?}");
    eprintln!("nvidia-smi peak memory.used per GPU while the child ran: {peak_used:?}");
    eprintln!("nvidia-smi compute-apps rows of the child (pid {pid}): {seen:?}");
    for (_, mib, uuid) in &seen {
        assert_eq!(
            uuid_index(uuid),
            Some(target),
            "the child holds {mib} MiB on GPU {uuid}, not on its GPU {target}"
        );
    }
    if std::env::var("CP_GPU_TEST_ALONE").is_ok() {
        for (i, _, used0) in &before {
            let peak = peak_used
                .iter()
                .find(|p| p.0 == *i)
                .map(|p| p.1)
                .unwrap_or(0);
            if *i == target {
                assert!(
                    peak > used0 + 256,
                    "GPU {i} ran the job: its memory grew ({used0} -> {peak} MiB)"
                );
            } else {
                assert!(
                    peak <= used0 + 32,
                    "GPU {i} was not given: {used0} -> {peak} MiB"
                );
            }
        }
    }
}

/// The child of [`gpu_isolation_in_a_child_process`]: a whole engine job on
/// CUDA device `CP_ISOLATION_CHILD` only.
#[test]
#[ignore = "run by gpu_isolation_in_a_child_process in a process of its own"]
fn gpu_isolation_child() {
    use cuda_prover_engine::{open_context, BackendChoice};
    let target: u32 = std::env::var("CP_ISOLATION_CHILD")
        .expect("CP_ISOLATION_CHILD names the device")
        .parse()
        .unwrap();
    let sel = DeviceSelection::List(vec![target]);
    let ctx = Arc::new(open_context(BackendChoice::Cuda, 0, &sel).unwrap());
    let n = ctx.device_count().unwrap() as u32;
    assert_eq!(ctx.open_devices().unwrap(), vec![target]);
    let keys = cached_builtin_keys(Kind::Chain, 14);
    let engine = Engine::new(
        ctx.clone(),
        EngineConfig {
            devices: sel,
            ..Default::default()
        },
    )
    .unwrap();
    let job = Job {
        name: "isolated".into(),
        partitions: (0..4).map(|k| builtin(Kind::Chain, 14, k)).collect(),
        blinding: BlindingSource::Seeded(5),
        trim_after: false,
        synthesis: SynthesisMode::Auto,
        shape: None,
    };
    let out = engine.run(job, &keys.key, |_| {}).unwrap();
    assert!(out.proofs.iter().all(|p| p.output.device == target));
    for d in 0..n {
        assert_eq!(ctx.touched(d).unwrap(), d == target, "device {d}");
    }
    assert_eq!(out.report.devices_touched, vec![target]);
    for p in &out.report.per_partition {
        assert!(p.peak_device_bytes > 0 && p.estimated_device_bytes > 0);
    }
    // A second context of this process cannot reach outside its device set.
    if let Some(other) = (0..n).find(|&d| d != target) {
        let err = open_context(BackendChoice::Cuda, 0, &DeviceSelection::List(vec![other]))
            .err()
            .expect("a device outside the process's set is refused");
        assert!(
            err.to_string()
                .contains("outside this process's device set"),
            "{err}"
        );
        assert!(!ctx.touched(other).unwrap());
    }
    let d = &out.report.per_device[0];
    println!(
        "CHILD_OK pid={} device={target} of {n} touched={:?} peak_measured={} MiB estimated={} MiB",
        std::process::id(),
        out.report.devices_touched,
        d.peak_device_bytes >> 20,
        d.estimated_device_bytes >> 20
    );
    eprint!("{}", out.report.summary());
    // Hold the contexts a moment so that the parent samples nvidia-smi.
    std::thread::sleep(std::time::Duration::from_millis(1500));
}

#[test]
fn cuda_fixed_base_edges() {
    let Some(ctx) = gpu() else { return };
    cuda_prover_tests::device_keys::check_fixed_base_edges_on(&ctx, 0);
}

#[test]
fn cuda_keygen_equals_host_cores() {
    let Some(ctx) = gpu() else { return };
    // Small and medium sections, G1 and G2, dense and 0/1-heavy columns.
    for (kind, log) in [(Kind::Chain, 10), (Kind::Bits, 14), (Kind::Chain, 16)] {
        cuda_prover_tests::device_keys::check_keygen_on(&ctx, 0, kind, log);
    }
}

#[test]
fn cuda_subgroup_checks_name_the_same_point() {
    let Some(ctx) = gpu() else { return };
    cuda_prover_tests::device_keys::check_loads_on(&ctx, 0);
    // The same key checked on the host's cores and on the GPU (the key
    // file from CP_PARAMS_DIR, where the GPU machine's runs keep them).
    let Some(dir) = std::env::var_os("CP_PARAMS_DIR") else {
        return;
    };
    let log = max_log().max(18);
    cached_builtin_keys(Kind::Chain, log);
    let path = cuda_prover_groth16::params::key_path(
        std::path::Path::new(&dir),
        &builtin(Kind::Chain, log, 0),
    );
    let (on_host, h) = ProvingKey::load_file(&path, KeyCheck::FullNoDigest).unwrap();
    let (on_gpu, g) = ProvingKey::load_file_on(&ctx, 0, &path, KeyCheck::FullNoDigest).unwrap();
    assert_eq!(on_host.fingerprint(), on_gpu.fingerprint());
    eprintln!(
        "subgroup checks of chain 2^{log} ({} points): host cores {:.3} s, gpu {:.3} s (loads {:.3} s / {:.3} s)",
        g.points,
        h.subgroup_time.as_secs_f64(),
        g.subgroup_time.as_secs_f64(),
        h.total.as_secs_f64(),
        g.total.as_secs_f64()
    );
}
