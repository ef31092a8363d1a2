//! `cuda-prover-filecoin`: Filecoin commit phase 2 and PoSt through the
//! cuda-prover engine. Also reachable as `cuda-prover filecoin ...`.

use std::process::ExitCode;

use clap::Parser;
use cuda_prover_filecoin::cli::{run, Cli};

// Synthesis allocates small vectors per constraint (as in `cuda-prover`).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    let cli = Cli::parse();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
