//! Device sets on simulated devices: a context opens only the devices it is
//! given, the core's own record shows it never touched the others, closed
//! devices are refused by name, and the engine's memory check and reports
//! use the device's own estimate beside a measured peak.

use std::sync::Arc;

use cuda_prover_bellperson::circuits::{BuiltIn, Kind};
use cuda_prover_bellperson::Placement;
use cuda_prover_bellperson::{Backend, Context, ContextOptions, ErrorCode};
use cuda_prover_engine::{open_context, BackendChoice, DeviceSelection, Engine, EngineConfig};
use cuda_prover_groth16::Groth16Engine;
use cuda_prover_groth16::{BlindingSource, Job};
use cuda_prover_pipeline::SynthesisMode;
use cuda_prover_tests::{builtin, builtin_keys};

fn job(n: usize, seed: u64) -> Job<BuiltIn> {
    Job {
        name: "isolation".into(),
        partitions: (0..n)
            .map(|k| builtin(Kind::Chain, 8, seed + k as u64))
            .collect(),
        blinding: BlindingSource::Seeded(seed),
        trim_after: true,
        synthesis: SynthesisMode::Auto,
        shape: None,
    }
}

/// The core's error inside a glue error.
fn core(e: cuda_prover_bellperson::Error) -> cuda_prover_device::Error {
    match e {
        cuda_prover_bellperson::Error::Core(e) => e,
        other => panic!("not a core error: {other}"),
    }
}

fn touched(ctx: &Context) -> Vec<u32> {
    (0..ctx.device_count().unwrap() as u32)
        .filter(|&d| ctx.touched(d).unwrap())
        .collect()
}

/// "--gpu-devices 1" of 2: the engine opens device 1 only, every partition
/// runs there, and device 0 is never bound, allocated on or prepared.
#[test]
fn a_job_given_device_1_of_2_never_touches_device_0() {
    let keys = builtin_keys(Kind::Chain, 8);
    let sel = DeviceSelection::List(vec![1]);
    let ctx = Arc::new(open_context(BackendChoice::Host, 2, &sel).unwrap());
    assert_eq!(
        ctx.device_count().unwrap(),
        2,
        "ordinals stay those of the backend"
    );
    assert_eq!(ctx.open_devices().unwrap(), vec![1]);
    assert!(
        touched(&ctx).is_empty(),
        "opening a context touches nothing"
    );

    let engine = Engine::new(
        ctx.clone(),
        EngineConfig {
            devices: sel,
            ..Default::default()
        },
    )
    .unwrap();
    let out = engine.run(job(4, 7), &keys.key, |_| {}).unwrap();
    assert_eq!(out.proofs.len(), 4);
    for p in &out.proofs {
        assert_eq!(p.output.device, 1);
        assert!(keys.key.verify(&p.output.proof, &p.public_inputs).unwrap());
    }
    assert_eq!(touched(&ctx), vec![1]);
    assert_eq!(out.report.devices_touched, vec![1]);
    assert_eq!(out.report.devices, vec![1]);
}

/// The control: a job over both devices touches both, so the record above
/// can tell the difference.
#[test]
fn a_job_over_every_device_touches_each() {
    let keys = builtin_keys(Kind::Chain, 8);
    let ctx = Arc::new(open_context(BackendChoice::Host, 2, &DeviceSelection::All).unwrap());
    assert_eq!(ctx.open_devices().unwrap(), vec![0, 1]);
    let engine = Engine::new(ctx.clone(), EngineConfig::default()).unwrap();
    let out = engine.run(job(4, 9), &keys.key, |_| {}).unwrap();
    assert_eq!(out.report.devices_touched, vec![0, 1]);
}

/// A closed device is refused by every entry point that names it, with a
/// message naming the device set; automatic routing uses the open devices.
#[test]
fn closed_devices_are_refused_by_name() {
    let keys = builtin_keys(Kind::Chain, 8);
    let ctx = Context::new(ContextOptions {
        backend: Backend::Host,
        host_devices: 3,
        host_threads: 1,
        devices: vec![2, 1],
    })
    .unwrap();
    assert_eq!(ctx.open_devices().unwrap(), vec![1, 2]);
    for err in [
        ctx.device_info(0).err().unwrap(),
        ctx.select_gpu(Some(0)).err().unwrap(),
        ctx.trim(0).err().unwrap(),
        ctx.device_stats(0).err().unwrap(),
        core(keys.key.prepare(&ctx, 0).err().unwrap()),
    ] {
        assert_eq!(err.code, ErrorCode::DeviceIndex, "{err}");
        assert!(err.message.contains("device set {1,2}"), "{err}");
    }
    // The device info of an open device keeps its ordinal.
    assert_eq!(ctx.device_info(2).unwrap().ordinal, 2);

    let circuits: Vec<BuiltIn> = (0..3).map(|k| builtin(Kind::Chain, 8, 40 + k)).collect();
    let synth: Vec<_> = circuits
        .into_iter()
        .map(|c| cuda_prover_bellperson::synthesize(c).unwrap())
        .collect();
    let mut rng = <rand_chacha::ChaCha8Rng as rand_core::SeedableRng>::seed_from_u64(3);
    let blinding: Vec<_> = (0..3)
        .map(|_| cuda_prover_bellperson::Blinding::random(&mut rng))
        .collect();
    let outs = cuda_prover_bellperson::prove_from_assignments(
        &ctx,
        &keys.key,
        &synth,
        &blinding,
        &Placement::AUTO,
    )
    .unwrap();
    let devices: Vec<i32> = outs.iter().map(|o| o.device as i32).collect();
    assert_eq!(
        devices,
        vec![1, 1, 2],
        "automatic routing over the open devices"
    );
    let err = core(
        cuda_prover_bellperson::prove_from_assignments(
            &ctx,
            &keys.key,
            &synth,
            &blinding,
            &Placement::on(0),
        )
        .err()
        .unwrap(),
    );
    assert_eq!(err.code, ErrorCode::DeviceIndex, "{err}");
    assert!(!ctx.touched(0).unwrap());
    assert!(ctx.touched(1).unwrap() && ctx.touched(2).unwrap());
}

/// Device sets that cannot be opened say why.
#[test]
fn bad_device_sets_are_errors() {
    for (devices, needle) in [
        (vec![5], "device 5 does not exist"),
        (vec![1, 1], "listed twice"),
    ] {
        let err = Context::new(ContextOptions {
            backend: Backend::Host,
            host_devices: 2,
            host_threads: 1,
            devices,
        })
        .err()
        .unwrap();
        assert_eq!(err.code, ErrorCode::DeviceIndex, "{err}");
        assert!(err.message.contains(needle), "{err}");
    }
    let ctx =
        Arc::new(open_context(BackendChoice::Host, 2, &DeviceSelection::List(vec![1])).unwrap());
    let err = Engine::new(
        ctx,
        EngineConfig {
            devices: DeviceSelection::List(vec![0]),
            ..Default::default()
        },
    )
    .err()
    .unwrap();
    assert!(
        err.to_string().contains("not in the context's device set"),
        "{err}"
    );
}

/// The engine checks memory with the device's own estimate (the host
/// backend's here), and reports a measured peak beside the estimate.
#[test]
fn memory_check_uses_the_device_estimate_and_reports_measure_the_peak() {
    let keys = builtin_keys(Kind::Chain, 8);
    let ctx = Arc::new(Context::host(2).unwrap());
    let n = keys.key.domain_size().unwrap();
    let est = keys.key.device_memory_estimate(&ctx, 1, n).unwrap();
    assert_eq!(
        est,
        keys.key.memory_estimate(n).unwrap(),
        "host devices use the host layout"
    );
    assert!(est.working_bytes > 0);
    let err = keys.key.device_memory_estimate(&ctx, 2, n).err().unwrap();
    assert_eq!(core(err).code, ErrorCode::DeviceIndex);

    let engine = Engine::new(ctx.clone(), EngineConfig::default()).unwrap();
    engine.check_memory(&keys.key).unwrap();
    // A cap just below what device 1 needs with the key resident passes
    // (the key is streamed); one below what streaming needs fails the
    // check on device 1.
    let need = est.working_bytes + est.key_bytes;
    assert!(est.streamed_bytes < need);
    ctx.set_memory_limit(1, Some(need - 1)).unwrap();
    engine.check_memory(&keys.key).unwrap();
    ctx.set_memory_limit(1, Some(est.streamed_bytes - 1))
        .unwrap();
    let err = engine.check_memory(&keys.key).err().unwrap().to_string();
    assert!(err.contains("device 1"), "{err}");
    ctx.set_memory_limit(1, None).unwrap();

    let out = engine.run(job(2, 11), &keys.key, |_| {}).unwrap();
    for p in &out.report.per_partition {
        assert!(p.peak_device_bytes > 0, "measured peak");
        assert!(
            p.estimated_device_bytes >= est.working_bytes / 2,
            "estimate present"
        );
    }
    for d in &out.report.per_device {
        assert!(d.peak_device_bytes > 0 && d.estimated_device_bytes > 0);
    }
}
