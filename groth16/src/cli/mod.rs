//! The command line of `cuda-prover`: one file per subcommand (`prove`,
//! `devices`), the progress bars, and the sibling binaries the other
//! subcommands run.

mod bars;
mod devices_cmd;
mod prove_cmd;
pub mod sibling;

use clap::{Parser, Subcommand};
use cuda_prover_engine::{BackendArgs, EngineError};

#[derive(Parser)]
#[command(
    name = "cuda-prover",
    version,
    about = "Groth16 (BLS12-381) proving on many devices",
    after_help = "Filecoin C2 and PoSt: `cuda-prover filecoin --help` (runs the cuda-prover-filecoin binary).\n\
GKR tower proofs over BabyBear: `cuda-prover gkr --help` (runs the cuda-prover-gkr binary).\n\
The proving daemon: `cuda-prover serve|submit|await|status|cancel --help` (run the cuda-prover-service binary)."
)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

// Parsed once per run: the size of the largest variant does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand)]
enum Command {
    /// Prove N partitions of a built-in circuit, verify them, report.
    Prove(prove_cmd::ProveArgs),
    /// List the devices the prover would use.
    Devices {
        #[command(flatten)]
        dev: BackendArgs,
    },
}

/// Runs the parsed command.
pub fn run(cli: Cli) -> Result<(), EngineError> {
    match cli.command {
        Command::Devices { dev } => devices_cmd::run(dev),
        Command::Prove(args) => prove_cmd::run(args),
    }
}
