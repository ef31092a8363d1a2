//! C2 of a 2 KiB sector, per phase, on the cuda-prover backends and with
//! bellperson's CPU prover in the same run. Prints numbers and writes JSON;
//! asserts nothing about speed (every proof is checked by verify_seal).
//!
//!   cargo bench -p cuda-prover-filecoin --bench c2 -- \
//!       --backends cuda,host,bellperson --runs 3 --json c2.json \
//!       [--params-dir DIR] [--gpu-devices 0,1] [--host-devices N] [--sector-size 2KiB]
//!       [--c1 sealed|test] [--c1-seed N] [--keygen-device auto|host|N]
//!       [--synthesis full|auto|witness|both] [--key-in-memory]
//!       [--synthesis-threads N] [--prepare-ahead N (default 1)]
//!       [--device-memory-limit SIZE] [--configs "ahead=0;ahead=1,limit=22GiB"]
//!       [--workers-per-device N (default 1)]
//!
//! `--configs` runs every backend and path once per engine setting (`;`
//! between settings; `ahead`, `threads`, `limit=SIZE|none`, `workers=N`
//! (workers a device: two let a device's second pass lane take the next
//! partition while this one's MSMs finish), each over the single flags'
//! values, and `witness=native|gadget`: a PoRep challenge's
//! SHA-256 parts made from their values, the default, or through
//! bellperson's gadget), each with its own engine and prover.
//!
//! The C1 comes from a sector sealed here (`sealed`, the default up to
//! 8 MiB) or from `test-c1`'s generator (`test`, the default above: a
//! valid C1 of a CC sector in seconds, a test fixture that picks its own
//! challenge seed). The whole-job entries carry `sector_size`,
//! `end_to_end_s`, `device_s` (the partitions' device parts summed),
//! `device_busy_s` (time with a device part in flight on a device, summed
//! over devices: below `device_s` where a device's two pass lanes overlap
//! partitions), `witness_s`, `peak_host_rss_mib` (the process's peak so
//! far), `peak_device_mib` and `verified`.
//!
//! TEST parameters (seeded, not the network's) are generated on first use
//! into --params-dir (default: $CUDA_PROVER_FILECOIN_TEST_PARAMS, else the
//! user cache directory), so an empty GPU machine needs nothing else.
//! Build for a GPU with `--features cuda`.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use bellperson::groth16::{create_random_proof_batch, MappedParameters, Parameters};
use blstrs::Bls12;
use cuda_prover_engine::{
    open_context, BackendChoice, DeviceSelection, Engine, EngineConfig, Policy,
};
use cuda_prover_filecoin::c1::{C1File, Expected};
use cuda_prover_filecoin::c2::c2_from_bytes;
use cuda_prover_filecoin::sealing::{seal_test_sector, verify_commit, SealTimes, SealedSector};
use cuda_prover_filecoin::test_c1::generate_test_c1;
use cuda_prover_filecoin::test_params::{
    default_test_parameter_dir, ensure_test_parameters_on, make_test_key_in_memory,
    parameter_files, use_test_parameter_dir, Generator, KeygenChoice, KeygenDevice, TestCircuit,
};
use cuda_prover_filecoin::{
    prepare_c2, with_sector_shape, FilecoinError, FilecoinProver, RegisteredSeal, SealVersion,
    SectorSize,
};
use cuda_prover_groth16::BlindingSource;
use cuda_prover_pipeline::{ProvingKey, Shape, SynthesisMode};
use filecoin_proofs::MerkleTreeTrait;
use serde_json::{json, Value};
use storage_proofs_core::sector::SectorId;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

struct Args {
    backends: Vec<String>,
    runs: usize,
    json: Option<PathBuf>,
    params_dir: Option<PathBuf>,
    gpu_devices: Option<String>,
    host_devices: u32,
    sector_size: SectorSize,
    /// `Some(true)`: a test C1; `Some(false)`: a sealed sector; `None`: by size.
    test_c1: Option<bool>,
    c1_seed: u64,
    keygen_device: KeygenChoice,
    /// The paths run on the core backends.
    modes: Vec<SynthesisMode>,
    /// The TEST key made on the GPU and kept in memory (no params file).
    key_in_memory: bool,
    /// The engine settings to run, each with every backend and path.
    configs: Vec<RunConfig>,
}

/// Engine settings of one set of runs.
#[derive(Debug, Clone, Copy, PartialEq)]
struct RunConfig {
    synthesis_threads: usize,
    prepare_ahead: usize,
    /// MiB.
    device_memory_limit: Option<u64>,
    /// The PoRep witness's SHA-256 parts made from their values.
    native_witness: bool,
    /// Engine workers a device (at least 1).
    workers_per_device: usize,
}

impl RunConfig {
    /// `ahead=N,threads=N,limit=SIZE|none,workers=N,witness=native|gadget`,
    /// each optional, over `base`.
    fn parse(s: &str, base: RunConfig) -> Result<Self, FilecoinError> {
        let mut c = base;
        for kv in s.split(',').map(str::trim).filter(|kv| !kv.is_empty()) {
            let (k, v) = kv.split_once('=').ok_or_else(|| {
                FilecoinError::Input(format!("--configs: '{kv}' is not key=value"))
            })?;
            let num = |v: &str| {
                v.parse::<usize>()
                    .map_err(|_| FilecoinError::Input(format!("--configs: '{v}' is not a number")))
            };
            match k {
                "ahead" => c.prepare_ahead = num(v)?,
                "witness" => {
                    c.native_witness = match v {
                        "native" => true,
                        "gadget" => false,
                        o => {
                            return Err(FilecoinError::Input(format!(
                                "--configs: witness={o} (native or gadget)"
                            )))
                        }
                    }
                }
                "threads" => c.synthesis_threads = num(v)?,
                "workers" => c.workers_per_device = workers(num(v)?)?,
                "limit" if v == "none" => c.device_memory_limit = None,
                "limit" => {
                    c.device_memory_limit = Some(
                        cuda_prover_engine::parse_memory_mib(v).map_err(FilecoinError::Input)?,
                    )
                }
                o => {
                    return Err(FilecoinError::Input(format!(
                        "--configs: unknown setting '{o}' (ahead, threads, limit, workers, witness)"
                    )))
                }
            }
        }
        Ok(c)
    }

    fn json(&self) -> Value {
        json!({
            "synthesis_threads": self.synthesis_threads,
            "prepare_ahead": self.prepare_ahead,
            "device_memory_limit_mib": self.device_memory_limit,
            "native_witness": self.native_witness,
            "workers_per_device": self.workers_per_device,
        })
    }
}

/// Workers a device: at least 1.
fn workers(n: usize) -> Result<usize, FilecoinError> {
    if n == 0 {
        return Err(FilecoinError::Input("workers a device: at least 1".into()));
    }
    Ok(n)
}

/// A key made in this process, given to every prover.
struct Preloaded {
    params: PathBuf,
    key: Arc<ProvingKey>,
    shape: Arc<Shape>,
}

fn parse() -> Result<Args, FilecoinError> {
    let mut a = Args {
        backends: vec!["host".into(), "bellperson".into()],
        runs: 2,
        json: None,
        params_dir: None,
        gpu_devices: None,
        host_devices: 0,
        sector_size: SectorSize::KIB_2,
        test_c1: None,
        c1_seed: 7,
        keygen_device: KeygenChoice::Auto,
        modes: vec![SynthesisMode::Full, SynthesisMode::Auto],
        key_in_memory: false,
        configs: Vec::new(),
    };
    let mut base = RunConfig {
        synthesis_threads: 0,
        prepare_ahead: 1,
        device_memory_limit: None,
        native_witness: true,
        workers_per_device: 1,
    };
    let mut configs = None;
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        let mut v = || {
            it.next()
                .ok_or_else(|| FilecoinError::Input(format!("{k} needs a value")))
        };
        let num = |s: String| {
            s.parse::<u64>()
                .map_err(|_| FilecoinError::Input(format!("'{s}' is not a number")))
        };
        match k.as_str() {
            "--backends" => a.backends = v()?.split(',').map(String::from).collect(),
            "--runs" => a.runs = num(v()?)? as usize,
            "--json" => a.json = Some(PathBuf::from(v()?)),
            "--params-dir" => a.params_dir = Some(PathBuf::from(v()?)),
            "--gpu-devices" => a.gpu_devices = Some(v()?),
            "--host-devices" => a.host_devices = num(v()?)? as u32,
            "--sector-size" => a.sector_size = v()?.parse()?,
            "--c1" => {
                a.test_c1 = Some(match v()?.as_str() {
                    "test" => true,
                    "sealed" => false,
                    o => {
                        return Err(FilecoinError::Input(format!(
                            "--c1 {o}: expected sealed or test"
                        )))
                    }
                })
            }
            "--c1-seed" => a.c1_seed = num(v()?)?,
            "--synthesis" => {
                a.modes = match v()?.as_str() {
                    "both" => vec![SynthesisMode::Full, SynthesisMode::Auto],
                    m => vec![m.parse().map_err(FilecoinError::Input)?],
                }
            }
            "--key-in-memory" => a.key_in_memory = true,
            "--synthesis-threads" => base.synthesis_threads = num(v()?)? as usize,
            "--prepare-ahead" => base.prepare_ahead = num(v()?)? as usize,
            "--workers-per-device" => base.workers_per_device = workers(num(v()?)? as usize)?,
            "--device-memory-limit" => {
                base.device_memory_limit = Some(
                    cuda_prover_engine::parse_memory_mib(&v()?).map_err(FilecoinError::Input)?,
                )
            }
            "--configs" => configs = Some(v()?),
            "--keygen-device" => a.keygen_device = v()?.parse().map_err(FilecoinError::Input)?,
            "--bench" => {}
            o => return Err(FilecoinError::Input(format!("unknown argument {o}"))),
        }
    }
    if a.key_in_memory && a.backends.iter().any(|b| b == "bellperson") {
        return Err(FilecoinError::Input(
            "--key-in-memory: bellperson's prover reads the params file; leave it out of --backends"
                .into(),
        ));
    }
    a.configs = match configs {
        None => vec![base],
        Some(list) => list
            .split(';')
            .map(|c| RunConfig::parse(c, base))
            .collect::<Result<_, _>>()?,
    };
    Ok(a)
}

fn main() {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    if let Err(e) = run() {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), FilecoinError> {
    let a = parse()?;
    let dir = match &a.params_dir {
        Some(d) => d.clone(),
        None => default_test_parameter_dir()?,
    };
    let dir = use_test_parameter_dir(&dir)?;
    println!(
        "TEST parameters (seeded, not the network's) in {}",
        dir.display()
    );
    let t = Instant::now();
    let circuit = TestCircuit::Porep(a.sector_size);
    let mut preloaded = None;
    {
        // The key's points on a GPU when there is one (the context is
        // closed before the backends open theirs).
        let opened = a.keygen_device.open()?;
        let device = opened.as_ref().map(|(ctx, ordinal)| KeygenDevice {
            ctx,
            ordinal: *ordinal,
        });
        if a.key_in_memory {
            let device = device.ok_or_else(|| {
                FilecoinError::Input(
                    "--key-in-memory needs a CUDA device to make the key on".into(),
                )
            })?;
            let (key, shape, report) =
                make_test_key_in_memory(circuit, device, &mut |m| println!("{m}"))?;
            let steps: Vec<String> = report
                .times
                .iter()
                .map(|(s, d)| format!("{s} {:.1} s", d.as_secs_f64()))
                .collect();
            println!(
                "key made in memory on device {}: {}",
                device.ordinal,
                steps.join(", ")
            );
            let shape =
                Shape::new(&shape).map_err(|e| FilecoinError::TestParameters(e.to_string()))?;
            preloaded = Some(Preloaded {
                params: parameter_files(circuit)?.params,
                key: Arc::new(key),
                shape: Arc::new(shape),
            });
        } else {
            ensure_test_parameters_on(&[circuit], Generator::Shape, device, |m| println!("{m}"))?;
        }
    }
    let params_s = t.elapsed().as_secs_f64();

    let work =
        std::env::temp_dir().join(format!("cuda-prover-filecoin-bench-{}", std::process::id()));
    let registered = RegisteredSeal::new(a.sector_size, SealVersion::V1_1);
    let test_c1 = a.test_c1.unwrap_or(a.sector_size.bytes() > 8 << 20);
    let sector = if test_c1 {
        let t = generate_test_c1(registered, a.c1_seed)?;
        println!(
            "test C1 of a {registered} CC sector: {} partitions, built in {:.2} s, checked in {:.2} s",
            t.partitions,
            t.build.as_secs_f64(),
            t.verify.as_secs_f64()
        );
        SealedSector {
            registered,
            prover_id: t.identity.prover_id,
            sector_id: t.identity.sector_id,
            ticket: t.identity.ticket,
            seed: t.identity.seed,
            comm_r: t.comm_r,
            comm_d: t.comm_d,
            replica: PathBuf::new(),
            cache: PathBuf::new(),
            c1_json: t.c1_json,
            times: SealTimes {
                add_piece: Default::default(),
                pc1: Default::default(),
                pc2: Default::default(),
                c1: t.build + t.verify,
            },
        }
    } else {
        let sector = seal_test_sector(registered, &work, a.c1_seed)?;
        println!(
            "sealed {registered} sector (PC1 {:.2} s, PC2 {:.2} s, C1 {:.2} s)",
            sector.times.pc1.as_secs_f64(),
            sector.times.pc2.as_secs_f64(),
            sector.times.c1.as_secs_f64()
        );
        sector
    };

    let mut results = Vec::new();
    for backend in &a.backends {
        // The core backends on both synthesis paths: full, then the witness
        // path (its first run records the circuit's shape next to the
        // params when it is not there yet, and says so).
        let modes: &[SynthesisMode] = if backend == "bellperson" {
            &[SynthesisMode::Full]
        } else {
            &a.modes
        };
        for &mode in modes {
            let configs: &[RunConfig] = if backend == "bellperson" {
                &a.configs[..1]
            } else {
                &a.configs
            };
            for config in configs {
                // One prover per backend, path and engine settings, as a
                // sealing worker or the daemon holds it: run 0 readies the
                // devices (key upload, shape, buffers), later runs find
                // them ready.
                let runs = match backend.as_str() {
                    "bellperson" => (0..a.runs.max(1))
                        .map(|_| with_sector_shape!(a.sector_size, bellperson_run, &sector))
                        .collect::<Result<Vec<_>, _>>()?,
                    b => engine_runs(&a, config, b, mode, &sector, preloaded.as_ref())?,
                };
                for (run, r) in runs.into_iter().enumerate() {
                    println!(
                        "{backend} {} {:?} run {run}: {}",
                        mode.name(),
                        config,
                        summary(&r)
                    );
                    results.push(json!({
                        "backend": backend,
                        "synthesis": mode.name(),
                        "config": config.json(),
                        "run": run,
                        "phases": r,
                    }));
                }
            }
        }
    }
    let _ = std::fs::remove_dir_all(&work);
    let report = json!({
        "bench": "filecoin-c2",
        "sector": registered.to_string(),
        "c1": if test_c1 { "test" } else { "sealed" },
        "test_parameters": true,
        "params_dir": dir.display().to_string(),
        "params_ready_s": params_s,
        "threads": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
        "results": results,
    });
    if let Some(path) = &a.json {
        std::fs::write(path, serde_json::to_vec_pretty(&report).unwrap_or_default())
            .map_err(|e| FilecoinError::Input(format!("writing {}: {e}", path.display())))?;
        println!("wrote {}", path.display());
    }
    Ok(())
}

fn summary(r: &Value) -> String {
    let mut parts = Vec::new();
    if let Value::Object(m) = r {
        for (k, v) in m {
            if let Some(x) = v.as_f64() {
                parts.push(format!("{k} {x:.3}"));
            } else if !v.is_array() {
                parts.push(format!("{k} {v}"));
            }
        }
    }
    parts.join("  ")
}

/// `a.runs` C2 jobs through one engine and prover.
fn engine_runs(
    a: &Args,
    config: &RunConfig,
    backend: &str,
    mode: SynthesisMode,
    sector: &SealedSector,
    preloaded: Option<&Preloaded>,
) -> Result<Vec<Value>, FilecoinError> {
    let choice = match backend {
        "cuda" => BackendChoice::Cuda,
        "host" => BackendChoice::Host,
        o => return Err(FilecoinError::Input(format!("unknown backend {o}"))),
    };
    let devices = match &a.gpu_devices {
        Some(l) if backend == "cuda" => {
            DeviceSelection::parse_list(l).map_err(FilecoinError::Input)?
        }
        _ => DeviceSelection::All,
    };
    let t = Instant::now();
    let ctx = Arc::new(open_context(choice, a.host_devices, &devices)?);
    let engine = Engine::new(
        ctx,
        EngineConfig {
            devices,
            policy: Policy::RoundRobin,
            synthesis_threads: config.synthesis_threads,
            prepare_ahead: config.prepare_ahead,
            workers_per_device: config.workers_per_device,
            device_memory_limit: config.device_memory_limit.map(|mib| mib << 20),
            ..Default::default()
        },
    )?;
    let context_s = t.elapsed().as_secs_f64();
    // The first load of the TEST parameters' key checks every point (and
    // records the digest); later loads check the digest only.
    let mut prover = FilecoinProver::new(engine)
        .with_blinding(BlindingSource::Random)
        .with_synthesis(mode)
        .with_native_witness(config.native_witness);
    if let Some(p) = preloaded {
        prover = prover.with_key(&p.params, p.key.clone(), Some(p.shape.clone()))?;
    }
    (0..a.runs.max(1))
        .map(|run| engine_job(&prover, sector, if run == 0 { context_s } else { 0.0 }))
        .collect()
}

/// One C2 job; `context_s` is the context's opening time (run 0 only).
fn engine_job(
    prover: &FilecoinProver,
    sector: &SealedSector,
    context_s: f64,
) -> Result<Value, FilecoinError> {
    let t = Instant::now();
    let (_, out) = c2_from_bytes(
        prover,
        &sector.c1_json,
        &Expected::default(),
        sector.prover_id,
        sector.sector_id,
    )?;
    let total = t.elapsed().as_secs_f64();
    let tm = &out.times;
    let per: Vec<Value> = tm
        .report
        .per_partition
        .iter()
        .map(|p| {
            json!({"partition": p.partition, "device": p.device,
                   "synthesis_s": p.synthesis_ms.map(|x| x / 1e3),
                   "witness_s": p.witness_ms.map(|x| x / 1e3),
                   "evaluation_s": p.evaluation_ms / 1e3, "host_bytes": p.host_bytes,
                   "device_s": p.device_ms / 1e3, "epilogue_s": p.epilogue_ms / 1e3,
                   "queue_wait_s": p.queue_wait_ms / 1e3, "ntt_s": p.ntt_ms / 1e3,
                   "msm_h_s": p.msm_h_ms / 1e3, "msm_l_s": p.msm_l_ms / 1e3,
                   "msm_a_s": p.msm_a_ms / 1e3, "msm_b_g1_s": p.msm_b_g1_ms / 1e3,
                   "msm_b_g2_s": p.msm_b_g2_ms / 1e3, "upload_s": p.upload_ms / 1e3,
                   "stream_chunks": p.stream_chunks, "stream_shared": p.stream_shared,
                   "phased": p.phased, "peak_device_mib": p.peak_device_bytes >> 20})
        })
        .collect();
    let sum = |f: fn(&cuda_prover_groth16::report::PartitionReport) -> f64| {
        tm.report.per_partition.iter().map(f).sum::<f64>() / 1e3
    };
    let peak_device = tm
        .report
        .per_device
        .iter()
        .map(|d| d.peak_device_bytes)
        .max()
        .unwrap_or(0);
    Ok(json!({
        "sector_size": sector.registered.size.to_string(),
        "end_to_end_s": total,
        "verified": tm.report.verified,
        "peak_host_rss_mib": peak_rss_mib(),
        "peak_device_mib": peak_device as f64 / (1u64 << 20) as f64,
        "context_s": context_s,
        "key_load_s": tm.key_load.as_secs_f64(),
        "checks_s": tm.checks.as_secs_f64(),
        "circuits_s": tm.circuits.as_secs_f64(),
        "synthesis_s": sum(|p| p.synthesis_ms.unwrap_or(0.0)),
        "witness_s": sum(|p| p.witness_ms.unwrap_or(0.0)),
        "evaluation_s": sum(|p| p.evaluation_ms),
        "device_s": sum(|p| p.device_ms),
        "device_busy_s": tm.report.per_device.iter().map(|d| d.busy_s).sum::<f64>(),
        "epilogue_s": sum(|p| p.epilogue_ms),
        "engine_job_s": tm.report.wall_s,
        "verify_s": tm.verify.as_secs_f64(),
        "total_s": total,
        "backend_name": tm.report.backend,
        "devices_ready_s": tm.report.per_device.iter().map(|d| d.ready_ms / 1e3).collect::<Vec<_>>(),
        "partitions": per,
    }))
}

/// The process's peak resident set so far (`VmHWM`), in MiB; 0 where
/// /proc is not there.
fn peak_rss_mib() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
        })
        .map_or(0.0, |kib| kib / 1024.0)
}

/// bellperson 0.27's own CPU prover on the same circuits and params file.
fn bellperson_run<Tree: 'static + MerkleTreeTrait>(
    sector: &SealedSector,
) -> Result<Value, FilecoinError> {
    let config = sector.registered.porep_config()?;
    let t_total = Instant::now();
    let c1 = C1File::parse(&sector.c1_json)?.output::<Tree>()?;
    let t = Instant::now();
    let prepared = prepare_c2::<Tree>(
        &config,
        c1,
        sector.prover_id,
        SectorId::from(sector.sector_id),
    )?;
    let prepare_s = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let params: MappedParameters<Bls12> =
        Parameters::build_mapped_parameters(prepared.params.clone(), false).map_err(|e| {
            FilecoinError::Parameters {
                path: prepared.params.clone(),
                message: e.to_string(),
            }
        })?;
    let key_load_s = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let proofs = create_random_proof_batch(prepared.circuits, &params, &mut rand::rngs::OsRng)
        .map_err(|e| FilecoinError::Proofs(format!("bellperson: {e}")))?;
    let prove_s = t.elapsed().as_secs_f64();
    let mut bytes = Vec::new();
    for p in &proofs {
        p.write(&mut bytes)
            .map_err(|e| FilecoinError::Proofs(e.to_string()))?;
    }
    let t = Instant::now();
    let ok = verify_commit(sector, &bytes)?;
    if !ok {
        return Err(FilecoinError::Rejected("bellperson seal commit"));
    }
    Ok(json!({
        "checks_and_circuits_s": prepare_s,
        "key_load_s": key_load_s,
        "synthesis_and_prove_s": prove_s,
        "verify_s": t.elapsed().as_secs_f64(),
        "total_s": t_total.elapsed().as_secs_f64(),
    }))
}
