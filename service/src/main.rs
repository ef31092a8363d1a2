//! `cuda-prover-service`: the proving daemon and its CLI client. The
//! `cuda-prover` binary runs it for `serve`, `submit`, `await`, `status`
//! and `cancel`.
//!
//!   cuda-prover serve --listen 127.0.0.1:7411
//!   cuda-prover submit --server 127.0.0.1:7411 --circuit bits --partitions 8
//!   cuda-prover await --server 127.0.0.1:7411 JOB

mod cli;

use std::process::ExitCode;

use clap::Parser;

use cli::{run, Cli};

fn main() -> ExitCode {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info"))
        .format_timestamp_millis()
        .init();
    let cli = Cli::parse();
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match rt.block_on(run(cli)) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
