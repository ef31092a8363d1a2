//! `submit`'s job options (`JobArgs`) and the `SubmitRequest` they make:
//! a built-in circuit, a Filecoin C2 or a Filecoin PoSt.

use std::path::PathBuf;

use cuda_prover_service::proto;

use super::parse::{parse_devices, parse_sector_size};

/// The job options of `cuda-prover prove` that a daemon job takes.
#[derive(clap::Args)]
pub(super) struct JobArgs {
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

pub(super) fn submit_request(job: JobArgs) -> Result<proto::SubmitRequest, String> {
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
