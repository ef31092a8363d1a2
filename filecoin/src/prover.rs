//! The one place where Filecoin circuits become engine jobs.
//!
//! Every Groth16 proof of this crate goes through [`FilecoinProver::prove`]:
//! the circuits of one Filecoin proof (the partitions of a PoRep commit, the
//! partitions of a PoSt) are one `Job`, run by `cuda_prover_engine::Engine::run`,
//! so they spread over the engine's devices with its ownership policy, and
//! come back in partition order, each checked against the key. Proving keys
//! are loaded once per params file into the engine's `KeyStore` (the
//! prover's own, or the one its process shares), and so are the circuits'
//! shapes: a shape file `<params>.shape` next to the params (or recorded
//! from the first partition's full synthesis of a job and then saved there)
//! lets every later partition take the witness path: witness-only synthesis,
//! a, b, c evaluated and checked by the core. On that path a PoRep
//! partition synthesizes its challenges on every core (see
//! [`FilecoinProver::with_parallel_witness`]).

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use bellpepper_core::Circuit;
use bellperson::groth16::Proof;
use blstrs::{Bls12, Scalar};
use cuda_prover_engine::gate::Priority;
use cuda_prover_engine::{Engine, EngineError, RunControl};
use cuda_prover_groth16::key_store::shape_path;
use cuda_prover_groth16::Groth16Engine;
use cuda_prover_groth16::{BlindingSource, Job, JobReport, KeyStore, Loaded, StoredKey};
use cuda_prover_pipeline::{shape_file, KeyCheck, ProvingKey, Shape, SynthesisMode};

use crate::error::{FilecoinError, Result};

/// Proofs of one job in partition order, with the engine's report.
pub struct Proved {
    pub proofs: Vec<Proof<Bls12>>,
    pub report: JobReport,
    /// Time to load the proving key (zero when it was already loaded).
    pub key_load: Duration,
}

/// An engine plus the key store its keys are loaded into.
pub struct FilecoinProver {
    engine: Engine,
    blinding: BlindingSource,
    synthesis: SynthesisMode,
    parallel_witness: bool,
    native_witness: bool,
    key_check: KeyCheck,
    keys: Arc<KeyStore>,
    /// Set by [`FilecoinProver::for_job`]: the job's priority on the
    /// engine's gate and its cancel flag.
    priority: Option<Priority>,
    cancel: Option<Arc<AtomicBool>>,
}

/// A store error about the key of `path`: a load error names the file.
fn key_error(path: &Path, e: EngineError) -> FilecoinError {
    match e {
        EngineError::Params(message) => FilecoinError::Parameters {
            path: path.to_path_buf(),
            message,
        },
        e => FilecoinError::Engine(e),
    }
}

impl FilecoinProver {
    /// Proves with fresh random blinding factors, its keys in a store of
    /// its own that keeps every key it loads (a CLI run; a daemon hands
    /// its store in with [`FilecoinProver::with_key_store`]).
    pub fn new(engine: Engine) -> Self {
        Self {
            engine,
            blinding: BlindingSource::Random,
            synthesis: SynthesisMode::Auto,
            parallel_witness: true,
            native_witness: true,
            key_check: KeyCheck::Full,
            keys: Arc::new(KeyStore::unbounded()),
            priority: None,
            cancel: None,
        }
    }

    /// A prover for one job of a long-lived process (the proving daemon):
    /// it proves on `engine` (for example a subset of this prover's engine,
    /// sharing its device mutexes and priority gate), waits its turn at
    /// `priority` on the gate, stops when `cancel` is set, and shares this
    /// prover's key store and its settings.
    pub fn for_job(&self, engine: Engine, priority: Priority, cancel: Arc<AtomicBool>) -> Self {
        Self {
            engine,
            blinding: self.blinding,
            synthesis: self.synthesis,
            parallel_witness: self.parallel_witness,
            native_witness: self.native_witness,
            key_check: self.key_check,
            keys: self.keys.clone(),
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

    /// Whether that parallel witness makes a PoRep challenge's SHA-256
    /// parts from their values (default: yes; the witness is the same,
    /// several times faster) or through bellpepper's gadget.
    pub fn with_native_witness(mut self, native: bool) -> Self {
        self.native_witness = native;
        self
    }

    /// Loads keys into `keys` (shared with the rest of the process, so a
    /// key is loaded once and counted against its budget) instead of a
    /// store of its own.
    pub fn with_key_store(mut self, keys: Arc<KeyStore>) -> Self {
        self.keys = keys;
        self
    }

    /// The store this prover's keys are loaded into.
    pub fn key_store(&self) -> &Arc<KeyStore> {
        &self.keys
    }

    /// Proves the jobs of `params` with `key` (and `shape`, checked
    /// against it) held in memory instead of loading the file: a key made
    /// in this process, for instance a TEST key computed on the GPU that
    /// need not pass through a 50 GB file. The store keeps it pinned.
    pub fn with_key(
        self,
        params: &Path,
        key: Arc<ProvingKey>,
        shape: Option<Arc<Shape>>,
    ) -> Result<Self> {
        self.keys
            .insert_key(params, key, shape)
            .map_err(|e| key_error(params, e))?;
        Ok(self)
    }

    pub fn parallel_witness(&self) -> bool {
        self.parallel_witness
    }

    pub fn native_witness(&self) -> bool {
        self.native_witness
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

    /// The proving key of a bellperson params file, loaded once into the
    /// key store (with its shape, when the file beside it fits), and the
    /// time the load took (zero when it was loaded).
    pub fn key(&self, path: &Path) -> Result<(Arc<ProvingKey>, Duration)> {
        let loaded = self.stored_key(path, false)?;
        Ok((loaded.key.key().clone(), loaded.took))
    }

    /// [`FilecoinProver::key`], pinned in the store: never evicted to make
    /// room (until [`FilecoinProver::evict_key`]), and every device of the
    /// engine readied for it (the key and, for the witness path, its shape
    /// placed on the device), so that its first job starts proving at once
    /// instead of waiting for the upload (about 28 s for a 32 GiB PoRep key
    /// and shape on an H200). The time the load took.
    pub fn preload_key(&self, path: &Path) -> Result<Duration> {
        let loaded = self.stored_key(path, true)?;
        let ready = self
            .engine
            .ready_key(loaded.key.key(), self.job_shape(&loaded.key))?;
        log::info!(
            "{}: devices ready in {:.2} s",
            path.display(),
            ready.as_secs_f64()
        );
        Ok(loaded.took)
    }

    /// The shape this prover's jobs prove with from a stored key: none on
    /// the full path, else the one beside the key (when there is one).
    fn job_shape(&self, stored: &StoredKey) -> Option<Arc<Shape>> {
        match self.synthesis {
            SynthesisMode::Full => None,
            _ => stored.shape(),
        }
    }

    fn stored_key(&self, path: &Path, pin: bool) -> Result<Loaded> {
        if self.keys.get(&path.display().to_string()).is_none() && !path.exists() {
            return Err(FilecoinError::Parameters {
                path: path.to_path_buf(),
                message:
                    "not found (FIL_PROOFS_PARAMETER_CACHE points at the parameter \
                          directory; for small test sectors run `cuda-prover-filecoin test-params`)"
                        .into(),
            });
        }
        self.keys
            .load_key(&self.engine, path, self.key_check, pin)
            .map_err(|e| key_error(path, e))
    }

    /// The params files whose proving keys are resident in this prover's
    /// key store (built-in circuits' keys of a shared store left out).
    pub fn loaded_keys(&self) -> Vec<PathBuf> {
        self.keys.loaded_files()
    }

    /// Drops the key of `params` (and its shape) from the store, pinned or
    /// not; whether it was resident. A job proving with it keeps it until
    /// that job ends.
    pub fn evict_key(&self, params: &Path) -> bool {
        self.keys.evict(&params.display().to_string())
    }

    /// Proves `circuits` (the partitions of one Filecoin proof, in partition
    /// order) with the key in `params`, as one engine job.
    pub fn prove<C>(&self, name: &str, circuits: Vec<C>, params: &Path) -> Result<Proved>
    where
        C: Circuit<Scalar> + Send,
    {
        let loaded = self.stored_key(params, false)?;
        let (stored, key_load) = (loaded.key, loaded.took);
        let key = stored.key();
        let total = circuits.len();
        let shape = self.job_shape(&stored);
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
        let out = self.engine.run_with(job, key, control, |p| {
            log::info!(
                "{name}: partition {} on device {} ({}/{total})",
                p.item,
                p.device,
                p.done
            );
        })?;
        if let (Some(data), Some(shape)) = (&out.recorded_shape, &out.shape) {
            let path = shape_path(params);
            match shape_file::save(data, key, &path) {
                Ok(()) => log::info!("recorded the circuit's shape -> {}", path.display()),
                Err(e) => log::warn!("recorded the circuit's shape but could not save it: {e}"),
            }
            if let Err(e) = stored.set_shape(shape.clone()) {
                log::warn!("not keeping the recorded shape: {e}");
            }
        }
        Ok(Proved {
            proofs: out.proofs.into_iter().map(|p| p.output.proof).collect(),
            report: out.report,
            key_load,
        })
    }
}
