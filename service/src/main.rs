//! `cuda-prover-service`: the proving daemon and its CLI client. The
//! `cuda-prover` binary runs it for `serve`, `submit`, `await`, `status`
//! and `cancel`.
//!
//!   cuda-prover serve --listen 127.0.0.1:7411
//!   cuda-prover submit --server 127.0.0.1:7411 --circuit bits --partitions 8
//!   cuda-prover await --server 127.0.0.1:7411 JOB

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::{Parser, Subcommand};
use cuda_prover_engine::{
    open_context, BackendArgs, DeviceSelection, Engine, EngineConfig, Policy,
    MAX_WORKERS_PER_DEVICE,
};
use cuda_prover_service::listener::{ListenAddr, Listener};
use cuda_prover_service::proto;
use cuda_prover_service::{Client, ClientError, JobOutcome, Service, ServiceConfig};
use indicatif::{ProgressBar, ProgressStyle};

const DEFAULT_ADDR: &str = "127.0.0.1:7411";

// Bounds of `serve`'s options (those it shares with `cuda-prover prove`,
// workers per device and host devices, are the engine's): past them a value is a mistake (0 workers or a queue
// of 0 take no job at all; a byte count times 2^20 must not wrap).
const MAX_QUEUE: i64 = 1_000_000;
const MAX_RUNNING: i64 = 1024;
const MAX_REQUEST_BYTES: i64 = 256 << 20; // the gRPC decoder's own limit
const MAX_FILECOIN_REQUEST_MIB: i64 = 256;
const MAX_KEY_MEMORY_MIB: u64 = u64::MAX >> 20;
const MAX_TOKEN_BYTES: usize = 4096;
const MAX_CONNECTIONS: i64 = 65_536;
const MAX_IDLE_TIMEOUT_S: i64 = 86_400;

/// A token is sent in a request header: visible ASCII only (no space, no
/// newline, no control character), 1 to 4096 bytes.
fn parse_token(t: &str) -> Result<String, String> {
    if t.is_empty() {
        return Err("the token is empty".into());
    }
    if t.len() > MAX_TOKEN_BYTES {
        return Err(format!(
            "the token has {} bytes (at most {MAX_TOKEN_BYTES})",
            t.len()
        ));
    }
    if let Some((i, c)) = t.char_indices().find(|(_, c)| !c.is_ascii_graphic()) {
        return Err(format!(
            "the token may hold visible ASCII only; byte {i} is {:?}",
            c
        ));
    }
    Ok(t.to_string())
}

#[derive(Parser)]
#[command(
    name = "cuda-prover-service",
    version,
    about = "The cuda-prover proving daemon and its client"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Args)]
struct Remote {
    /// The daemon's address.
    #[arg(long, default_value = DEFAULT_ADDR)]
    server: String,
    /// The daemon's token, when it has one.
    #[arg(long, env = "CUDA_PROVER_TOKEN", hide_env_values = true, value_parser = parse_token)]
    token: Option<String>,
}

/// A key on the daemon: its circuit, size and params dir.
#[derive(clap::Args)]
struct KeyArgs {
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
    fn request(self) -> proto::KeyRequest {
        proto::KeyRequest {
            circuit: self.circuit,
            log_constraints: self.log_constraints,
            params_dir: self.params_dir,
        }
    }
}

/// The job options of `cuda-prover prove` that a daemon job takes.
#[derive(clap::Args)]
struct JobArgs {
    /// chain (dense y = x^2 + 7) or bits (bit decompositions).
    #[arg(long, default_value = "chain")]
    circuit: String,
    /// Constraints per partition: 2^N.
    #[arg(long, default_value_t = 12)]
    log_constraints: u32,
    #[arg(long, default_value_t = 4)]
    partitions: u32,
    /// Device ordinals of the daemon to use, e.g. 0,1 (default: all).
    #[arg(long)]
    gpu_devices: Option<String>,
    /// Reproducible blinding factors and witnesses from this seed.
    #[arg(long)]
    seed: Option<u64>,
    /// auto, full or witness.
    #[arg(long, default_value = "auto")]
    synthesis: String,
    /// A directory inside the daemon's params dirs (default: its first).
    #[arg(long, default_value = "")]
    params_dir: String,
    /// Larger first: 300 WinningPoSt, 200 WindowPoSt, 100 C2, SnapDeals
    /// and built-in jobs; 0 (the default) takes the job kind's.
    #[arg(long, default_value_t = 0)]
    priority: u32,
    #[arg(long, default_value = "")]
    name: String,
    /// Cancel the job unless done this many ms after submission.
    #[arg(long, default_value_t = 0)]
    deadline_ms: u64,
    /// An idempotency key (up to 256 bytes): a submit with an id the
    /// daemon knows prints that job's id instead of queueing another (also
    /// after a daemon restart, with --state-dir), so a submit whose answer
    /// was lost can be run again; the same id with other options is an
    /// error.
    #[arg(long, default_value = "")]
    request_id: String,
    /// A Filecoin commit phase 2 instead of a built-in circuit: the C1
    /// output file (filecoin-proofs' JSON, its api form, or lotus-bench /
    /// Curio's {"SectorNum","Phase1Out","SectorSize"} wrapper). Needs
    /// --prover-id and --sector-id; proves at priority 100 (C2) unless
    /// --priority says otherwise.
    #[arg(long, conflicts_with = "filecoin_post")]
    filecoin_c2: Option<PathBuf>,
    /// A Filecoin Winning or Window PoSt instead of a built-in circuit:
    /// the PoSt input file `cuda-prover-filecoin test-post` writes (JSON:
    /// kind, sector_size, randomness and prover_id in hex, and per sector
    /// its number, comm_r and vanilla proof, base64 of filecoin-proofs'
    /// bincode FallbackPoStSectorProof). Proves at priority 300 (winning)
    /// or 200 (window) unless --priority says otherwise; --deadline-ms
    /// applies as to any job.
    #[arg(long)]
    filecoin_post: Option<PathBuf>,
    /// With --filecoin-c2: the miner's prover id, hex (1-32 bytes).
    #[arg(long, requires = "filecoin_c2")]
    prover_id: Option<String>,
    /// With --filecoin-c2: the sector number.
    #[arg(long, requires = "filecoin_c2")]
    sector_id: Option<u64>,
    /// With --filecoin-c2: the sector size (e.g. 2KiB, 32GiB, or bytes)
    /// when the file does not say it; checked against the file either way.
    #[arg(long, requires = "filecoin_c2")]
    sector_size: Option<String>,
    /// With --filecoin-c2: the registered seal proof, e.g.
    /// StackedDrg32GiBV1_1 (default: the file's, else V1_1).
    #[arg(long, requires = "filecoin_c2")]
    registered_proof: Option<String>,
}

#[derive(Subcommand)]
enum Command {
    /// Run the daemon.
    Serve {
        /// gRPC address: host:port (anything but loopback needs --token)
        /// or unix:///path/to.sock (no token; the file's mode decides who
        /// connects). Both APIs are served there: cuda_prover.v1 and
        /// cuzk.v1 (Curio's), and grpc.health.v1.
        #[arg(long, env = "CUDA_PROVER_LISTEN", default_value = DEFAULT_ADDR)]
        listen: String,
        /// The unix socket file's mode, octal (with --listen unix://...).
        #[arg(long, default_value = "0660", value_parser = parse_socket_mode)]
        socket_mode: u32,
        /// Prometheus text at http://ADDR/metrics.
        #[arg(long)]
        metrics_listen: Option<String>,
        #[arg(long, env = "CUDA_PROVER_TOKEN", hide_env_values = true, value_parser = parse_token)]
        token: Option<String>,
        /// Where keys are read and written (repeat for more; the first is
        /// the default). Requests cannot name a file outside them.
        #[arg(long, default_value = "params-cache")]
        params_dir: Vec<PathBuf>,
        /// Jobs queued or running at most (past it: "busy").
        #[arg(long, default_value_t = 256,
              value_parser = clap::value_parser!(u32).range(1..=MAX_QUEUE))]
        max_queue: u32,
        /// Jobs running at once.
        #[arg(long, default_value_t = 4,
              value_parser = clap::value_parser!(u32).range(1..=MAX_RUNNING))]
        max_running: u32,
        /// Largest request, in bytes.
        #[arg(long, default_value_t = 64 << 10,
              value_parser = clap::value_parser!(u32).range(1..=MAX_REQUEST_BYTES))]
        max_request_bytes: u32,
        /// Host memory resident keys may take, built-in and Filecoin (default:
        /// half the host memory available at start).
        #[arg(long, value_parser = clap::value_parser!(u64).range(1..=MAX_KEY_MEMORY_MIB))]
        key_memory_mib: Option<u64>,
        #[command(flatten)]
        dev: BackendArgs,
        /// Device ordinals the daemon owns, e.g. 0,1 (default: all).
        #[arg(long)]
        gpu_devices: Option<String>,
        #[arg(long, default_value = "round-robin")]
        policy: Policy,
        #[arg(long, default_value_t = 1,
              value_parser = clap::value_parser!(u32).range(1..=MAX_WORKERS_PER_DEVICE))]
        workers_per_device: u32,
        /// Partitions prepared ahead beside each device's running and
        /// queued ones (each holds one more witness in host memory, about
        /// 4 GiB for a 32 GiB PoRep partition): a PoRep partition's
        /// parallel witness leaves cores idle in its last wave, and the
        /// next partition's challenges fill them.
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(0..=16))]
        prepare_ahead: u32,
        /// Take no Filecoin jobs.
        #[arg(long)]
        no_filecoin: bool,
        /// Filecoin jobs prove with TEST parameters (seeded, never the
        /// network's) from DIR, default the test parameter directory of
        /// `cuda-prover-filecoin test-params`. Without it they use
        /// filecoin-proofs' parameter cache (FIL_PROOFS_PARAMETER_CACHE).
        #[arg(long, value_name = "DIR", num_args = 0..=1, default_missing_value = "")]
        filecoin_test_params: Option<PathBuf>,
        /// Largest Filecoin C2 request (it holds the C1 output), in MiB.
        #[arg(long, default_value_t = 64,
              value_parser = clap::value_parser!(u32).range(1..=MAX_FILECOIN_REQUEST_MIB))]
        max_filecoin_request_mib: u32,
        /// Client connections open at once (lowered to what the open-file
        /// limit leaves, less 64); more are closed as they arrive.
        #[arg(long, default_value_t = 512,
              value_parser = clap::value_parser!(u32).range(1..=MAX_CONNECTIONS))]
        max_connections: u32,
        /// Journal accepted jobs in DIR/jobs.journal (fsync'd before a submit
        /// answers): after a crash, the next start on DIR runs the queued
        /// and running jobs again under their ids and keeps finished
        /// results for await.
        #[arg(long, value_name = "DIR")]
        state_dir: Option<PathBuf>,
        /// How long a finished job's result and proofs are kept for await
        /// (in memory and in the journal) after it ended: 90s, 30m, 24h,
        /// 7d (1 s to 3650 d).
        #[arg(long, default_value = "24h", value_parser = parse_retention)]
        retention: std::time::Duration,
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
        preload: Vec<cuda_prover_service::health::Preload>,
        /// Seconds a connection may send nothing before it is closed.
        #[arg(long, default_value_t = 60,
              value_parser = clap::value_parser!(u32).range(1..=MAX_IDLE_TIMEOUT_S))]
        idle_timeout_s: u32,
    },
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

/// A retention time: a whole number with a unit (s, m, h, d), 1 s to
/// 3650 days.
fn parse_retention(s: &str) -> Result<std::time::Duration, String> {
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (n, unit) = s.split_at(split);
    let n: u64 = n
        .parse()
        .map_err(|_| format!("'{s}': a whole number and a unit, e.g. 90s, 30m, 24h, 7d"))?;
    let unit_s = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        _ => return Err(format!("'{s}': the unit is s, m, h or d (e.g. 24h)")),
    };
    let secs = n
        .checked_mul(unit_s)
        .filter(|t| (1..=3650 * 86_400).contains(t))
        .ok_or_else(|| format!("'{s}': between 1s and 3650d"))?;
    Ok(std::time::Duration::from_secs(secs))
}

/// An octal file mode of permission bits only (0660, 600).
fn parse_socket_mode(s: &str) -> Result<u32, String> {
    let m = u32::from_str_radix(s.trim_start_matches("0o"), 8)
        .map_err(|_| format!("'{s}' is not an octal mode (e.g. 0660)"))?;
    if m > 0o777 {
        return Err(format!("'{s}': permission bits only (at most 0777)"));
    }
    Ok(m)
}

/// Resolves on Ctrl-C (SIGINT) or SIGTERM (systemd's stop).
async fn stop_signal() {
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term => {}
    }
}

fn parse_devices(s: &str) -> Result<Vec<u32>, String> {
    s.split(',')
        .filter(|p| !p.trim().is_empty())
        .map(|p| {
            p.trim()
                .parse()
                .map_err(|_| format!("bad device ordinal '{p}' in '{s}'"))
        })
        .collect()
}

/// A sector size: bytes, or what the Filecoin crate reads (2KiB, 32GiB).
fn parse_sector_size(s: &str) -> Result<u64, String> {
    if let Ok(n) = s.trim().parse::<u64>() {
        return Ok(n);
    }
    #[cfg(feature = "filecoin")]
    {
        s.parse::<cuda_prover_filecoin::SectorSize>()
            .map(|z| z.bytes())
            .map_err(|e| format!("--sector-size {s}: {e}"))
    }
    #[cfg(not(feature = "filecoin"))]
    Err(format!("--sector-size {s}: give the size in bytes"))
}

fn job_kind(job: &JobArgs) -> Result<proto::submit_request::Job, String> {
    if let Some(path) = &job.filecoin_post {
        #[cfg(feature = "filecoin")]
        return cuda_prover_service::client::filecoin_post_job(path).map_err(|e| e.to_string());
        #[cfg(not(feature = "filecoin"))]
        return Err(format!(
            "--filecoin-post {}: this build has no Filecoin jobs (feature filecoin)",
            path.display()
        ));
    }
    let Some(path) = &job.filecoin_c2 else {
        return Ok(proto::submit_request::Job::BuiltIn(proto::BuiltInJob {
            circuit: job.circuit.clone(),
            log_constraints: job.log_constraints,
            partitions: job.partitions,
            seed: job.seed,
            synthesis: job.synthesis.clone(),
        }));
    };
    #[cfg(feature = "filecoin")]
    let c1_output = cuda_prover_filecoin::c1::read_c1_file(path).map_err(|e| e.to_string())?;
    #[cfg(not(feature = "filecoin"))]
    let c1_output = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(proto::submit_request::Job::FilecoinC2(
        proto::FilecoinC2Job {
            c1_output,
            prover_id: job
                .prover_id
                .clone()
                .ok_or("--filecoin-c2 needs --prover-id")?,
            sector_id: job.sector_id.ok_or("--filecoin-c2 needs --sector-id")?,
            sector_size: job
                .sector_size
                .as_deref()
                .map(parse_sector_size)
                .transpose()?
                .unwrap_or(0),
            registered_proof: job.registered_proof.clone().unwrap_or_default(),
        },
    ))
}

fn submit_request(job: JobArgs) -> Result<proto::SubmitRequest, String> {
    Ok(proto::SubmitRequest {
        job: Some(job_kind(&job)?),
        priority: job.priority,
        devices: job
            .gpu_devices
            .as_deref()
            .map(parse_devices)
            .transpose()?
            .unwrap_or_default(),
        params_dir: job.params_dir,
        name: job.name,
        deadline_ms: job.deadline_ms,
        request_id: job.request_id,
    })
}

/// `--filecoin-test-params [DIR]`: the given directory, or the default
/// test parameter directory when none is given.
fn test_params_dir(arg: Option<PathBuf>) -> Result<Option<PathBuf>, String> {
    match arg {
        None => Ok(None),
        Some(d) if !d.as_os_str().is_empty() => Ok(Some(d)),
        Some(_) => {
            #[cfg(feature = "filecoin")]
            {
                cuda_prover_filecoin::test_params::default_test_parameter_dir()
                    .map(Some)
                    .map_err(|e| e.to_string())
            }
            #[cfg(not(feature = "filecoin"))]
            Err("--filecoin-test-params: this build has no Filecoin jobs".into())
        }
    }
}

async fn connect(r: &Remote) -> Result<Client, ClientError> {
    Client::connect(&r.server, r.token.as_deref()).await
}

async fn run(cli: Cli) -> Result<ExitCode, String> {
    let s = |e: ClientError| e.to_string();
    match cli.command {
        Command::Serve {
            listen,
            socket_mode,
            metrics_listen,
            token,
            params_dir,
            max_queue,
            max_running,
            max_request_bytes,
            key_memory_mib,
            dev,
            gpu_devices,
            policy,
            workers_per_device,
            prepare_ahead,
            no_filecoin,
            filecoin_test_params,
            max_filecoin_request_mib,
            max_connections,
            idle_timeout_s,
            state_dir,
            preload,
            retention,
        } => {
            let addr: ListenAddr = listen.parse().map_err(|e| format!("--listen {e}"))?;
            if let ListenAddr::Tcp(a) = &addr {
                cuda_prover_service::server::check_listen(a, token.as_deref())?;
            }
            let devices = match gpu_devices {
                Some(list) => DeviceSelection::parse_list(&list)?,
                None => DeviceSelection::All,
            };
            let ctx = Arc::new(
                open_context(dev.backend, dev.host_devices, &devices).map_err(|e| e.to_string())?,
            );
            let engine = Engine::new(
                ctx,
                EngineConfig {
                    devices,
                    policy,
                    workers_per_device: workers_per_device as usize,
                    prepare_ahead: prepare_ahead as usize,
                    ..Default::default()
                },
            )
            .map_err(|e| e.to_string())?;
            let config = ServiceConfig {
                params_dirs: params_dir,
                max_queue: max_queue as usize,
                max_running: max_running as usize,
                max_request_bytes: max_request_bytes as usize,
                // At most u64::MAX >> 20 MiB (the option's bound): no wrap.
                key_budget_bytes: key_memory_mib.map(|m| m << 20),
                token,
                filecoin: !no_filecoin,
                filecoin_test_params: test_params_dir(filecoin_test_params)?,
                // At most 256 MiB (the option's bound): no wrap.
                max_filecoin_request_bytes: (max_filecoin_request_mib as usize) << 20,
                max_connections: max_connections as usize,
                idle_timeout: std::time::Duration::from_secs(idle_timeout_s.into()),
                state_dir,
                preload,
                retention,
                ..Default::default()
            };
            let service = Service::new(Arc::new(engine), config)?;
            let listener = Listener::bind(&addr, socket_mode).await?;
            let bound = listener.describe();
            if let Some(m) = metrics_listen {
                let ml = tokio::net::TcpListener::bind(&m)
                    .await
                    .map_err(|e| format!("cannot listen on {m}: {e}"))?;
                let ma = ml.local_addr().map_err(|e| e.to_string())?;
                if !ma.ip().is_loopback() {
                    return Err(format!("metrics on {ma}: only a loopback address is allowed (the metrics port has no token)"));
                }
                eprintln!("metrics on http://{ma}/metrics");
                tokio::spawn(cuda_prover_service::metrics_http::serve_metrics(
                    service.clone(),
                    ml,
                ));
            }
            // The address alone on a line: scripts and tests read it.
            println!("listening on {bound}");
            use std::io::Write;
            let _ = std::io::stdout().flush();
            cuda_prover_service::serve(service, listener, stop_signal()).await?;
            eprintln!("stopped");
            Ok(ExitCode::SUCCESS)
        }
        Command::Submit { remote, job } => {
            let req = submit_request(job)?;
            let id = connect(&remote)
                .await
                .map_err(s)?
                .submit(req)
                .await
                .map_err(s)?;
            println!("{id}");
            Ok(ExitCode::SUCCESS)
        }
        Command::Await {
            remote,
            job,
            proofs_out,
            proof_out,
            report,
        } => {
            let client = connect(&remote).await.map_err(s)?;
            let bar = progress_bar();
            let out = client
                .await_job(&job, |done, total, state| {
                    if let Some(b) = &bar {
                        b.set_length(total as u64);
                        b.set_position(done as u64);
                        b.set_message(state.to_string());
                    }
                })
                .await;
            if let Some(b) = &bar {
                b.finish_and_clear();
            }
            let out = out.map_err(s)?;
            if let Some(path) = proof_out {
                std::fs::write(&path, out.proofs.concat())
                    .map_err(|e| format!("{}: {e}", path.display()))?;
            }
            finish(&out, proofs_out, report)
        }
        Command::Status { remote } => {
            let st = connect(&remote)
                .await
                .map_err(s)?
                .status()
                .await
                .map_err(s)?;
            print_status(&st);
            Ok(ExitCode::SUCCESS)
        }
        Command::Cancel { remote, job } => {
            let state = connect(&remote)
                .await
                .map_err(s)?
                .cancel(&job)
                .await
                .map_err(s)?;
            println!("job {job}: {state}");
            Ok(ExitCode::SUCCESS)
        }
        Command::Metrics { remote } => {
            print!(
                "{}",
                connect(&remote)
                    .await
                    .map_err(s)?
                    .metrics()
                    .await
                    .map_err(s)?
            );
            Ok(ExitCode::SUCCESS)
        }
        Command::Preload { remote, key } => {
            let bar = spinner("loading the key (generating it when missing)");
            let r = connect(&remote)
                .await
                .map_err(s)?
                .preload(key.request())
                .await;
            if let Some(b) = bar {
                b.finish_and_clear();
            }
            let r = r.map_err(s)?;
            println!("resident: {} ({} MiB, pinned)", r.key, r.bytes >> 20);
            for e in r.evicted {
                println!("evicted: {e}");
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Evict { remote, key } => {
            let r = connect(&remote)
                .await
                .map_err(s)?
                .evict(key.request())
                .await
                .map_err(s)?;
            println!("evicted: {}", r.key);
            Ok(ExitCode::SUCCESS)
        }
        Command::Drain { remote } => {
            connect(&remote)
                .await
                .map_err(s)?
                .drain()
                .await
                .map_err(s)?;
            println!("drained");
            Ok(ExitCode::SUCCESS)
        }
        Command::Health {
            server,
            service,
            wait_s,
        } => {
            let wait = wait_s.map(std::time::Duration::from_secs);
            match cuda_prover_service::health::check(&server, &service, wait).await {
                Ok(status) => {
                    println!("{status}");
                    Ok(if status == "SERVING" {
                        ExitCode::SUCCESS
                    } else {
                        ExitCode::FAILURE
                    })
                }
                Err(e) => Err(e),
            }
        }
        Command::Shutdown { remote, now } => {
            connect(&remote)
                .await
                .map_err(s)?
                .shutdown(now)
                .await
                .map_err(s)?;
            println!("stopped");
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// A bar on stderr when it is a terminal.
fn progress_bar() -> Option<ProgressBar> {
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

fn spinner(msg: &str) -> Option<ProgressBar> {
    if !std::io::stderr().is_terminal() {
        return None;
    }
    let b = ProgressBar::new_spinner();
    b.set_message(msg.to_string());
    b.enable_steady_tick(std::time::Duration::from_millis(120));
    Some(b)
}

fn finish(
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

fn print_status(st: &proto::StatusReply) {
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
