//! The cuzk.v1 API from Go, as Curio drives it: a Go client
//! (tests/go-client/main.go) whose gRPC code protoc, protoc-gen-go and
//! protoc-gen-go-grpc generate from our proto/cuzk/v1/cuzk.proto at test
//! time, built offline against Debian's Go packages (GOPATH mode over
//! /usr/share/gocode), connects over the daemon's unix socket, calls Prove
//! for a 2 KiB PoRep C2 (the C1 output of a sector sealed here, in Curio's
//! wrapper), then GetStatus. The proof it prints is checked here by
//! filecoin-proofs' `verify_seal`, and the status it printed must count the
//! finished job. Without Go and those packages the test says it skipped,
//! naming the Debian packages to install, unless `CP_REQUIRE_GO=1` (set by
//! .ci/run, which installs them) makes that a failure.
#![cfg(feature = "filecoin")]

use crate::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use common::filecoin::{seal_for_miner, test_params, MINER, REGISTERED_2KIB_V1_1};
use common::{start_unix, temp_dir};
use cuda_prover_filecoin::sealing::verify_commit;
use cuda_prover_filecoin::test_c1::wrapper::wrap;
use cuda_prover_filecoin::test_params::TestCircuit;
use cuda_prover_filecoin::SectorSize;
use cuda_prover_service::cuzk_proto as pb;
use cuda_prover_service::cuzk_proto::proving_engine_client::ProvingEngineClient;

/// What the Go client needs, as Debian (bookworm) packages it: the Go
/// toolchain, protoc with the Go and Go-gRPC plugins, and the sources of
/// grpc-go and protobuf-go under /usr/share/gocode (golang/protobuf 1.5,
/// which grpc-go's codec calls, wraps the protobuf-go API that
/// protoc-gen-go generates for).
const GO_PACKAGES: &str = "golang-go golang-google-grpc-dev \
     golang-github-golang-protobuf-1-5-dev protobuf-compiler protoc-gen-go protoc-gen-go-grpc";
/// Where Debian's golang-*-dev packages put their sources (a GOPATH).
const GOCODE: &str = "/usr/share/gocode";

fn on_path(tool: &str) -> bool {
    std::env::var_os("PATH").is_some_and(|path| {
        std::env::split_paths(&path).any(|d| {
            std::fs::metadata(d.join(tool)).is_ok_and(|m| {
                m.is_file() && {
                    use std::os::unix::fs::PermissionsExt;
                    m.permissions().mode() & 0o111 != 0
                }
            })
        })
    })
}

fn run(cmd: &mut Command, what: &str) -> Result<(), String> {
    let out = cmd
        .output()
        .map_err(|e| format!("{what}: cannot run {cmd:?}: {e}"))?;
    if out.status.success() {
        return Ok(());
    }
    Err(format!(
        "{what} failed ({}): {}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    ))
}

/// Whether Go, protoc with its Go plugins and Debian's grpc-go sources are
/// here; the error names what is missing and the packages to install.
fn check_toolchain() -> Result<(), String> {
    let mut missing: Vec<String> = ["go", "protoc", "protoc-gen-go", "protoc-gen-go-grpc"]
        .into_iter()
        .filter(|t| !on_path(t))
        .map(|t| format!("`{t}` on PATH"))
        .collect();
    for pkg in [
        "google.golang.org/grpc",
        "google.golang.org/protobuf",
        "github.com/golang/protobuf/ptypes",
    ] {
        if !Path::new(GOCODE).join("src").join(pkg).is_dir() {
            missing.push(format!("{GOCODE}/src/{pkg}"));
        }
    }
    if !missing.is_empty() {
        return Err(format!(
            "the Go client test needs Go, protoc and grpc-go; missing: {}. \
             Install them with: apt-get install --no-install-recommends {GO_PACKAGES}",
            missing.join(", ")
        ));
    }
    Ok(())
}

/// Generates the cuzk.v1 Go code from our proto into a GOPATH under `dir`
/// and builds the client there, offline; returns the binary.
fn build_go_client(dir: &Path) -> Result<PathBuf, String> {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let gopath = dir.join("gopath");
    let src = gopath.join("src").join("cuzkclient");
    std::fs::create_dir_all(&src).map_err(|e| e.to_string())?;
    std::fs::copy(
        manifest.join("tests/go-client/main.go"),
        src.join("main.go"),
    )
    .map_err(|e| e.to_string())?;
    // The proto names no go_package: M maps it to the client's import path.
    let map = "Mcuzk/v1/cuzk.proto=cuzkclient/cuzkv1";
    let out = gopath.join("src");
    run(
        Command::new("protoc")
            .arg("-I")
            .arg(manifest.join("proto"))
            .arg(format!("--go_out={}", out.display()))
            .arg(format!("--go_opt={map}"))
            .arg(format!("--go-grpc_out={}", out.display()))
            .arg(format!("--go-grpc_opt={map}"))
            .arg("cuzk/v1/cuzk.proto"),
        "protoc",
    )?;
    let bin = dir.join("cuzk-go-client");
    let mut go = Command::new("go");
    go.current_dir(&src)
        .args(["build", "-o"])
        .arg(&bin)
        .arg(".")
        // GOPATH mode over Debian's sources: nothing is downloaded.
        .env("GO111MODULE", "off")
        .env(
            "GOPATH",
            std::env::join_paths([gopath.as_path(), Path::new(GOCODE)]).unwrap(),
        )
        .env("GOPROXY", "off")
        .env("GOFLAGS", "");
    if std::env::var_os("HOME").is_none() && std::env::var_os("XDG_CACHE_HOME").is_none() {
        go.env("GOCACHE", dir.join("gocache"));
    }
    run(&mut go, "go build")?;
    Ok(bin)
}

/// The client's `key=value` lines.
fn fields(stdout: &str) -> BTreeMap<String, String> {
    stdout
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn hex_decode(s: &str) -> Vec<u8> {
    assert!(s.len().is_multiple_of(2), "odd hex: {s}");
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_go_client_from_our_proto_proves_a_c2_over_the_unix_socket() {
    if let Err(e) = check_toolchain() {
        if std::env::var_os("CP_REQUIRE_GO").is_some_and(|v| v == "1") {
            panic!("{e}");
        }
        eprintln!("skipped (CP_REQUIRE_GO=1 makes this a failure): {e}");
        return;
    }
    let dir = temp_dir("go-client");
    // The Go build runs while the sector is sealed.
    let t = Instant::now();
    let build = {
        let dir = dir.clone();
        std::thread::spawn(move || {
            let r = build_go_client(&dir);
            (r, t.elapsed())
        })
    };
    let params = test_params(&[TestCircuit::Porep(SectorSize::KIB_2)]);
    let s = seal_for_miner(11);
    let (built, took) = build.join().unwrap();
    let client = built.unwrap_or_else(|e| panic!("{e}"));
    eprintln!(
        "go client generated and built in {:.1} s",
        took.as_secs_f64()
    );

    let d = start_unix(2, |c| c.filecoin_test_params = Some(params)).await;
    let c1 = dir.join("c1.json");
    std::fs::write(
        &c1,
        wrap(&s.c1_json, s.sector_id, SectorSize::KIB_2).unwrap(),
    )
    .unwrap();
    let proof_file = dir.join("proof.bin");
    let mut cmd = Command::new(&client);
    cmd.arg("-addr")
        .arg(&d.addr)
        .arg("-c1")
        .arg(&c1)
        .args(["-sector", &s.sector_id.to_string()])
        .args(["-miner", &MINER.to_string()])
        .args(["-registered-proof", &REGISTERED_2KIB_V1_1.to_string()])
        .args(["-request-id", "go-client-1"])
        .arg("-proof-out")
        .arg(&proof_file);
    let out = tokio::task::spawn_blocking(move || cmd.output())
        .await
        .unwrap()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "the Go client failed: {stdout}{stderr}"
    );
    println!("{stdout}");
    let f = fields(&stdout);
    let field = |k: &str| {
        f.get(k)
            .unwrap_or_else(|| panic!("the Go client printed no {k}: {stdout}"))
            .as_str()
    };
    let num = |k: &str| -> u64 { field(k).parse().unwrap() };

    // Prove: a COMPLETED job whose proof filecoin-proofs accepts.
    assert_eq!(field("status"), "COMPLETED", "{}", field("error_message"));
    assert!(field("error_message").is_empty());
    let job_id = field("job_id");
    assert!(
        job_id.len() == 32 && job_id.bytes().all(|b| b.is_ascii_hexdigit()),
        "{job_id}"
    );
    let proof = hex_decode(field("proof_hex"));
    assert_eq!(
        proof,
        std::fs::read(&proof_file).unwrap(),
        "hex and file agree"
    );
    assert!(
        verify_commit(&s, &proof).unwrap(),
        "verify_seal rejected the Go client's proof"
    );
    let mut bad = proof.clone();
    bad[7] ^= 1;
    assert!(!verify_commit(&s, &bad).unwrap_or(false));
    assert!(num("total_ms") >= num("queue_wait_ms"));
    assert!(num("total_ms") > 0 && num("synthesis_ms") > 0);

    // GetStatus: the finished job counted, nothing open, the daemon's two
    // devices idle, the C2 key listed.
    assert_eq!(num("status.total_proofs_completed"), 1);
    assert_eq!(num("status.total_proofs_failed"), 0);
    assert!(num("status.uptime_seconds") < 3600);
    assert!(num("status.pinned_memory_bytes") <= num("status.pinned_memory_limit_bytes"));
    assert_eq!(num("status.gpus"), 2);
    for g in ["status.gpu.0", "status.gpu.1"] {
        assert!(
            field(g).ends_with("current_job_id: current_proof_kind:"),
            "{g}: {}",
            field(g)
        );
    }
    for kind in ["porep-c2", "snap-update", "window-post", "winning-post"] {
        assert_eq!(
            field(&format!("status.queue.{kind}")),
            "pending:0 in_progress:0",
            "{kind}"
        );
    }
    assert!(num("status.loaded_srs") >= 1);
    assert!(stdout.contains("status.srs=circuit_id:"), "{stdout}");

    // The same numbers through the Rust client.
    let ch = cuda_prover_service::client::channel(&d.addr).await.unwrap();
    let st = ProvingEngineClient::new(ch)
        .get_status(pb::GetStatusRequest {})
        .await
        .unwrap()
        .into_inner();
    assert_eq!(st.total_proofs_completed, 1);
    assert_eq!(st.loaded_srs.len() as u64, num("status.loaded_srs"));
    std::fs::remove_dir_all(&dir).ok();
}
