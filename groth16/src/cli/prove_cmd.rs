//! `cuda-prover prove`: N partitions of a built-in circuit proved on the
//! engine, verified, reported (summary, JSON, Prometheus) and, when asked,
//! written out.

use std::path::PathBuf;
use std::sync::Arc;

use clap::Args;
use cuda_prover_engine::output::{check_not_input, OutputFile};
use cuda_prover_engine::{EngineArgs, EngineError};
use cuda_prover_groth16::key_store::{shape_path, KeyStore};
use cuda_prover_groth16::params::key_path;
use cuda_prover_groth16::params_dir::ParamsDir;
use cuda_prover_groth16::shape_cache::load_or_record;
use cuda_prover_groth16::{BlindingSource, Groth16Engine, Job};
use cuda_prover_pipeline::circuits::{BuiltIn, Kind};
use cuda_prover_pipeline::{PartitionProof, StreamSharing, SynthesisMode};

use super::bars;

// Upper bounds of the options: past them a value is a mistake, and would
// cost threads or memory before any work (the engine keeps a little state
// per partition and one thread per worker and synthesis thread).
const MAX_PARTITIONS: i64 = 100_000;

// The subcommand's options (its help text is the variant's, in mod.rs).
#[derive(Args)]
pub struct ProveArgs {
    /// chain (dense y = x^2 + 7) or bits (bit decompositions).
    #[arg(long, default_value = "chain")]
    pub circuit: Kind,
    /// Constraints per partition: 2^N.
    #[arg(long, default_value_t = 12)]
    pub log_constraints: u32,
    #[arg(long, default_value_t = 4,
          value_parser = clap::value_parser!(u32).range(1..=MAX_PARTITIONS))]
    pub partitions: u32,
    #[command(flatten)]
    pub engine: EngineArgs,
    /// When partitions with the same streamed key share one pass over
    /// its chunks (each chunk sent up once for all of them): auto (the
    /// default: where the device measured that its copies outlast one
    /// proof's sums), always (whenever the memory allows) or never.
    #[arg(long, value_name = "MODE", default_value = "auto")]
    pub stream_sharing: StreamSharing,
    /// Where proving keys are cached.
    #[arg(long, default_value = "params-cache")]
    pub params_dir: PathBuf,
    /// Write the job report as JSON.
    #[arg(long)]
    pub report: Option<PathBuf>,
    /// Write Prometheus metrics (text format).
    #[arg(long)]
    pub metrics: Option<PathBuf>,
    /// Reproducible blinding factors and witnesses from this seed.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Free every device's cache after the job.
    #[arg(long)]
    pub trim_after: bool,
    /// auto: witness-only synthesis with the circuit's shape (cached
    /// next to the params); full: a, b, c evaluated on the CPU;
    /// witness: the shape path, required.
    #[arg(long, default_value = "auto")]
    pub synthesis: SynthesisMode,
    /// Write each partition's proof (bellperson's 192-byte encoding) to
    /// DIR/partition-K.proof.
    #[arg(long)]
    pub proofs_out: Option<PathBuf>,
}

/// Proves, verifies and reports the job `args` describes.
pub fn run(args: ProveArgs) -> Result<(), EngineError> {
    let ProveArgs {
        circuit,
        log_constraints,
        partitions,
        engine,
        stream_sharing,
        params_dir,
        report,
        metrics,
        seed,
        trim_after,
        synthesis,
        proofs_out,
    } = args;
    let partitions = partitions as usize;
    let shape = BuiltIn::new(circuit, log_constraints, 0).map_err(EngineError::Setup)?;
    let engine = engine.engine(|c| c.stream_sharing = Some(stream_sharing))?;
    // Output paths are checked before any work, so that a bad path
    // fails now and not after the proofs, and none names an input.
    let key_stem = key_path(&params_dir, &shape)
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    for (what, p) in [("report", &report), ("metrics", &metrics)] {
        if let Some(p) = p {
            check_not_input(what, p, &params_dir, &key_stem)?;
        }
    }
    if let (Some(r), Some(m)) = (&report, &metrics) {
        if r == m {
            return Err(EngineError::Setup(format!(
                "--report and --metrics name the same file {}",
                r.display()
            )));
        }
    }
    let report_out = report
        .as_deref()
        .map(|p| OutputFile::prepare("report", p))
        .transpose()?;
    let metrics_out = metrics
        .as_deref()
        .map(|p| OutputFile::prepare("metrics", p))
        .transpose()?;
    for d in engine.devices() {
        eprintln!(
            "device {}: {}{}",
            d.ordinal,
            d.name,
            if d.simulated { " (simulated)" } else { "" }
        );
    }
    if let Some(dir) = &proofs_out {
        std::fs::create_dir_all(dir).map_err(|source| EngineError::Io {
            what: format!("cannot write proofs to {}", dir.display()),
            source,
        })?;
    }
    let mut bars = bars::Bars::new();
    bars.start_spinner("loading the key (generating it when missing)");
    // The CLI's store: one run, every key it loads kept.
    let keys = KeyStore::unbounded();
    let loaded = {
        let b = &bars;
        let say = |s: &str| b.say(s);
        ParamsDir::open(&params_dir).and_then(|dir| keys.load_built_in(&dir, &shape, false, &say))
    };
    bars.stop_spinner();
    let stored = loaded?.key;
    let key = stored.key().clone();
    let recorded = stored.shape().ok_or_else(|| {
        EngineError::Setup("a built-in circuit's key came without its shape".into())
    })?;
    let base = seed.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0)
    });
    let run_with_shape = |shape_now: Option<Arc<cuda_prover_pipeline::Shape>>| {
        let circuits = (0..partitions)
            .map(|k| BuiltIn::new(circuit, log_constraints, base.wrapping_add(k as u64)))
            .collect::<Result<Vec<_>, _>>()
            .map_err(EngineError::Setup)?;
        let job = Job {
            name: format!("{}-2^{}x{}", circuit.name(), log_constraints, partitions),
            partitions: circuits,
            blinding: seed
                .map(BlindingSource::Seeded)
                .unwrap_or(BlindingSource::Random),
            trim_after,
            synthesis,
            shape: shape_now,
        };
        let bar = bars.job_bar(partitions as u64);
        let out = engine.run(job, &key, |p| {
            if let Some(b) = &bar {
                b.set_position(p.done as u64);
                b.set_message(format!("last: partition {} on device {}", p.item, p.device));
                return;
            }
            let per: Vec<String> = engine
                .devices()
                .iter()
                .zip(&p.done_per_device)
                .map(|(d, n)| format!("dev{}={}", d.ordinal, n))
                .collect();
            eprintln!(
                "[{}/{}] partition {} proved on device {} ({})",
                p.done,
                p.total,
                p.item,
                p.device,
                per.join(" ")
            );
        });
        if let Some(b) = &bar {
            b.finish_and_clear();
        }
        out
    };
    let circuit_shape = match synthesis {
        SynthesisMode::Full => None,
        _ => Some(recorded),
    };
    let used_shape = circuit_shape.is_some();
    let mut out = run_with_shape(circuit_shape);
    // Proofs from witnesses that do not verify, with a key that
    // checked out and a shape that matched it: the shape file is the
    // likely cause (corrupt yet self-consistent, or forged). It is
    // recorded again from the circuit, once, and the job run again.
    if let (true, Err(e @ EngineError::Verification { .. })) = (used_shape, &out) {
        let path = shape_path(stored.file());
        eprintln!(
            "{e}; the shape file {} is the likely cause: recording it again and proving once more",
            path.display()
        );
        std::fs::remove_file(&path).map_err(|source| EngineError::Io {
            what: format!("cannot remove {}", path.display()),
            source,
        })?;
        let say = |s: &str| bars.say(s);
        let dir = ParamsDir::open(&params_dir)?;
        let again = load_or_record(&dir, &shape, &key, &say)?;
        out = run_with_shape(Some(again)).map_err(|e| match e {
            EngineError::Verification { partition, device } => EngineError::Params(format!(
                "partition {partition} (device {device}): proof does not verify with a \
                 shape recorded again either: the key {} is the likely cause",
                key_path(&params_dir, &shape).display()
            )),
            e => e,
        });
    }
    let out = out?;
    if let Some(f) = report_out {
        f.commit("report", &out.report.to_json())?;
    }
    if let Some(f) = metrics_out {
        f.commit("metrics", &out.report.to_prometheus())?;
    }
    print!("{}", out.report.summary());
    println!(
        "all {} proofs verified with bellperson's verifier",
        out.proofs.len()
    );
    if let Some(dir) = proofs_out {
        write_proofs(&dir, &out.proofs)?;
        println!("wrote {} proofs to {}", out.proofs.len(), dir.display());
    }
    Ok(())
}

/// DIR/partition-K.proof for every proof, in bellperson's encoding.
fn write_proofs(dir: &std::path::Path, proofs: &[PartitionProof]) -> Result<(), EngineError> {
    let fail = |source: std::io::Error| EngineError::Io {
        what: format!("cannot write proofs to {}", dir.display()),
        source,
    };
    std::fs::create_dir_all(dir).map_err(fail)?;
    for p in proofs {
        let mut bytes = Vec::with_capacity(192);
        p.output.proof.write(&mut bytes).map_err(fail)?;
        std::fs::write(dir.join(format!("partition-{}.proof", p.partition)), bytes)
            .map_err(fail)?;
    }
    Ok(())
}
