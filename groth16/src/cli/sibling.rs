//! The subcommands other binaries answer: `cuda-prover filecoin ...`,
//! `cuda-prover gkr ...` and the daemon's `serve|submit|await|status|cancel`
//! run their sibling binary, git-style.

use std::process::ExitCode;

/// The daemon's subcommands, run by the `cuda-prover-service` binary.
const SERVICE_COMMANDS: [&str; 5] = ["serve", "submit", "await", "status", "cancel"];

/// The sibling's exit code when the first argument names a sibling's
/// subcommand; None for this binary's own.
pub fn dispatch() -> Option<ExitCode> {
    match std::env::args_os().nth(1) {
        Some(a) if a == "filecoin" => Some(run_sibling(
            "cuda-prover-filecoin",
            "cuda-prover-filecoin",
            2,
        )),
        Some(a) if a == "gkr" => Some(run_sibling("cuda-prover-gkr", "cuda-prover-gkr", 2)),
        Some(a) if SERVICE_COMMANDS.iter().any(|c| a == *c) => {
            Some(run_sibling("cuda-prover-service", "cuda-prover-service", 1))
        }
        _ => None,
    }
}

/// `cuda-prover filecoin ARGS` runs the sibling binary
/// `cuda-prover-filecoin ARGS` (crate `cuda-prover-filecoin`), and
/// `cuda-prover serve ARGS` runs `cuda-prover-service serve ARGS`,
/// git-style: the engine depends on neither crate. `skip` is how many of
/// our own arguments are not passed on.
fn run_sibling(binary: &str, krate: &str, skip: usize) -> ExitCode {
    let name = format!("{binary}{}", std::env::consts::EXE_SUFFIX);
    let sibling = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|d| d.join(&name)));
    let Some(path) = sibling.filter(|p| p.is_file()) else {
        eprintln!(
            "error: `cuda-prover {}` needs the {name} binary next to cuda-prover; \
             build it with `cargo build --release -p {krate}`",
            std::env::args().nth(1).unwrap_or_default()
        );
        return ExitCode::FAILURE;
    };
    let mut cmd = std::process::Command::new(&path);
    cmd.args(std::env::args_os().skip(skip));
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        let err = cmd.exec();
        eprintln!("error: running {}: {err}", path.display());
        ExitCode::FAILURE
    }
    #[cfg(not(unix))]
    match cmd.status() {
        Ok(s) if s.success() => ExitCode::SUCCESS,
        Ok(_) => ExitCode::FAILURE,
        Err(err) => {
            eprintln!("error: running {}: {err}", path.display());
            ExitCode::FAILURE
        }
    }
}
