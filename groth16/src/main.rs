//! `cuda-prover`: prove built-in circuits over many devices.
//!
//!   cuda-prover prove --circuit chain --log-constraints 12 --partitions 4
//!   cuda-prover devices
//!   cuda-prover filecoin ...   (runs the sibling cuda-prover-filecoin binary)
//!   cuda-prover gkr ...        (runs the sibling cuda-prover-gkr binary)
//!   cuda-prover serve|submit|await|status|cancel ...
//!                              (run the sibling cuda-prover-service binary)

mod cli;

use std::process::ExitCode;

use clap::Parser;

// Synthesis allocates three small vectors per constraint; mimalloc makes
// that about 10% faster than the system allocator.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info"))
        .format_timestamp_millis()
        .init();
    if let Some(code) = cli::sibling::dispatch() {
        return code;
    }
    match cli::run(cli::Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
