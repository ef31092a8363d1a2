//! The bench's flags, and the engine settings of `--configs`.

use std::path::PathBuf;

use cuda_prover_filecoin::test_params::KeygenChoice;
use cuda_prover_filecoin::{FilecoinError, SectorSize};
use cuda_prover_pipeline::SynthesisMode;
use serde_json::{json, Value};

pub struct Args {
    pub backends: Vec<String>,
    pub runs: usize,
    pub json: Option<PathBuf>,
    pub params_dir: Option<PathBuf>,
    pub gpu_devices: Option<String>,
    pub host_devices: u32,
    pub sector_size: SectorSize,
    /// `Some(true)`: a test C1; `Some(false)`: a sealed sector; `None`: by size.
    pub test_c1: Option<bool>,
    pub c1_seed: u64,
    pub keygen_device: KeygenChoice,
    /// The paths run on the core backends.
    pub modes: Vec<SynthesisMode>,
    /// The TEST key made on the GPU and kept in memory (no params file).
    pub key_in_memory: bool,
    /// The engine settings to run, each with every backend and path.
    pub configs: Vec<RunConfig>,
}

/// Engine settings of one set of runs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RunConfig {
    pub synthesis_threads: usize,
    pub prepare_ahead: usize,
    /// MiB.
    pub device_memory_limit: Option<u64>,
    /// The PoRep witness's SHA-256 parts made from their values.
    pub native_witness: bool,
    /// Engine workers a device (at least 1).
    pub workers_per_device: usize,
}

impl RunConfig {
    /// `ahead=N,threads=N,limit=SIZE|none,workers=N,witness=native|gadget`,
    /// each optional, over `base`.
    pub fn parse(s: &str, base: RunConfig) -> Result<Self, FilecoinError> {
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

    pub fn json(&self) -> Value {
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

pub fn parse() -> Result<Args, FilecoinError> {
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
