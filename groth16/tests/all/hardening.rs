//! The CLI against hostile input: option bounds, params paths that are not
//! plain files, non-UTF-8 directories, permission errors, concurrent first
//! runs, leftovers of dead writers, keys of another circuit, output paths.

use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn cli() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_cuda-prover"));
    c.env_remove("CUDA_PROVER_HOST_DEVICES");
    c
}

/// A fresh directory under the system temp dir.
fn temp_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("cp-hard-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn prove_args(dir: &Path, circuit: &str) -> Vec<std::ffi::OsString> {
    let mut v: Vec<std::ffi::OsString> = [
        "prove",
        "--backend",
        "host",
        "--circuit",
        circuit,
        "--log-constraints",
        "7",
        "--partitions",
        "1",
        "--seed",
        "1",
        "--params-dir",
    ]
    .iter()
    .map(Into::into)
    .collect();
    v.push(dir.as_os_str().to_owned());
    v
}

/// Runs the command, killing it after `limit` (a hang is a failure).
fn run_with_limit(mut c: Command, limit: Duration) -> Output {
    let mut child = c
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if t.elapsed() > limit {
            child.kill().unwrap();
            panic!("the CLI hung for more than {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn option_bounds_are_clear_errors() {
    let cases: &[(&[&str], &str)] = &[
        (&["--host-devices", "4294967295"], "4294967295"),
        (&["--host-devices", "65"], "65"),
        (&["--partitions", "1000000000"], "1000000000"),
        (&["--partitions", "0"], "--partitions"),
        (
            &["--workers-per-device", "4611686018427387904"],
            "4611686018427387904",
        ),
        (&["--workers-per-device", "65"], "--workers-per-device"),
        (&["--synthesis-threads", "1000000"], "--synthesis-threads"),
        (&["--gpu-count", "99999999999"], "--gpu-count"),
    ];
    for (args, expect) in cases {
        let t = Instant::now();
        let out = run_with_limit(
            {
                let mut c = cli();
                c.args(["prove", "--backend", "host", "--log-constraints", "7"])
                    .args(*args);
                c
            },
            Duration::from_secs(30),
        );
        let e = text(&out.stderr);
        assert!(!out.status.success(), "{args:?} accepted");
        assert!(e.contains(expect), "{args:?}: {e}");
        assert!(!e.contains("-1"), "{args:?} wrapped: {e}");
        assert!(!e.contains("panicked"), "{args:?}: {e}");
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "{args:?} took {:?}",
            t.elapsed()
        );
    }
    // Workers over all devices are bounded too.
    let out = cli()
        .args(["prove", "--backend", "host", "--host-devices", "64"])
        .args(["--workers-per-device", "64", "--log-constraints", "7"])
        .output()
        .unwrap();
    let e = text(&out.stderr);
    assert!(!out.status.success() && e.contains("4096 workers"), "{e}");
}

#[test]
fn params_path_that_is_not_a_file() {
    let dir = temp_dir("fifo");
    let path = dir.join("chain-2^7.params");
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
    let mut cmd = cli();
    cmd.args(prove_args(&dir, "chain"));
    let out = run_with_limit(cmd, Duration::from_secs(60));
    let e = text(&out.stderr);
    assert!(!out.status.success());
    assert!(e.contains("named pipe"), "{e}");
    assert!(!e.contains("delete the file"), "an I/O error: {e}");
    assert!(!e.contains("generating params"), "{e}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn non_utf8_params_dir_is_reused() {
    let base = temp_dir("utf8");
    let dir = base.join(std::ffi::OsStr::from_bytes(b"keys-\xff\xfe"));
    for round in 0..2 {
        let out = cli().args(prove_args(&dir, "chain")).output().unwrap();
        let e = text(&out.stderr);
        assert!(out.status.success(), "round {round}: {e}");
        assert_eq!(
            e.contains("generating params"),
            round == 0,
            "round {round}: {e}"
        );
    }
    assert!(dir.join("chain-2^7.params").is_file());
    assert!(dir.join("chain-2^7.params.verified").is_file());
    std::fs::remove_dir_all(&base).ok();
}

#[test]
fn permission_denied_is_not_missing() {
    let dir = temp_dir("perm");
    let out = cli().args(prove_args(&dir, "chain")).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let key = dir.join("chain-2^7.params");
    let before = std::fs::read(&key).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o000)).unwrap();
    let mut cmd = cli();
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        // Root reads any file: run the CLI as an unprivileged user, from a
        // copy that user can execute wherever the checkout lives.
        use std::os::unix::process::CommandExt;
        let exe = dir.join("cuda-prover");
        std::fs::copy(env!("CARGO_BIN_EXE_cuda-prover"), &exe).unwrap();
        std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
        cmd = Command::new(&exe);
        cmd.env_remove("CUDA_PROVER_HOST_DEVICES")
            .uid(65534)
            .gid(65534);
    }
    cmd.args(prove_args(&dir, "chain"));
    let out = cmd.output().unwrap();
    let e = text(&out.stderr);
    assert!(!out.status.success(), "{e}");
    assert!(e.contains("Permission denied"), "{e}");
    assert!(!e.contains("generating params"), "taken for missing: {e}");
    assert!(!e.contains("delete the file"), "{e}");
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).unwrap();
    assert_eq!(
        std::fs::read(&key).unwrap(),
        before,
        "the key was not replaced"
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn concurrent_first_runs_generate_once() {
    let dir = temp_dir("concurrent");
    let children: Vec<_> = (0..4)
        .map(|_| {
            cli()
                .args(prove_args(&dir, "bits"))
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut generated = 0;
    for c in children {
        let out = c.wait_with_output().unwrap();
        let e = text(&out.stderr);
        assert!(out.status.success(), "{e}");
        generated += e.matches("generating params").count();
    }
    assert_eq!(generated, 1, "the key was generated {generated} times");
    let leftovers: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    std::fs::remove_dir_all(&dir).ok();
}

/// A pid that is not running now.
fn dead_pid() -> u32 {
    (400_000..4_000_000)
        .step_by(7919)
        // SAFETY: kill with signal 0 only checks whether the pid exists.
        .find(|&p| unsafe { libc::kill(p as i32, 0) } != 0)
        .unwrap()
}

#[test]
fn temp_files_of_dead_writers_are_removed() {
    let dir = temp_dir("stale");
    // Missing key: the generator cleans up before writing.
    let stale1 = dir.join(format!("chain-2^7.params.tmp{}", dead_pid()));
    std::fs::write(&stale1, b"half a key").unwrap();
    let out = cli().args(prove_args(&dir, "chain")).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(!stale1.exists(), "left after generation");
    // Present key: a load that finds the lock free cleans up too.
    let stale2 = dir.join(format!("chain-2^7.tmp{}", dead_pid()));
    std::fs::write(&stale2, b"older naming").unwrap();
    let keep = dir.join("chain-2^7.params.notes");
    std::fs::write(&keep, b"not a temp file").unwrap();
    let out = cli().args(prove_args(&dir, "chain")).output().unwrap();
    let e = text(&out.stderr);
    assert!(out.status.success(), "{e}");
    assert!(!stale2.exists(), "left after a load: {e}");
    assert!(keep.exists());
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn key_of_another_circuit_is_a_shape_mismatch() {
    let dir = temp_dir("other");
    let out = cli().args(prove_args(&dir, "bits")).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    std::fs::copy(dir.join("bits-2^7.params"), dir.join("chain-2^7.params")).unwrap();
    let out = cli().args(prove_args(&dir, "chain")).output().unwrap();
    let e = text(&out.stderr);
    assert!(!out.status.success());
    assert!(e.contains("made for another circuit"), "{e}");
    assert!(e.contains("l points (num_aux)"), "{e}");
    assert!(e.contains("delete the file"), "{e}");
    assert!(!e.contains("proved on device"), "failed before work: {e}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn corrupt_ic_count_is_named() {
    let dir = temp_dir("ic");
    let out = cli().args(prove_args(&dir, "chain")).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let key = dir.join("chain-2^7.params");
    let mut b = std::fs::read(&key).unwrap();
    let at = 3 * 96 + 3 * 192;
    let ic = u32::from_be_bytes(b[at..at + 4].try_into().unwrap());
    b[at..at + 4].copy_from_slice(&(ic + 1).to_be_bytes());
    std::fs::write(&key, &b).unwrap();
    let out = cli().args(prove_args(&dir, "chain")).output().unwrap();
    let e = text(&out.stderr);
    assert!(!out.status.success());
    assert!(
        e.contains(&format!(
            "section ic (length field at offset {at}) says {} points, but the file's layout fits {ic}",
            ic + 1
        )),
        "{e}"
    );
    assert!(e.contains("delete the file"), "{e}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn unwritable_outputs_fail_before_the_job() {
    let dir = temp_dir("outputs");
    for flag in ["--report", "--metrics"] {
        let out = cli()
            .args(prove_args(&dir, "chain"))
            .arg(flag)
            .arg(dir.join("no-such-dir").join("out.json"))
            .output()
            .unwrap();
        let e = text(&out.stderr);
        let o = text(&out.stdout);
        assert!(!out.status.success());
        assert!(e.contains("cannot write") && e.contains("out.json"), "{e}");
        assert!(!o.contains("verified"), "{o}");
        assert!(!e.contains("proved on device"), "{e}");
    }
    // A path that is a directory.
    let out = cli()
        .args(prove_args(&dir, "chain"))
        .arg("--report")
        .arg(&dir)
        .output()
        .unwrap();
    assert!(text(&out.stderr).contains("is a directory"));
    // Success leaves only the outputs, no temporary files.
    let r = dir.join("r.json");
    let out = cli()
        .args(prove_args(&dir, "chain"))
        .arg("--report")
        .arg(&r)
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(serde_json::from_slice::<serde_json::Value>(&std::fs::read(&r).unwrap()).is_ok());
    let tmp: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.') && n.contains(".tmp"))
        .collect();
    assert!(tmp.is_empty(), "{tmp:?}");
    std::fs::remove_dir_all(&dir).ok();
}

/// `--report` or `--metrics` naming the key, its digest record or the
/// shape (directly, through `..`, or through a link) is refused before the
/// job, and the key is left as it was.
#[test]
fn outputs_naming_the_jobs_inputs_are_refused() {
    let dir = temp_dir("inputs");
    // Make the key and its shape first.
    let out = cli().args(prove_args(&dir, "chain")).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let key = dir.join("chain-2^7.params");
    let before = std::fs::read(&key).unwrap();
    let sub = dir.join("sub");
    std::fs::create_dir_all(&sub).unwrap();
    let link = dir.join("elsewhere.json");
    std::os::unix::fs::symlink(&key, &link).unwrap();
    let cases = [
        key.clone(),
        dir.join("chain-2^7.params.shape"),
        dir.join("chain-2^7.params.verified"),
        sub.join("..").join("chain-2^7.params"),
        link.clone(),
    ];
    for flag in ["--report", "--metrics"] {
        for p in &cases {
            let out = cli()
                .args(prove_args(&dir, "chain"))
                .arg(flag)
                .arg(p)
                .output()
                .unwrap();
            let e = text(&out.stderr);
            assert!(!out.status.success(), "{flag} {} was accepted", p.display());
            assert!(
                e.contains("refusing to overwrite"),
                "{flag} {}: {e}",
                p.display()
            );
            assert!(!e.contains("proved on device"), "{e}");
        }
    }
    let same = dir.join("both.out");
    let out = cli()
        .args(prove_args(&dir, "chain"))
        .arg("--report")
        .arg(&same)
        .arg("--metrics")
        .arg(&same)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("the same file"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(std::fs::read(&key).unwrap(), before, "the key is unchanged");
    std::fs::remove_dir_all(&dir).ok();
}

/// Rows i and j of a CSR matrix (a shape's A, B or C) swapped.
macro_rules! swap_rows {
    ($m:expr, $i:expr, $j:expr) => {{
        let m = $m;
        let mut rows: Vec<Vec<_>> = (0..m.row_ptr.len() - 1)
            .map(|r| m.entries[m.row_ptr[r] as usize..m.row_ptr[r + 1] as usize].to_vec())
            .collect();
        rows.swap($i, $j);
        let mut at = 0u64;
        m.row_ptr = std::iter::once(0)
            .chain(rows.iter().map(|r| {
                at += r.len() as u64;
                at
            }))
            .collect();
        m.entries = rows.concat();
    }};
}

/// A forged shape file that is self-consistent (two constraints swapped in
/// A, B and C alike: every row still holds, the key's checks pass) makes
/// proofs that do not verify: the CLI names the shape file as the likely
/// cause, records it again once and proves, all verified.
#[test]
fn a_forged_consistent_shape_is_named_and_recorded_again() {
    use cuda_prover_pipeline::circuits::{BuiltIn, Kind};
    use cuda_prover_pipeline::shape_file;
    let dir = temp_dir("forged-shape");
    let out = cli().args(prove_args(&dir, "chain")).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let c = BuiltIn::new(Kind::Chain, 7, 0).unwrap();
    let key = cuda_prover_groth16::params::load_or_create(&dir, &c, &|_| {}).unwrap();
    let path = cuda_prover_groth16::key_store::shape_path(&cuda_prover_groth16::params::key_path(
        &dir, &c,
    ));
    let honest = shape_file::load(&path, &key).unwrap();
    let mut forged = honest.clone();
    swap_rows!(&mut forged.a, 1, 2);
    swap_rows!(&mut forged.b, 1, 2);
    swap_rows!(&mut forged.c, 1, 2);
    assert_ne!(forged, honest, "rows 1 and 2 differ");
    shape_file::save(&forged, &key, &path).unwrap();
    let out = cli().args(prove_args(&dir, "chain")).output().unwrap();
    let (e, o) = (text(&out.stderr), text(&out.stdout));
    assert!(out.status.success(), "{e}");
    assert!(
        e.contains("does not verify") && e.contains("likely cause"),
        "{e}"
    );
    assert!(e.contains(&path.display().to_string()), "{e}");
    assert!(o.contains("proofs verified"), "{o}");
    assert_eq!(
        shape_file::load(&path, &key).unwrap(),
        honest,
        "recorded again"
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// An encoded point of E(Fp) outside G1 (x counts up until x^3 + 4 has a
/// root; the cofactor is not cleared).
fn torsion_g1_bytes() -> [u8; 96] {
    for x0 in 5u64.. {
        let xv = [x0, 0, 0, 0, 0, 0];
        let four = [4u64, 0, 0, 0, 0, 0];
        // SAFETY: blst's field functions with pointers to initialized
        // values alive for each call.
        unsafe {
            let (mut x, mut b, mut rhs, mut y) = Default::default();
            blst::blst_fp_from_uint64(&mut x, xv.as_ptr());
            blst::blst_fp_from_uint64(&mut b, four.as_ptr());
            blst::blst_fp_sqr(&mut rhs, &x);
            blst::blst_fp_mul(&mut rhs, &rhs, &x);
            blst::blst_fp_add(&mut rhs, &rhs, &b);
            if blst::blst_fp_sqrt(&mut y, &rhs) {
                let p = blst::blst_p1_affine { x, y };
                assert!(!blst::blst_p1_affine_in_g1(&p));
                let mut out = [0u8; 96];
                blst::blst_p1_affine_serialize(out.as_mut_ptr(), &p);
                return out;
            }
        }
    }
    unreachable!()
}

#[test]
fn cached_key_with_a_torsion_point_is_refused() {
    let dir = temp_dir("torsion");
    let out = cli().args(prove_args(&dir, "chain")).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    // The process that made the key trusts it; the next one checks every
    // point and records the key's digest.
    assert!(text(&out.stderr).contains("skipped: trusted"));
    assert!(!dir.join("chain-2^7.params.verified").exists());
    let out = cli().args(prove_args(&dir, "chain")).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("digest recorded"));
    // A point swapped in later changes the digest, so the subgroup check
    // runs again and fails.
    assert!(dir.join("chain-2^7.params.verified").is_file());
    let key = dir.join("chain-2^7.params");
    let mut b = std::fs::read(&key).unwrap();
    let ic = u32::from_be_bytes(b[864..868].try_into().unwrap()) as usize;
    let h0 = 864 + 4 + ic * 96 + 4;
    b[h0..h0 + 96].copy_from_slice(&torsion_g1_bytes());
    std::fs::write(&key, &b).unwrap();
    let out = cli().args(prove_args(&dir, "chain")).output().unwrap();
    let e = text(&out.stderr);
    assert!(!out.status.success());
    assert!(!text(&out.stdout).contains("verified"));
    assert!(
        e.contains(&format!(
            "section h point 0 (offset {h0}): on the curve but not in the prime-order subgroup"
        )),
        "{e}"
    );
    assert!(e.contains("delete the file"), "{e}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_verified_record_vouches_only_under_its_machines_key() {
    let dir = temp_dir("record-key");
    let (state_a, state_b) = (dir.join("state-a"), dir.join("state-b"));
    let params = dir.join("params");
    let run = |state: &Path| {
        let out = cli()
            .env("CUDA_PROVER_STATE_DIR", state)
            .args(prove_args(&params, "chain"))
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", text(&out.stderr));
        text(&out.stderr)
    };
    run(&state_a); // makes the key (trusted by its maker)
    assert!(run(&state_a).contains("digest recorded"));
    assert!(run(&state_a).contains("digest matches the verified record"));
    let record = std::fs::read_to_string(params.join("chain-2^7.params.verified")).unwrap();
    assert!(record.contains("hmac-sha256 "), "{record}");
    let key = state_a.join("record.key");
    let mode =
        std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&key).unwrap().permissions());
    assert_eq!(mode & 0o077, 0, "record key mode {mode:o}");
    // Another machine's key (or none) does not accept the record: every
    // point is checked again and a record of its own is written.
    let e = run(&state_b);
    assert!(
        e.contains("subgroup checks") && e.contains("digest recorded"),
        "{e}"
    );
    assert!(!e.contains("digest matches"), "{e}");
    // A record key others may read is refused: the checks run, no record.
    std::fs::set_permissions(&key, std::os::unix::fs::PermissionsExt::from_mode(0o644)).unwrap();
    let e = run(&state_a);
    assert!(!e.contains("digest matches"), "{e}");
    assert!(e.contains("may be read or written by others"), "{e}");
    std::fs::remove_dir_all(&dir).ok();
}

/// Runs `c` to its end: whether it succeeded, its stderr, and its peak
/// resident memory in KiB (from wait4, this child's alone).
fn run_measured(mut c: Command) -> (bool, String, i64) {
    use std::io::Read;
    // Reaped by wait4 below, which also gives its resource use.
    #[allow(clippy::zombie_processes)]
    let mut child = c
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: all-zero bytes are a valid rusage; wait4 reaps our own child
    // (spawned above, not waited for yet) and writes into live locals.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(r, pid, "wait4: {}", std::io::Error::last_os_error());
    let ok = libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0;
    (ok, err, usage.ru_maxrss)
}

/// A key whose h section claims far more points than the file holds data
/// for (a sparse file: 2^23 - 1 points, 805 MB, and 2^31 - 1, 206 GB, of
/// which only the real key's points were written) fails at its first
/// missing point, with the section allocated as its points are read: the
/// process's peak memory stays far below the section's size.
#[test]
fn a_sparse_key_fails_at_its_first_missing_point_with_little_memory() {
    use std::io::Write;
    let dir = temp_dir("sparse");
    let out = cli().args(prove_args(&dir, "chain")).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let key = dir.join("chain-2^7.params");
    let real = std::fs::read(&key).unwrap();
    let be32 = |at: usize| u32::from_be_bytes(real[at..at + 4].try_into().unwrap()) as usize;
    let h_count_at = 864 + 4 + be32(864) * 96;
    let h_real = be32(h_count_at);
    let h0 = h_count_at + 4;
    for claimed in [(1u64 << 23) - 1, (1u64 << 31) - 1] {
        let mut b = real[..h_count_at].to_vec();
        b.extend_from_slice(&(claimed as u32).to_be_bytes());
        b.extend_from_slice(&real[h0..h0 + h_real * 96]);
        // Then a hole: the counts of l, a, b_g1 and b_g2 read as 0.
        let len = h0 as u64 + claimed * 96 + 16;
        let mut f = std::fs::File::create(&key).unwrap();
        f.write_all(&b).unwrap();
        if let Err(e) = f.set_len(len) {
            eprintln!("skipped: no sparse file of {len} bytes here ({e})");
            continue;
        }
        drop(f);
        let mut c = cli();
        c.args(prove_args(&dir, "chain"));
        let (ok, e, peak_kib) = run_measured(c);
        assert!(!ok, "a sparse key of {claimed} points was accepted");
        let first_missing = format!("section h point {h_real} (offset {})", h0 + h_real * 96);
        assert!(e.contains(&first_missing), "{claimed} points: {e}");
        assert!(
            peak_kib < 256 << 10,
            "{claimed} points: peak {} MiB (the section is {} MiB)",
            peak_kib >> 10,
            (claimed * 96) >> 20
        );
        eprintln!(
            "{claimed} points claimed ({} MiB): refused at point {h_real}, peak {} MiB",
            (claimed * 96) >> 20,
            peak_kib >> 10
        );
    }
    std::fs::remove_dir_all(&dir).ok();
}
