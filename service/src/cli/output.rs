//! What the client subcommands show and write: the progress bar of
//! `await`, the spinner of `preload`, a finished job's proofs, report and
//! verdict, and the daemon's status.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

use cuda_prover_service::proto;
use cuda_prover_service::JobOutcome;
use indicatif::{ProgressBar, ProgressStyle};

/// A bar on stderr when it is a terminal.
pub(super) fn progress_bar() -> Option<ProgressBar> {
    if !std::io::stderr().is_terminal() {
        return None;
    }
    let b = ProgressBar::new(0);
    b.set_style(
        ProgressStyle::with_template(
            "{spinner} [{elapsed_precise}] {bar:40} {pos}/{len} partitions {msg}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    Some(b)
}

pub(super) fn spinner(msg: &str) -> Option<ProgressBar> {
    if !std::io::stderr().is_terminal() {
        return None;
    }
    let b = ProgressBar::new_spinner();
    b.set_message(msg.to_string());
    b.enable_steady_tick(std::time::Duration::from_millis(120));
    Some(b)
}

pub(super) fn finish(
    out: &JobOutcome,
    proofs_out: Option<PathBuf>,
    report: Option<PathBuf>,
) -> Result<ExitCode, String> {
    if let Some(dir) = proofs_out {
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        for (k, p) in out.proofs.iter().enumerate() {
            let path = dir.join(format!("partition-{k}.proof"));
            std::fs::write(&path, p).map_err(|e| format!("{}: {e}", path.display()))?;
        }
    }
    if let Some(path) = report {
        std::fs::write(&path, &out.report_json).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    if out.ok() {
        println!(
            "job {}: done, all {} proofs verified",
            out.job_id,
            out.proofs.len()
        );
        Ok(ExitCode::SUCCESS)
    } else {
        eprintln!("job {}: {}: {}", out.job_id, out.state, out.error);
        Ok(ExitCode::FAILURE)
    }
}

pub(super) fn print_status(st: &proto::StatusReply) {
    println!(
        "cuda-prover-service {} on {}{}; queue limit {}, {} running at most",
        st.version,
        st.backend,
        if st.draining { " (draining)" } else { "" },
        st.max_queue,
        st.max_running
    );
    for d in &st.devices {
        println!(
            "device {}: {}{}, {} MiB free of {} MiB, {} partitions proved",
            d.ordinal,
            d.name,
            if d.simulated { " (simulated)" } else { "" },
            d.free_bytes >> 20,
            d.total_bytes >> 20,
            d.partitions
        );
    }
    let used: u64 = st.keys.iter().map(|k| k.bytes).sum();
    println!(
        "resident keys: {} MiB of {} MiB",
        used >> 20,
        st.key_budget_bytes >> 20
    );
    for k in &st.keys {
        println!(
            "  {} ({} KiB){}",
            k.key,
            k.bytes >> 10,
            if k.pinned { " pinned" } else { "" }
        );
    }
    if !st.filecoin_keys.is_empty() {
        println!("filecoin keys: {}", st.filecoin_keys.len());
    }
    for k in &st.filecoin_keys {
        println!(
            "  {} ({} KiB, {})",
            k.circuit_id,
            k.bytes >> 10,
            k.params_file
        );
    }
    for (what, list) in [("running", &st.running), ("queued", &st.queued)] {
        println!("{what}: {}", list.len());
        for j in list {
            println!(
                "  job {} {} priority {} {} {}/{} ({:.1} s)",
                j.job_id, j.name, j.priority, j.state, j.done, j.total, j.age_s
            );
        }
    }
}
