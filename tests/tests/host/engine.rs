//! The multi-device engine on simulated devices: ownership, order,
//! fail-fast, backpressure, policies.

use std::sync::Arc;
use std::time::Duration;

use cuda_prover_bellperson::circuits::{BuiltIn, Kind};
use cuda_prover_bellperson::{Context, ErrorCode};
use cuda_prover_engine::{DeviceSelection, Engine, EngineConfig, EngineError, Policy};
use cuda_prover_groth16::Groth16Engine;
use cuda_prover_groth16::{BlindingSource, Job};
use cuda_prover_pipeline::SynthesisMode;
use cuda_prover_tests::{builtin, builtin_keys};

fn job(n: usize, seed: u64) -> Job<BuiltIn> {
    Job {
        name: "test".into(),
        partitions: (0..n)
            .map(|k| builtin(Kind::Bits, 8, seed + k as u64))
            .collect(),
        blinding: BlindingSource::Seeded(seed),
        trim_after: false,
        synthesis: SynthesisMode::Auto,
        shape: None,
    }
}

fn engine(ctx: &Arc<Context>, policy: Policy) -> Engine {
    Engine::new(
        ctx.clone(),
        EngineConfig {
            policy,
            ..Default::default()
        },
    )
    .unwrap()
}

#[test]
fn sixteen_partitions_both_policies_two_and_four_devices() {
    let keys = builtin_keys(Kind::Bits, 8);
    for devices in [2u32, 4] {
        for policy in [Policy::RoundRobin, Policy::LeastLoaded] {
            let ctx = Arc::new(Context::host(devices).unwrap());
            let e = engine(&ctx, policy);
            let mut seen = Vec::new();
            let out = e
                .run(job(16, 1000), &keys.key, |p| seen.push((p.item, p.device)))
                .unwrap();
            assert_eq!(out.proofs.len(), 16);
            assert_eq!(seen.len(), 16, "progress reported per partition");
            for (k, p) in out.proofs.iter().enumerate() {
                assert_eq!(p.partition, k, "partition order restored");
                let expect_input = builtin(Kind::Bits, 8, 1000 + k as u64).public_input();
                assert_eq!(p.public_inputs, vec![expect_input]);
                assert!(keys.key.verify(&p.output.proof, &p.public_inputs).unwrap());
                if policy == Policy::RoundRobin {
                    assert_eq!(
                        p.output.device,
                        k as u32 % devices,
                        "round-robin owner of {k}"
                    );
                }
                assert_eq!(out.report.per_partition[k].device, p.output.device);
            }
            for d in 0..devices {
                let n = out.proofs.iter().filter(|p| p.output.device == d).count();
                assert!(n > 0, "{policy:?}: device {d} of {devices} used");
                assert_eq!(
                    ctx.device_stats(d).unwrap().proofs as usize,
                    n,
                    "core agrees on {d}"
                );
                assert_eq!(out.report.per_device[d as usize].partitions, n);
            }
            assert!(out.report.verified);
            assert!(out.report.peak_in_flight <= 2 * devices as usize);
        }
    }
}

#[test]
fn injected_fault_fails_fast_and_names_partition_and_device() {
    let keys = builtin_keys(Kind::Bits, 8);
    let ctx = Arc::new(Context::host(2).unwrap());
    let e = engine(&ctx, Policy::RoundRobin);
    // Partition 5 is owned by device 1 under round-robin.
    ctx.inject_fault(1, Some(5)).unwrap();
    let err = e
        .run(job(16, 0), &keys.key, |_| {})
        .err()
        .expect("the job must fail");
    match &err {
        EngineError::Partition {
            partition, device, ..
        } => {
            assert_eq!((*partition, *device), (5, 1), "{err}");
        }
        other => panic!("unexpected error {other}"),
    }
    assert_eq!(err.core_code(), Some(ErrorCode::InjectedFault));
    let msg = err.to_string();
    assert!(
        msg.contains("partition 5") && msg.contains("device 1"),
        "{msg}"
    );
    // Fail-fast: queued partitions were dropped, not proved.
    let proved: u64 = (0..2).map(|d| ctx.device_stats(d).unwrap().proofs).sum();
    assert!(
        proved < 16,
        "cancelled work was not proved ({proved} proofs)"
    );
    // The engine keeps working.
    let out = e.run(job(6, 50), &keys.key, |_| {}).unwrap();
    assert_eq!(out.proofs.len(), 6);
}

#[test]
fn synthesis_failure_cancels_the_job() {
    use bellpepper_core::{Circuit, ConstraintSystem, SynthesisError};
    #[derive(Clone, Copy)]
    struct MaybeFail(BuiltIn, bool);
    impl Circuit<blstrs::Scalar> for MaybeFail {
        fn synthesize<CS: ConstraintSystem<blstrs::Scalar>>(
            self,
            cs: &mut CS,
        ) -> Result<(), SynthesisError> {
            if self.1 {
                return Err(SynthesisError::AssignmentMissing);
            }
            self.0.synthesize(cs)
        }
    }
    let keys = builtin_keys(Kind::Bits, 8);
    let ctx = Arc::new(Context::host(2).unwrap());
    let e = engine(&ctx, Policy::LeastLoaded);
    let job = Job {
        name: "fails".into(),
        partitions: (0..8)
            .map(|k| MaybeFail(builtin(Kind::Bits, 8, k), k == 3))
            .collect(),
        blinding: BlindingSource::Seeded(1),
        trim_after: false,
        synthesis: SynthesisMode::Auto,
        shape: None,
    };
    let err = e.run(job, &keys.key, |_| {}).err().expect("must fail");
    assert_eq!(err.partition(), Some(3), "{err}");
    assert!(matches!(err, EngineError::Synthesis { .. }), "{err}");
}

#[test]
fn in_flight_partitions_stay_within_two_per_device() {
    let keys = builtin_keys(Kind::Bits, 8);
    for devices in [1u32, 2, 4] {
        let ctx = Arc::new(Context::host(devices).unwrap());
        for d in 0..devices {
            // Slow devices: synthesis runs ahead and meets the bound.
            ctx.set_device_delay(d, Duration::from_millis(60)).unwrap();
        }
        let e = Engine::new(
            ctx.clone(),
            EngineConfig {
                synthesis_threads: 4,
                ..Default::default()
            },
        )
        .unwrap();
        let out = e.run(job(12, 7), &keys.key, |_| {}).unwrap();
        let bound = 2 * devices as usize;
        assert_eq!(out.report.in_flight_bound, bound);
        assert!(
            out.report.peak_in_flight <= bound,
            "{} > {bound}",
            out.report.peak_in_flight
        );
        assert!(
            out.report.peak_in_flight > devices as usize,
            "queues filled: {}",
            out.report.peak_in_flight
        );
    }
}

#[test]
fn least_loaded_finishes_no_later_than_round_robin_on_uneven_devices() {
    let keys = builtin_keys(Kind::Bits, 8);
    let makespan = |policy| {
        let ctx = Arc::new(Context::host(2).unwrap());
        // Device 1 is four times slower than device 0.
        ctx.set_device_delay(0, Duration::from_millis(20)).unwrap();
        ctx.set_device_delay(1, Duration::from_millis(80)).unwrap();
        let out = engine(&ctx, policy)
            .run(job(12, 3), &keys.key, |_| {})
            .unwrap();
        let busy: Vec<f64> = (0..2)
            .map(|d| ctx.device_stats(d).unwrap().busy_ns as f64 / 1e9)
            .collect();
        let counts: Vec<usize> = out.report.per_device.iter().map(|d| d.partitions).collect();
        (busy.iter().cloned().fold(0.0, f64::max), counts)
    };
    let (rr, rr_counts) = makespan(Policy::RoundRobin);
    let (ll, ll_counts) = makespan(Policy::LeastLoaded);
    assert_eq!(rr_counts, vec![6, 6]);
    assert!(
        ll_counts[0] > ll_counts[1],
        "least-loaded favours the fast device: {ll_counts:?}"
    );
    assert!(
        ll <= rr,
        "least-loaded makespan {ll:.3} s > round-robin {rr:.3} s"
    );
}

#[test]
fn device_selection_is_validated_before_work() {
    let ctx = Arc::new(Context::host(2).unwrap());
    let bad = |sel: DeviceSelection| {
        Engine::new(
            ctx.clone(),
            EngineConfig {
                devices: sel,
                ..Default::default()
            },
        )
        .err()
        .expect("must be rejected")
        .to_string()
    };
    assert!(bad(DeviceSelection::List(vec![0, 5])).contains("device 5"));
    assert!(bad(DeviceSelection::List(vec![1, 1])).contains("device 1 is listed twice"));
    assert!(bad(DeviceSelection::Count(3)).contains("3 devices requested"));
    assert!(bad(DeviceSelection::Count(0)).contains("at least 1"));
    let e = Engine::new(
        ctx.clone(),
        EngineConfig {
            devices: DeviceSelection::List(vec![1]),
            ..Default::default()
        },
    )
    .unwrap();
    let keys = builtin_keys(Kind::Bits, 8);
    let out = e.run(job(3, 1), &keys.key, |_| {}).unwrap();
    assert!(out.proofs.iter().all(|p| p.output.device == 1));
    assert_eq!(ctx.device_stats(0).unwrap().proofs, 0);
}

#[test]
fn trim_between_jobs_is_reported() {
    let keys = builtin_keys(Kind::Bits, 8);
    let ctx = Arc::new(Context::host(2).unwrap());
    let e = engine(&ctx, Policy::RoundRobin);
    let mut j = job(4, 9);
    j.trim_after = true;
    let out = e.run(j, &keys.key, |_| {}).unwrap();
    assert_eq!(out.report.trims.len(), 2);
    assert!(out.report.trims.iter().all(|t| t.freed_bytes > 0));
    assert_eq!(ctx.device_stats(0).unwrap().cache_bytes, 0);
    let prom = out.report.to_prometheus();
    assert!(prom.contains("cuda_prover_device_trim_seconds"));
    assert!(prom.contains(
        "cuda_prover_device_partitions_total{job=\"test\",policy=\"round-robin\",device=\"1\"} 2"
    ));
    let json: serde_json::Value = serde_json::from_str(&out.report.to_json()).unwrap();
    assert_eq!(json["partitions"], 4);
}

#[test]
fn prepare_ahead_adds_a_preparer_and_one_in_flight() {
    let keys = builtin_keys(Kind::Bits, 8);
    let ctx = Arc::new(Context::host(1).unwrap());
    // A slow device: the preparers run ahead and meet the bound.
    ctx.set_device_delay(0, Duration::from_millis(60)).unwrap();
    let e = Engine::new(
        ctx.clone(),
        EngineConfig {
            prepare_ahead: 1,
            ..Default::default()
        },
    )
    .unwrap();
    let out = e.run(job(12, 9), &keys.key, |_| {}).unwrap();
    assert_eq!(out.report.in_flight_bound, 3);
    assert!(
        out.report.peak_in_flight <= 3,
        "{}",
        out.report.peak_in_flight
    );
    // Two preparers: with one running and one queued, a third partition
    // is being prepared.
    assert_eq!(out.report.peak_in_flight, 3);
    assert_eq!(out.proofs.len(), 12);
}

#[test]
fn several_workers_per_device_keep_ownership_and_bound() {
    let keys = builtin_keys(Kind::Bits, 8);
    let ctx = Arc::new(Context::host(2).unwrap());
    for d in 0..2 {
        ctx.set_device_delay(d, Duration::from_millis(30)).unwrap();
    }
    let e = Engine::new(
        ctx.clone(),
        EngineConfig {
            workers_per_device: 2,
            synthesis_threads: 4,
            ..Default::default()
        },
    )
    .unwrap();
    let out = e.run(job(12, 40), &keys.key, |_| {}).unwrap();
    assert_eq!(out.report.in_flight_bound, 8);
    assert!(out.report.peak_in_flight <= 8);
    for (k, p) in out.proofs.iter().enumerate() {
        assert_eq!(p.output.device, k as u32 % 2, "round-robin over devices");
    }
    // A device's workers share its mutex, and each partition's 30 ms delay
    // is slept while holding it: a device's partitions are serialized, so
    // the job lasts at least their delays on the busiest device. Two
    // workers running at once would finish in about half. (A device part's
    // time also counts its tail after the mutex, so summed device times
    // may exceed the wall time by the tails; they are not compared.)
    for d in 0..2u32 {
        let n = out
            .report
            .per_partition
            .iter()
            .filter(|p| p.device == d)
            .count();
        assert_eq!(n, 6, "device {d}");
        let serialized = n as f64 * 0.030;
        assert!(
            out.report.wall_s >= serialized,
            "device {d}: {n} partitions of 30 ms each done in {} s",
            out.report.wall_s
        );
    }
}

#[test]
fn each_device_learns_its_workers_and_bad_counts_are_refused() {
    let ctx = Arc::new(Context::host(2).unwrap());
    let workers = |d: u32| ctx.device_stats(d).unwrap().workers;
    assert_eq!((workers(0), workers(1)), (1, 1), "one worker by default");
    let with = |n: usize, devices: DeviceSelection| {
        Engine::new(
            ctx.clone(),
            EngineConfig {
                devices,
                workers_per_device: n,
                ..Default::default()
            },
        )
    };
    with(2, DeviceSelection::List(vec![1])).unwrap();
    assert_eq!((workers(0), workers(1)), (1, 2), "only the engine's device");
    with(3, DeviceSelection::All).unwrap();
    assert_eq!((workers(0), workers(1)), (3, 3));
    with(1, DeviceSelection::All).unwrap();
    assert_eq!(
        (workers(0), workers(1)),
        (1, 1),
        "a later engine sets it back"
    );
    let err = with(65, DeviceSelection::All)
        .err()
        .expect("65 is too many");
    assert!(matches!(err, EngineError::Setup(_)), "{err}");
    assert!(err.to_string().contains("65 workers"), "{err}");
    assert_eq!(workers(0), 1, "refused before any device changed");
    let err = Engine::new(
        ctx.clone(),
        EngineConfig {
            workers_per_device: 65,
            device_memory_limit: Some(64 << 20),
            ..Default::default()
        },
    )
    .err()
    .expect("65 is too many");
    assert!(matches!(err, EngineError::Setup(_)), "{err}");
    assert_eq!(
        ctx.device_stats(0).unwrap().limit_bytes,
        0,
        "no limit set by a refused engine"
    );
    for bad in [0, 65] {
        let e = ctx.set_workers(0, bad).unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidArgument, "{e}");
        assert!(e.to_string().contains(&format!("{bad} workers")), "{e}");
    }
    let e = ctx.set_workers(2, 2).unwrap_err();
    assert_eq!(e.code, ErrorCode::DeviceIndex, "{e}");
}

#[test]
fn workers_run_on_their_cpu_sets() {
    let keys = builtin_keys(Kind::Bits, 8);
    let ctx = Arc::new(Context::host(2).unwrap());
    let e = Engine::new(
        ctx.clone(),
        EngineConfig {
            worker_cpus: Some(vec![vec![0], vec![0]]),
            ..Default::default()
        },
    )
    .unwrap();
    let out = e.run(job(4, 2), &keys.key, |_| {}).unwrap();
    assert_eq!(out.proofs.len(), 4);
    // A set the machine does not have fails the job, naming the device.
    let e = Engine::new(
        ctx,
        EngineConfig {
            worker_cpus: Some(vec![vec![0], vec![1000]]),
            ..Default::default()
        },
    )
    .unwrap();
    let err = e
        .run(job(4, 2), &keys.key, |_| {})
        .err()
        .expect("CPU 1000 does not exist");
    assert_eq!(err.device(), Some(1), "{err}");
}

#[test]
fn least_loaded_finishes_no_later_than_round_robin_on_uneven_partitions() {
    let keys = builtin_keys(Kind::Bits, 8);
    let makespan = |policy| {
        let ctx = Arc::new(Context::host(2).unwrap());
        // Equal devices; every even partition is ten times heavier, so
        // round-robin puts all the heavy work on device 0.
        for k in 0..12i64 {
            let ms = if k % 2 == 0 { 100 } else { 10 };
            ctx.set_tag_delay(k, Duration::from_millis(ms)).unwrap();
        }
        engine(&ctx, policy)
            .run(job(12, 5), &keys.key, |_| {})
            .unwrap();
        (0..2)
            .map(|d| ctx.device_stats(d).unwrap().busy_ns as f64 / 1e9)
            .fold(0.0, f64::max)
    };
    let rr = makespan(Policy::RoundRobin);
    let ll = makespan(Policy::LeastLoaded);
    assert!(
        rr >= 0.6,
        "round-robin keeps the six heavy partitions on one device: {rr:.3} s"
    );
    assert!(
        ll <= rr,
        "least-loaded makespan {ll:.3} s > round-robin {rr:.3} s"
    );
}

#[test]
fn a_panicking_circuit_fails_the_job_not_the_engine() {
    use bellpepper_core::{Circuit, ConstraintSystem, SynthesisError};
    #[derive(Clone, Copy)]
    struct Panics(BuiltIn, bool);
    impl Circuit<blstrs::Scalar> for Panics {
        fn synthesize<CS: ConstraintSystem<blstrs::Scalar>>(
            self,
            cs: &mut CS,
        ) -> Result<(), SynthesisError> {
            if self.1 {
                panic!("witness generator bug");
            }
            self.0.synthesize(cs)
        }
    }
    let keys = builtin_keys(Kind::Bits, 8);
    let ctx = Arc::new(Context::host(2).unwrap());
    let e = engine(&ctx, Policy::RoundRobin);
    let job = |bad: Option<u64>| Job {
        name: "panics".into(),
        partitions: (0..6)
            .map(|k| Panics(builtin(Kind::Bits, 8, k), Some(k) == bad))
            .collect(),
        blinding: BlindingSource::Seeded(1),
        trim_after: false,
        synthesis: SynthesisMode::Auto,
        shape: None,
    };
    let err = e
        .run(job(Some(2)), &keys.key, |_| {})
        .err()
        .expect("must fail");
    assert_eq!(err.partition(), Some(2), "{err}");
    assert!(err.to_string().contains("witness generator bug"), "{err}");
    assert_eq!(e.run(job(None), &keys.key, |_| {}).unwrap().proofs.len(), 6);
}
