//! The one place where Filecoin circuits become engine jobs.
//!
//! Every Groth16 proof of this crate goes through [`FilecoinProver::prove`]:
//! the circuits of one Filecoin proof (the partitions of a PoRep commit, the
//! partitions of a PoSt) are one `Job`, run by `cuda_prover_engine::Engine::run`,
//! so they spread over the engine's devices with its ownership policy, and
//! come back in partition order, each checked against the key. Proving keys
//! are loaded once per params file and kept.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bellpepper_core::Circuit;
use bellperson::groth16::Proof;
use blstrs::{Bls12, Scalar};
use cuda_prover_engine::{BlindingSource, Engine, Job, JobReport};
use cuda_prover_pipeline::ProvingKey;

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
    keys: Mutex<HashMap<PathBuf, Arc<ProvingKey>>>,
}

impl FilecoinProver {
    /// Proves with fresh random blinding factors.
    pub fn new(engine: Engine) -> Self {
        Self {
            engine,
            blinding: BlindingSource::Random,
            keys: Mutex::new(HashMap::new()),
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
                message: "not found (FIL_PROOFS_PARAMETER_CACHE points at the parameter \
                          directory; for small test sectors run `cuda-prover-filecoin test-params`)"
                    .into(),
            });
        }
        let t = Instant::now();
        let key = ProvingKey::from_file(path).map_err(|e| FilecoinError::Parameters {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        let key = Arc::new(key);
        keys.insert(path.to_path_buf(), key.clone());
        Ok((key, t.elapsed()))
    }

    /// Proves `circuits` (the partitions of one Filecoin proof, in partition
    /// order) with the key in `params`, as one engine job.
    pub fn prove<C>(&self, name: &str, circuits: Vec<C>, params: &Path) -> Result<Proved>
    where
        C: Circuit<Scalar> + Send,
    {
        let (key, key_load) = self.key(params)?;
        let total = circuits.len();
        let job = Job {
            name: name.to_string(),
            partitions: circuits,
            blinding: self.blinding,
            trim_after: false,
        };
        let out = self.engine.run(job, &key, |p| {
            log::info!(
                "{name}: partition {} on device {} ({}/{total})",
                p.partition,
                p.device,
                p.done
            );
        })?;
        Ok(Proved {
            proofs: out.proofs.into_iter().map(|p| p.output.proof).collect(),
            report: out.report,
            key_load,
        })
    }
}
