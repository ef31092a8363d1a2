//! Test PoSt inputs through the daemon (host backend, 2 KiB TEST
//! parameters): `cuda-prover-service submit --filecoin-post FILE` sends the
//! file `cuda-prover-filecoin test-post` writes, the Winning PoSt queues at
//! priority 300 and the Window PoSt at 200 (their kinds' defaults), and
//! the proofs the client gets back pass filecoin-proofs'
//! `verify_winning_post` / `verify_window_post`. A file whose sector does
//! not match its vanilla proof is refused by the client before anything is
//! queued.
#![cfg(feature = "filecoin")]

use crate::common;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use common::process::BIN;
use common::{client, job, slow_partitions, start, submit_running, temp_dir};
use cuda_prover_filecoin::post_input::PostInput;
use cuda_prover_filecoin::test_params::TestCircuit;
use cuda_prover_filecoin::test_post::generate_test_post;
use cuda_prover_filecoin::{post_config, PostKind, SectorSize};
use filecoin_proofs::constants::SectorShape2KiB;
use filecoin_proofs::{verify_window_post, verify_winning_post};

/// `submit --server ADDR ARGS`: the job id (stdout's last line), or the
/// error it printed.
async fn submit(addr: &str, args: &[&str]) -> Result<String, String> {
    let mut cmd = std::process::Command::new(BIN);
    cmd.args(["submit", "--server", addr]).args(args);
    let out = tokio::task::spawn_blocking(move || cmd.output())
        .await
        .unwrap()
        .expect("running cuda-prover-service submit");
    if out.status.success() {
        let stdout = String::from_utf8_lossy(&out.stdout);
        Ok(stdout.lines().last().unwrap_or("").trim().to_string())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

fn winning_ok(input: &PostInput, proof: &[u8]) -> bool {
    let config = post_config(SectorSize::KIB_2, PostKind::Winning).unwrap();
    verify_winning_post::<SectorShape2KiB>(
        &config,
        &input.randomness,
        &input.replicas().unwrap(),
        input.prover_id,
        proof,
    )
    .unwrap_or(false)
}

fn window_ok(input: &PostInput, proof: &[u8]) -> bool {
    let config = post_config(SectorSize::KIB_2, PostKind::Window).unwrap();
    let replicas: BTreeMap<_, _> = input.replicas().unwrap().into_iter().collect();
    verify_window_post::<SectorShape2KiB>(
        &config,
        &input.randomness,
        &replicas,
        input.prover_id,
        proof,
    )
    .unwrap_or(false)
}

fn write(dir: &Path, name: &str, input: &PostInput) -> String {
    let path = dir.join(name);
    std::fs::write(&path, input.to_json(true).unwrap()).unwrap();
    path.to_string_lossy().into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn test_post_files_prove_through_submit_filecoin_post() {
    let size = SectorSize::KIB_2;
    let params = common::filecoin::test_params(&[
        TestCircuit::WinningPost(size),
        TestCircuit::WindowPost(size),
    ]);
    let winning = generate_test_post(PostKind::Winning, size, 5, 1)
        .unwrap()
        .input;
    let window = generate_test_post(PostKind::Window, size, 6, 3)
        .unwrap()
        .input;
    let dir = temp_dir("test-post");
    let winning_file = write(&dir, "winning.json", &winning);
    let window_file = write(&dir, "window.json", &window);

    let d = start(1, |c| {
        c.max_running = 1;
        c.filecoin_test_params = Some(params);
    })
    .await;
    let cl = client(&d).await;

    // A file whose sector is not its vanilla proof's is refused by the
    // client, naming why; nothing reaches the daemon.
    let mut wrong = winning.clone();
    wrong.sectors[0].sector_id += 1;
    let e = submit(
        &d.addr,
        &["--filecoin-post", &write(&dir, "wrong.json", &wrong)],
    )
    .await
    .expect_err("a mismatched file");
    assert!(e.contains("its vanilla proof is of sector"), "{e}");

    // A built-in job holds the one runner while the PoSt jobs queue, so
    // that their priorities can be read from the queue.
    slow_partitions(&d.ctx, 4, Duration::from_millis(80));
    let blocker = submit_running(&cl, job("bits", 7, 4, 1, 0)).await;
    let window_id = submit(&d.addr, &["--filecoin-post", &window_file])
        .await
        .expect("submit --filecoin-post (window)");
    let winning_id = submit(
        &d.addr,
        &["--filecoin-post", &winning_file, "--deadline-ms", "600000"],
    )
    .await
    .expect("submit --filecoin-post (winning)");
    let st = cl.status().await.unwrap();
    let queued: Vec<(&str, u32)> = st
        .queued
        .iter()
        .map(|j| (j.job_id.as_str(), j.priority))
        .collect();
    assert_eq!(
        queued,
        vec![(winning_id.as_str(), 300), (window_id.as_str(), 200)],
        "the kinds' priorities, most urgent first"
    );

    let out = cl.await_job(&winning_id, |_, _, _| {}).await.unwrap();
    assert!(out.ok(), "{}: {}", out.state, out.error);
    assert_eq!(out.proofs.len(), 1);
    assert!(winning_ok(&winning, &out.proofs[0]), "verify_winning_post");
    let mut bad = out.proofs[0].clone();
    bad[7] ^= 1;
    assert!(!winning_ok(&winning, &bad), "a flipped byte was accepted");

    let out = cl.await_job(&window_id, |_, _, _| {}).await.unwrap();
    assert!(out.ok(), "{}: {}", out.state, out.error);
    assert_eq!(out.proofs.len(), 1);
    assert_eq!(out.proofs[0].len(), 2 * 192, "two partitions");
    assert!(window_ok(&window, &out.proofs[0]), "verify_window_post");
    assert!(
        !window_ok(&winning, &out.proofs[0]),
        "accepted for another fixture's sectors"
    );
    assert!(cl.await_job(&blocker, |_, _, _| {}).await.unwrap().ok());
    let _ = std::fs::remove_dir_all(&dir);
}
