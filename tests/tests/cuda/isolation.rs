//! GPU isolation: a job on the last GPU, in a child process of its own,
//! touches no other GPU (the core's record and nvidia-smi).

use std::sync::Arc;

use cuda_prover_bellperson::circuits::Kind;
use cuda_prover_engine::{DeviceSelection, Engine, EngineConfig};
use cuda_prover_groth16::Groth16Engine;
use cuda_prover_groth16::{BlindingSource, Job};
use cuda_prover_pipeline::SynthesisMode;
use cuda_prover_tests::{builtin, cached_builtin_keys};

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
            "isolation::gpu_isolation_child",
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
