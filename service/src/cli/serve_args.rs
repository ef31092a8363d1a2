//! `serve`'s options (`ServeArgs`) and the bounds of their values.

use std::path::PathBuf;

use cuda_prover_engine::{BackendArgs, Policy, MAX_WORKERS_PER_DEVICE};

use super::args::DEFAULT_ADDR;
use super::parse::{parse_retention, parse_socket_mode, parse_token};

// Bounds of `serve`'s options (those it shares with `cuda-prover prove`,
// workers per device and host devices, are the engine's): past them a value is a mistake (0 workers or a queue
// of 0 take no job at all; a byte count times 2^20 must not wrap).
const MAX_QUEUE: i64 = 1_000_000;
const MAX_RUNNING: i64 = 1024;
const MAX_REQUEST_BYTES: i64 = 256 << 20; // the gRPC decoder's own limit
const MAX_FILECOIN_REQUEST_MIB: i64 = 256;
const MAX_KEY_MEMORY_MIB: u64 = u64::MAX >> 20;
const MAX_CONNECTIONS: i64 = 65_536;
const MAX_IDLE_TIMEOUT_S: i64 = 86_400;

#[derive(clap::Args)]
pub(super) struct ServeArgs {
    /// gRPC address: host:port (anything but loopback needs --token)
    /// or unix:///path/to.sock (no token; the file's mode decides who
    /// connects). Both APIs are served there: cuda_prover.v1 and
    /// cuzk.v1 (Curio's), and grpc.health.v1.
    #[arg(long, env = "CUDA_PROVER_LISTEN", default_value = DEFAULT_ADDR)]
    pub(super) listen: String,
    /// The unix socket file's mode, octal (with --listen unix://...).
    #[arg(long, default_value = "0660", value_parser = parse_socket_mode)]
    pub(super) socket_mode: u32,
    /// Prometheus text at http://ADDR/metrics.
    #[arg(long)]
    pub(super) metrics_listen: Option<String>,
    #[arg(long, env = "CUDA_PROVER_TOKEN", hide_env_values = true, value_parser = parse_token)]
    pub(super) token: Option<String>,
    /// Where keys are read and written (repeat for more; the first is
    /// the default). Requests cannot name a file outside them.
    #[arg(long, default_value = "params-cache")]
    pub(super) params_dir: Vec<PathBuf>,
    /// Jobs queued or running at most (past it: "busy").
    #[arg(long, default_value_t = 256,
          value_parser = clap::value_parser!(u32).range(1..=MAX_QUEUE))]
    pub(super) max_queue: u32,
    /// Jobs running at once.
    #[arg(long, default_value_t = 4,
          value_parser = clap::value_parser!(u32).range(1..=MAX_RUNNING))]
    pub(super) max_running: u32,
    /// Largest request, in bytes.
    #[arg(long, default_value_t = 64 << 10,
          value_parser = clap::value_parser!(u32).range(1..=MAX_REQUEST_BYTES))]
    pub(super) max_request_bytes: u32,
    /// Host memory resident keys may take, built-in and Filecoin (default:
    /// half the host memory available at start).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=MAX_KEY_MEMORY_MIB))]
    pub(super) key_memory_mib: Option<u64>,
    #[command(flatten)]
    pub(super) dev: BackendArgs,
    /// Device ordinals the daemon owns, e.g. 0,1 (default: all).
    #[arg(long)]
    pub(super) gpu_devices: Option<String>,
    #[arg(long, default_value = "round-robin")]
    pub(super) policy: Policy,
    #[arg(long, default_value_t = 1,
          value_parser = clap::value_parser!(u32).range(1..=MAX_WORKERS_PER_DEVICE))]
    pub(super) workers_per_device: u32,
    /// Partitions prepared ahead beside each device's running and
    /// queued ones (each holds one more witness in host memory, about
    /// 4 GiB for a 32 GiB PoRep partition): a PoRep partition's
    /// parallel witness leaves cores idle in its last wave, and the
    /// next partition's challenges fill them.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(0..=16))]
    pub(super) prepare_ahead: u32,
    /// Take no Filecoin jobs.
    #[arg(long)]
    pub(super) no_filecoin: bool,
    /// Filecoin jobs prove with TEST parameters (seeded, never the
    /// network's) from DIR, default the test parameter directory of
    /// `cuda-prover-filecoin test-params`. Without it they use
    /// filecoin-proofs' parameter cache (FIL_PROOFS_PARAMETER_CACHE).
    #[arg(long, value_name = "DIR", num_args = 0..=1, default_missing_value = "")]
    pub(super) filecoin_test_params: Option<PathBuf>,
    /// Largest Filecoin C2 request (it holds the C1 output), in MiB.
    #[arg(long, default_value_t = 64,
          value_parser = clap::value_parser!(u32).range(1..=MAX_FILECOIN_REQUEST_MIB))]
    pub(super) max_filecoin_request_mib: u32,
    /// Client connections open at once (lowered to what the open-file
    /// limit leaves, less 64); more are closed as they arrive.
    #[arg(long, default_value_t = 512,
          value_parser = clap::value_parser!(u32).range(1..=MAX_CONNECTIONS))]
    pub(super) max_connections: u32,
    /// Journal accepted jobs in DIR/jobs.journal (fsync'd before a submit
    /// answers): after a crash, the next start on DIR runs the queued
    /// and running jobs again under their ids and keeps finished
    /// results for await.
    #[arg(long, value_name = "DIR")]
    pub(super) state_dir: Option<PathBuf>,
    /// How long a finished job's result and proofs are kept for await
    /// (in memory and in the journal) after it ended: 90s, 30m, 24h,
    /// 7d (1 s to 3650 d).
    #[arg(long, default_value = "24h", value_parser = parse_retention)]
    pub(super) retention: std::time::Duration,
    /// Load and pin a key before reporting ready (repeat for more):
    /// chain:LOG or bits:LOG[@DIR] (a built-in circuit's key, DIR inside
    /// the params dirs), c2:SECTOR-SIZE or c2:REGISTERED-PROOF (a
    /// Filecoin C2 key, e.g. c2:32GiB), winning-post:SECTOR-SIZE,
    /// window-post:SECTOR-SIZE, snapdeals:SECTOR-SIZE (the key those
    /// jobs prove with), or a cuzk circuit id (porep-32g, winning-32g,
    /// wpost-32g, snap-32g). Every device is readied for a Filecoin
    /// key (its key and shape placed there), so the first job proves at
    /// once. grpc.health.v1 answers NOT_SERVING until every one is in
    /// place; one that cannot be loaded stops the daemon with an error
    /// naming it.
    #[arg(long, value_name = "KEY")]
    pub(super) preload: Vec<cuda_prover_service::health::Preload>,
    /// Seconds a connection may send nothing before it is closed.
    #[arg(long, default_value_t = 60,
          value_parser = clap::value_parser!(u32).range(1..=MAX_IDLE_TIMEOUT_S))]
    pub(super) idle_timeout_s: u32,
}
