//! The command line of `cuda-prover-filecoin`: one file per subcommand.

mod c2_cmd;
mod demo_cmd;
mod engine_args;
mod report;
mod test_c1_cmd;
mod test_params_cmd;
mod test_post_cmd;

use clap::{Parser, Subcommand};

use crate::error::Result;

#[derive(Debug, Parser)]
#[command(
    name = "cuda-prover-filecoin",
    version,
    about = "Filecoin commit phase 2 (C2) and PoSt proofs through the cuda-prover engine"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Commit phase 2 of a C1 file; the proof is verified (verify_seal) before it is written.
    C2(c2_cmd::Args),
    /// Seal a small sector of seeded random data, run C2 (and optionally a
    /// PoSt) through the engine with TEST parameters, verify.
    Demo(demo_cmd::Args),
    /// Generate TEST parameters (seeded, not the network's) for small sectors.
    TestParams(test_params_cmd::Args),
    /// Write a valid C1 output of a committed-capacity sector of any size
    /// without sealing (a TEST fixture: it picks its own challenge seed).
    TestC1(test_c1_cmd::Args),
    /// Write a valid Winning or Window PoSt input (vanilla proofs) for
    /// sectors of any size without sealing (a TEST fixture: it picks its
    /// own randomness).
    TestPost(test_post_cmd::Args),
}

pub fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Command::C2(a) => c2_cmd::run(a),
        Command::Demo(a) => demo_cmd::run(a),
        Command::TestParams(a) => test_params_cmd::run(a),
        Command::TestC1(a) => test_c1_cmd::run(a),
        Command::TestPost(a) => test_post_cmd::run(a),
    }
}
