//! The command line's shape: `Cli`, its subcommands (`Command`) and the
//! options the client subcommands share (`Remote`, `KeyArgs`).

use std::path::PathBuf;

use clap::{Parser, Subcommand};
use cuda_prover_service::proto;

use super::parse::parse_token;
use super::serve_args::ServeArgs;
use super::submit::JobArgs;

pub(super) const DEFAULT_ADDR: &str = "127.0.0.1:7411";

#[derive(Parser)]
#[command(
    name = "cuda-prover-service",
    version,
    about = "The cuda-prover proving daemon and its client"
)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(super) command: Command,
}

#[derive(clap::Args)]
pub(super) struct Remote {
    /// The daemon's address.
    #[arg(long, default_value = DEFAULT_ADDR)]
    pub(super) server: String,
    /// The daemon's token, when it has one.
    #[arg(long, env = "CUDA_PROVER_TOKEN", hide_env_values = true, value_parser = parse_token)]
    pub(super) token: Option<String>,
}

/// A key on the daemon: its circuit, size and params dir.
#[derive(clap::Args)]
pub(super) struct KeyArgs {
    /// chain or bits.
    #[arg(long)]
    circuit: String,
    /// log2 of the circuit's constraints.
    #[arg(long)]
    log_constraints: u32,
    /// A directory within the daemon's params dirs (empty: the first of them).
    #[arg(long, default_value = "")]
    params_dir: String,
}

impl KeyArgs {
    pub(super) fn request(self) -> proto::KeyRequest {
        proto::KeyRequest {
            circuit: self.circuit,
            log_constraints: self.log_constraints,
            params_dir: self.params_dir,
        }
    }
}

#[derive(Subcommand)]
pub(super) enum Command {
    /// Run the daemon.
    Serve(ServeArgs),
    /// Queue a job; prints its id alone on the last line.
    Submit {
        #[command(flatten)]
        remote: Remote,
        #[command(flatten)]
        job: JobArgs,
    },
    /// Wait for a job; exits 0 only when every proof verified.
    Await {
        #[command(flatten)]
        remote: Remote,
        job: String,
        /// Write each proof to DIR/partition-K.proof.
        #[arg(long)]
        proofs_out: Option<PathBuf>,
        /// Write the proof bytes to FILE (every proof, in order; a
        /// Filecoin job has one: filecoin-proofs' bytes).
        #[arg(long)]
        proof_out: Option<PathBuf>,
        /// Write the job report (JSON).
        #[arg(long)]
        report: Option<PathBuf>,
    },
    /// Queue, running jobs, devices and resident keys.
    Status {
        #[command(flatten)]
        remote: Remote,
    },
    /// Cancel a job.
    Cancel {
        #[command(flatten)]
        remote: Remote,
        job: String,
    },
    /// The daemon's metrics (Prometheus text).
    Metrics {
        #[command(flatten)]
        remote: Remote,
    },
    /// Load a key and pin it resident.
    Preload {
        #[command(flatten)]
        remote: Remote,
        #[command(flatten)]
        key: KeyArgs,
    },
    /// Drop a resident key.
    Evict {
        #[command(flatten)]
        remote: Remote,
        #[command(flatten)]
        key: KeyArgs,
    },
    /// Stop taking jobs; return once every job ended.
    Drain {
        #[command(flatten)]
        remote: Remote,
    },
    /// The daemon's grpc.health.v1 status (exit 0 only when SERVING): with
    /// --wait-s, waits for SERVING (the preloaded keys in place),
    /// connecting again while the daemon is not up yet. For supervisors:
    /// systemd's ExecStartPost, a container's health check.
    Health {
        /// The daemon's address.
        #[arg(long, default_value = DEFAULT_ADDR)]
        server: String,
        /// A service name (cuda_prover.v1.Prover, cuzk.v1.ProvingEngine);
        /// empty: the daemon as a whole.
        #[arg(long, default_value = "")]
        service: String,
        /// Wait up to this many seconds for SERVING.
        #[arg(long, value_name = "SECONDS")]
        wait_s: Option<u64>,
    },
    /// Drain and stop the daemon (--now: cancel running jobs).
    Shutdown {
        #[command(flatten)]
        remote: Remote,
        #[arg(long)]
        now: bool,
    },
}
