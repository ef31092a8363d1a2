//! The one place where Filecoin circuits become engine jobs.
//!
//! Every Groth16 proof of this crate goes through [`FilecoinProver::prove`]:
//! the circuits of one Filecoin proof (the partitions of a PoRep commit, the
//! partitions of a PoSt) are one `Job`, run by `cuda_prover_engine::Engine::run`,
//! so they spread over the engine's devices with its ownership policy, and
//! come back in partition order, each checked against the key. Proving keys
//! are loaded once per params file and kept, and so are the circuits'
//! shapes: a shape file `<params>.shape` next to the params (or recorded
//! from the first partition's full synthesis of a job and then saved there)
//! lets every later partition take the witness path: witness-only synthesis,
//! a, b, c evaluated and checked by the core. On that path a PoRep
//! partition synthesizes its challenges on every core (see
//! [`FilecoinProver::with_parallel_witness`]).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bellpepper_core::Circuit;
use bellperson::groth16::Proof;
use blstrs::{Bls12, Scalar};
use cuda_prover_engine::gate::Priority;
use cuda_prover_engine::{BlindingSource, Engine, Job, JobReport, RunControl};
use cuda_prover_pipeline::{shape_file, KeyCheck, ProvingKey, Shape, SynthesisMode};

use crate::error::{FilecoinError, Result};

/// Proofs of one job in partition order, with the engine's report.
pub struct Proved {
    pub proofs: Vec<Proof<Bls12>>,
    pub report: JobReport,
    /// Time to load the proving key (zero when it was already loaded).
    pub key_load: Duration,
}

/// An engine plus the proving keys it has loaded.
pub struct FilecoinProver {
    engine: Engine,
    blinding: BlindingSource,
    synthesis: SynthesisMode,
    parallel_witness: bool,
    key_check: KeyCheck,
    keys: Arc<Mutex<HashMap<PathBuf, Arc<ProvingKey>>>>,
    shapes: Arc<Mutex<HashMap<PathBuf, Arc<Shape>>>>,
    /// Set by [`FilecoinProver::for_job`]: the job's priority on the
    /// engine's gate and its cancel flag.
    priority: Option<Priority>,
    cancel: Option<Arc<AtomicBool>>,
}

/// The shape file kept next to a params file.
pub fn shape_path(params: &Path) -> PathBuf {
    let mut s = params.as_os_str().to_owned();
    s.push(".shape");
    PathBuf::from(s)
}

impl FilecoinProver {
    /// Proves with fresh random blinding factors.
    pub fn new(engine: Engine) -> Self {
        Self {
            engine,
            blinding: BlindingSource::Random,
            synthesis: SynthesisMode::Auto,
            parallel_witness: true,
            key_check: KeyCheck::Full,
            keys: Arc::new(Mutex::new(HashMap::new())),
            shapes: Arc::new(Mutex::new(HashMap::new())),
            priority: None,
            cancel: None,
        }
    }

    /// A prover for one job of a long-lived process (the proving daemon):
    /// it proves on `engine` (for example a subset of this prover's engine,
    /// sharing its device mutexes and priority gate), waits its turn at
    /// `priority` on the gate, stops when `cancel` is set, and shares this
    /// prover's loaded keys and shapes and its settings.
    pub fn for_job(&self, engine: Engine, priority: Priority, cancel: Arc<AtomicBool>) -> Self {
        Self {
            engine,
            blinding: self.blinding,
            synthesis: self.synthesis,
            parallel_witness: self.parallel_witness,
            key_check: self.key_check,
            keys: self.keys.clone(),
            shapes: self.shapes.clone(),
            priority: Some(priority),
            cancel: Some(cancel),
        }
    }

    /// How proving keys are checked when loaded (default: every point's
    /// subgroup, paid once per file through its verified digest).
    /// `TrustedUnchecked` is for TEST parameters this process's own code
    /// generated from a seed (tests, benches, the demo), never for
    /// parameters that came from elsewhere.
    pub fn with_key_check(mut self, check: KeyCheck) -> Self {
        self.key_check = check;
        self
    }

    /// Full synthesis or the witness path (default: auto, the witness path
    /// once the circuit's shape is known).
    pub fn with_synthesis(mut self, mode: SynthesisMode) -> Self {
        self.synthesis = mode;
        self
    }

    /// Whether a PoRep partition's witness-only synthesis runs its
    /// challenges on every core (default: yes; the witness is the same).
    /// Off, each partition's witness is one sequential synthesis.
    pub fn with_parallel_witness(mut self, parallel: bool) -> Self {
        self.parallel_witness = parallel;
        self
    }

    /// Proves the jobs of `params` with `key` (and `shape`, checked
    /// against it) held in memory instead of loading the file: a key made
    /// in this process, for instance a TEST key computed on the GPU that
    /// need not pass through a 50 GB file.
    pub fn with_key(
        self,
        params: &Path,
        key: Arc<ProvingKey>,
        shape: Option<Arc<Shape>>,
    ) -> Result<Self> {
        if let Some(s) = &shape {
            key.check_shape(s).map_err(|e| FilecoinError::Parameters {
                path: params.to_path_buf(),
                message: format!("the shape given with the key: {e}"),
            })?;
            self.shapes
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(params.to_path_buf(), s.clone());
        }
        self.keys
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(params.to_path_buf(), key);
        Ok(self)
    }

    pub fn parallel_witness(&self) -> bool {
        self.parallel_witness
    }

    /// The shape for the key of `params`: in memory, or from its shape file
    /// when that fits the key. A missing or unusable file is not an error
    /// (the job records the shape); why it was not used is logged.
    fn shape(&self, params: &Path, key: &ProvingKey) -> Option<Arc<Shape>> {
        let mut shapes = self.shapes.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(s) = shapes.get(params) {
            return Some(s.clone());
        }
        let path = shape_path(params);
        if !path.exists() {
            return None;
        }
        let loaded = shape_file::load(&path, key).and_then(|data| {
            let shape = Shape::new(&data)?;
            key.check_shape(&shape)?;
            Ok(shape)
        });
        match loaded {
            Ok(shape) => {
                let shape = Arc::new(shape);
                shapes.insert(params.to_path_buf(), shape.clone());
                Some(shape)
            }
            Err(e) => {
                log::warn!(
                    "not using {}: {e}; the job records the shape again",
                    path.display()
                );
                None
            }
        }
    }

    /// Reproducible blinding (partition k of every job uses the engine's
    /// generator seeded with (seed, k)): for tests and benchmarks that
    /// compare proof bytes. Never for production proofs.
    pub fn with_blinding(mut self, blinding: BlindingSource) -> Self {
        self.blinding = blinding;
        self
    }

    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// The proving key of a bellperson params file, loaded once.
    pub fn key(&self, path: &Path) -> Result<(Arc<ProvingKey>, Duration)> {
        let mut keys = self.keys.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(k) = keys.get(path) {
            return Ok((k.clone(), Duration::ZERO));
        }
        if !path.exists() {
            return Err(FilecoinError::Parameters {
                path: path.to_path_buf(),
                message:
                    "not found (FIL_PROOFS_PARAMETER_CACHE points at the parameter \
                          directory; for small test sectors run `cuda-prover-filecoin test-params`)"
                        .into(),
            });
        }
        let t = Instant::now();
        // The subgroup checks (when the load makes them) on the engine's
        // first GPU: seconds for a 47 GiB key instead of many minutes on
        // the host's cores.
        let gpu = self
            .engine
            .devices()
            .iter()
            .find(|d| !d.simulated)
            .map(|d| d.ordinal);
        let loaded = match gpu {
            Some(ordinal) => {
                ProvingKey::load_file_on(self.engine.context(), ordinal, path, self.key_check)
            }
            None => ProvingKey::load_file(path, self.key_check),
        };
        let key = loaded
            .map(|(k, _)| k)
            .map_err(|e| FilecoinError::Parameters {
                path: path.to_path_buf(),
                message: e.to_string(),
            })?;
        let key = Arc::new(key);
        keys.insert(path.to_path_buf(), key.clone());
        Ok((key, t.elapsed()))
    }

    /// The params files whose proving keys this prover (and every prover
    /// of its jobs) holds loaded.
    pub fn loaded_keys(&self) -> Vec<PathBuf> {
        let keys = self.keys.lock().unwrap_or_else(|p| p.into_inner());
        let mut v: Vec<PathBuf> = keys.keys().cloned().collect();
        v.sort();
        v
    }

    /// Drops the loaded key of `params` and its shape; whether the key was
    /// loaded. A job proving with it keeps it until that job ends.
    pub fn evict_key(&self, params: &Path) -> bool {
        self.shapes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(params);
        self.keys
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(params)
            .is_some()
    }

    /// Proves `circuits` (the partitions of one Filecoin proof, in partition
    /// order) with the key in `params`, as one engine job.
    pub fn prove<C>(&self, name: &str, circuits: Vec<C>, params: &Path) -> Result<Proved>
    where
        C: Circuit<Scalar> + Send,
    {
        let (key, key_load) = self.key(params)?;
        let total = circuits.len();
        let shape = match self.synthesis {
            SynthesisMode::Full => None,
            _ => self.shape(params, &key),
        };
        if shape.is_none() && self.synthesis == SynthesisMode::Witness {
            return Err(FilecoinError::Parameters {
                path: shape_path(params),
                message: "witness synthesis needs the circuit's shape next to the params; \
                          run once with --synthesis auto to record it"
                    .into(),
            });
        }
        let mut job = Job::new(name, circuits);
        job.blinding = self.blinding;
        job.synthesis = self.synthesis;
        job.shape = shape;
        let ticket = self.priority.map(|p| self.engine.gate().register(p, total));
        let control = RunControl {
            cancel: self.cancel.as_deref(),
            ticket: ticket.as_ref(),
        };
        let out = self.engine.run_with(job, &key, control, |p| {
            log::info!(
                "{name}: partition {} on device {} ({}/{total})",
                p.partition,
                p.device,
                p.done
            );
        })?;
        if let (Some(data), Some(shape)) = (&out.recorded_shape, &out.shape) {
            let path = shape_path(params);
            match shape_file::save(data, &key, &path) {
                Ok(()) => log::info!("recorded the circuit's shape -> {}", path.display()),
                Err(e) => log::warn!("recorded the circuit's shape but could not save it: {e}"),
            }
            self.shapes
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(params.to_path_buf(), shape.clone());
        }
        Ok(Proved {
            proofs: out.proofs.into_iter().map(|p| p.output.proof).collect(),
            report: out.report,
            key_load,
        })
    }
}
