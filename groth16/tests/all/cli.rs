//! The CLI end to end on simulated devices: proofs, report, metrics, errors.

use std::process::Command;

fn cli() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_cuda-prover"));
    c.env_remove("CUDA_PROVER_HOST_DEVICES");
    c
}

#[test]
fn prove_writes_report_and_metrics() {
    let dir = std::env::temp_dir().join(format!("cp-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let report = dir.join("r.json");
    let metrics = dir.join("m.prom");
    let out = cli()
        .args([
            "prove",
            "--backend",
            "host",
            "--host-devices",
            "2",
            "--circuit",
            "bits",
        ])
        .args([
            "--log-constraints",
            "8",
            "--partitions",
            "6",
            "--policy",
            "least-loaded",
        ])
        .arg("--params-dir")
        .arg(&dir)
        .arg("--report")
        .arg(&report)
        .arg("--metrics")
        .arg(&metrics)
        .args(["--seed", "3", "--trim-after"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("all 6 proofs verified"), "{stdout}");
    assert!(stderr.contains("[6/6]"), "progress shown: {stderr}");
    assert!(stderr.contains("generating params"), "{stderr}");
    let r: serde_json::Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    assert_eq!(r["partitions"], 6);
    assert_eq!(r["policy"], "least-loaded");
    assert_eq!(r["devices"], serde_json::json!([0, 1]));
    assert_eq!(r["per_partition"].as_array().unwrap().len(), 6);
    assert_eq!(r["trims"].as_array().unwrap().len(), 2);
    let m = std::fs::read_to_string(&metrics).unwrap();
    assert!(m.contains("cuda_prover_device_busy_seconds"), "{m}");
    // Second run loads the cached key instead of generating it.
    let out = cli()
        .args([
            "prove",
            "--backend",
            "host",
            "--host-devices",
            "2",
            "--circuit",
            "bits",
        ])
        .args([
            "--log-constraints",
            "8",
            "--partitions",
            "2",
            "--gpu-devices",
            "1",
        ])
        .arg("--params-dir")
        .arg(&dir)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(!stderr.contains("generating params"), "{stderr}");
    assert!(stderr.contains("proved on device 1"));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn bad_options_are_clear_errors() {
    let run = |args: &[&str]| {
        let out = cli().args(args).output().unwrap();
        assert!(!out.status.success(), "{args:?} succeeded");
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let e = run(&[
        "prove",
        "--backend",
        "host",
        "--host-devices",
        "2",
        "--gpu-devices",
        "0,3",
    ]);
    assert!(e.contains("device 3 does not exist"), "{e}");
    let e = run(&["prove", "--backend", "host", "--gpu-devices", "0,0"]);
    assert!(e.contains("listed twice"), "{e}");
    let e = run(&["prove", "--backend", "host", "--log-constraints", "40"]);
    assert!(e.contains("outside"), "{e}");
    let e = run(&["prove", "--circuit", "nope"]);
    assert!(e.contains("unknown circuit"), "{e}");
    let e = run(&[
        "prove",
        "--backend",
        "host",
        "--host-devices",
        "2",
        "--worker-cpus",
        "0",
    ]);
    assert!(e.contains("CPU sets"), "{e}");
}

#[test]
fn corrupt_cached_params_are_reported() {
    let dir = std::env::temp_dir().join(format!("cp-cli-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("chain-2^8.params"), vec![0u8; 1000]).unwrap();
    let out = cli()
        .args([
            "prove",
            "--backend",
            "host",
            "--log-constraints",
            "8",
            "--partitions",
            "1",
        ])
        .arg("--params-dir")
        .arg(&dir)
        .output()
        .unwrap();
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        e.contains("chain-2^8.params") && e.contains("delete the file"),
        "{e}"
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn synthesis_modes_write_identical_proofs() {
    let dir = std::env::temp_dir().join(format!("cp-cli-synth-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let run = |mode: &str| {
        let proofs = dir.join(format!("proofs-{mode}"));
        let report = dir.join(format!("{mode}.json"));
        let out = cli()
            .args(["prove", "--backend", "host", "--host-devices", "2"])
            .args([
                "--circuit",
                "chain",
                "--log-constraints",
                "8",
                "--partitions",
                "3",
            ])
            .args(["--seed", "9", "--synthesis", mode])
            .arg("--params-dir")
            .arg(&dir)
            .arg("--proofs-out")
            .arg(&proofs)
            .arg("--report")
            .arg(&report)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).to_string();
        let stderr = String::from_utf8_lossy(&out.stderr).to_string();
        assert!(out.status.success(), "{mode}: {stdout}\n{stderr}");
        let r: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
        let files: Vec<Vec<u8>> = (0..3)
            .map(|k| std::fs::read(proofs.join(format!("partition-{k}.proof"))).unwrap())
            .collect();
        (files, r, stderr)
    };
    let (full, rf, _) = run("full");
    let (witness, rw, stderr) = run("witness");
    assert!(
        stderr.contains("shape"),
        "the shape is recorded or loaded: {stderr}"
    );
    let (auto, _, stderr_auto) = run("auto");
    assert!(
        stderr_auto.contains("loaded shape"),
        "the shape file is reused: {stderr_auto}"
    );
    for k in 0..3 {
        assert_eq!(full[k].len(), 192);
        assert_eq!(full[k], witness[k], "partition {k}");
        assert_eq!(full[k], auto[k], "partition {k}");
    }
    let pf = &rf["per_partition"][0];
    let pw = &rw["per_partition"][0];
    assert!(
        pf["synthesis_ms"].is_number() && pf.get("witness_ms").is_none(),
        "{pf}"
    );
    assert!(
        pw["witness_ms"].is_number() && pw.get("synthesis_ms").is_none(),
        "{pw}"
    );
    assert!(pw["evaluation_ms"].as_f64().unwrap() > 0.0, "{pw}");
    assert!(pw["host_bytes"].as_u64().unwrap() < pf["host_bytes"].as_u64().unwrap());

    // A corrupted shape file is not used: it is recorded again.
    let shape = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "shape"))
        .expect("a shape file next to the params");
    let mut bytes = std::fs::read(&shape).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 1;
    std::fs::write(&shape, bytes).unwrap();
    let (again, _, stderr) = run("auto");
    assert!(stderr.contains("checksum"), "{stderr}");
    assert_eq!(again, full);

    let out = cli()
        .args(["prove", "--backend", "host", "--synthesis", "sometimes"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown synthesis mode"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn device_memory_limit_streams_the_key_or_refuses() {
    let dir = std::env::temp_dir().join(format!("cp-cli-limit-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let report = dir.join("r.json");
    let run_with = |limit: &str, sharing: &str| {
        cli()
            .args(["prove", "--backend", "host", "--host-devices", "2"])
            .args(["--circuit", "chain", "--log-constraints", "13"])
            .args(["--partitions", "2", "--seed", "5"])
            .args(["--device-memory-limit", limit])
            .args(["--stream-sharing", sharing])
            .arg("--params-dir")
            .arg(&dir)
            .arg("--report")
            .arg(&report)
            .output()
            .unwrap()
    };
    let run = |limit: &str| run_with(limit, "auto");
    // 2^13 on the host: the key (about 4.5 MiB) and the working set (about
    // 1.3 MiB) do not fit 3 MiB together; the working set and two chunks do.
    let out = run("3");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("all 2 proofs verified"), "{stdout}");
    let r: serde_json::Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    for p in r["per_partition"].as_array().unwrap() {
        assert!(p["stream_chunks"].as_u64().unwrap() > 4, "streamed: {p}");
        assert_eq!(
            p["stream_shared"].as_u64(),
            Some(1),
            "auto on the host: alone"
        );
    }
    // Every sharing mode is accepted; a wrong one is named.
    let out = run_with("3", "always");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = run_with("3", "sometimes");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("auto, always or never"), "{stderr}");
    // 1 MiB holds not even the working set: refused before any work.
    let out = run("1");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("device 0") && stderr.contains("streamed"),
        "{stderr}"
    );
    let out = run("0");
    assert!(!out.status.success(), "a zero limit is refused");
    let _ = std::fs::remove_dir_all(&dir);
}
