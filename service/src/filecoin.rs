//! Filecoin jobs of the daemon (feature `filecoin`): commit phase 2 of a
//! C1 output, Winning and Window PoSt (whole or one partition) and
//! SnapDeals from vanilla proofs, proved on the daemon's engine at the
//! job's priority through `cuda-prover-filecoin`, and returned only after
//! filecoin-proofs' verifier (`verify_seal`, the PoSt verifiers,
//! `verify_empty_sector_update_proof`) accepted the proof.
//!
//! Parameters come from the daemon's configuration only: filecoin-proofs'
//! parameter cache of the daemon process (`FIL_PROOFS_PARAMETER_CACHE`), or
//! the TEST parameter directory the daemon was started with. A request
//! carries data (the C1 output, ids), never a path.

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use cuda_prover_engine::gate::Priority;
use cuda_prover_engine::Engine;
use cuda_prover_filecoin::c1::{C1File, Expected};
use cuda_prover_filecoin::c2::{c2_from_bytes, parse_prover_id, porep_params_path};
use cuda_prover_filecoin::test_params::{parameter_files, use_test_parameter_dir, TestCircuit};
use cuda_prover_filecoin::vanilla::{
    check_post_vanilla, check_snap_vanilla, prove_post_bytes, prove_snap_bytes, PostJob,
};
use cuda_prover_filecoin::{
    FilecoinError, FilecoinProver, JobTimes, RegisteredSeal, SealVersion, SectorSize,
};
use cuda_prover_groth16::KeyStore;
use cuda_prover_pipeline::KeyCheck;

use crate::proto;

/// A C2 request, checked: the C1 output parses, and what it says about the
/// sector agrees with the request.
#[derive(Debug)]
pub struct C2Spec {
    pub c1_output: Vec<u8>,
    pub prover_id: [u8; 32],
    pub sector_id: u64,
    pub expected: Expected,
    pub registered: RegisteredSeal,
    /// The proof's partitions (the job's progress total).
    pub partitions: u32,
}

impl C2Spec {
    /// Checks a request; the error is for the client (INVALID_ARGUMENT).
    pub fn check(j: proto::FilecoinC2Job) -> Result<Self, String> {
        let prover_id = parse_prover_id(&j.prover_id).map_err(|e| e.to_string())?;
        let size = (j.sector_size != 0)
            .then(|| SectorSize::new(j.sector_size))
            .transpose()
            .map_err(|e| e.to_string())?;
        let registered = (!j.registered_proof.is_empty())
            .then(|| j.registered_proof.parse::<RegisteredSeal>())
            .transpose()
            .map_err(|e| e.to_string())?;
        let expected = Expected {
            size,
            registered,
            sector_id: Some(j.sector_id),
        };
        let file = C1File::parse(&j.c1_output).map_err(|e| format!("C1 output: {e}"))?;
        let resolved = file
            .resolve(&expected)
            .map_err(|e| format!("C1 output: {e}"))?;
        let config = resolved.porep_config().map_err(|e| e.to_string())?;
        Ok(Self {
            c1_output: j.c1_output,
            prover_id,
            sector_id: j.sector_id,
            expected: Expected {
                sector_id: None,
                ..expected
            },
            registered: resolved,
            partitions: usize::from(config.partitions) as u32,
        })
    }

    pub fn name(&self) -> String {
        format!("c2-{}-sector-{}", self.registered, self.sector_id)
    }
}

/// The most vanilla proofs one PoSt or SnapDeals request carries (a 32 GiB
/// window PoSt partition has 2,349 sectors).
pub const MAX_VANILLA_PROOFS: usize = 4096;

fn bytes32(b: &[u8], what: &str) -> Result<[u8; 32], String> {
    b.try_into()
        .map_err(|_| format!("{what} must be 32 bytes, not {}", b.len()))
}

fn vanilla_count(n: usize) -> Result<(), String> {
    if n == 0 {
        return Err("vanilla_proofs is empty".into());
    }
    if n > MAX_VANILLA_PROOFS {
        return Err(format!(
            "{n} vanilla proofs (at most {MAX_VANILLA_PROOFS} in one request)"
        ));
    }
    Ok(())
}

/// A PoSt request, checked: the vanilla proofs decode for the sector size
/// and their count and shape fit the PoSt kind.
#[derive(Debug)]
pub struct PostSpec {
    pub job: PostJob,
    pub size: SectorSize,
    pub randomness: [u8; 32],
    pub prover_id: [u8; 32],
    pub vanilla: Vec<Vec<u8>>,
}

impl PostSpec {
    /// Checks a request; the error is for the client (INVALID_ARGUMENT).
    pub fn check(j: proto::FilecoinPostJob) -> Result<Self, String> {
        let job = match j.kind.as_str() {
            "winning" => PostJob::Winning,
            "window" => PostJob::Window,
            "window-partition" => PostJob::WindowPartition(j.partition_index as usize),
            other => {
                return Err(format!(
                    "kind '{}': winning, window or window-partition",
                    crate::server::shown_id(other)
                ))
            }
        };
        if j.partition_index != 0 && !matches!(job, PostJob::WindowPartition(_)) {
            return Err("partition_index is for kind window-partition only".into());
        }
        let size = SectorSize::new(j.sector_size).map_err(|e| e.to_string())?;
        let randomness = bytes32(&j.randomness, "randomness")?;
        // filecoin-proofs takes the randomness as a field element.
        if randomness[31] & 0xc0 != 0 {
            return Err("randomness is not a field element (its top two bits must be 0)".into());
        }
        let prover_id = parse_prover_id(&j.prover_id).map_err(|e| e.to_string())?;
        vanilla_count(j.vanilla_proofs.len())?;
        check_post_vanilla(size, job, &j.vanilla_proofs)
            .map_err(|e| format!("vanilla_proofs: {e}"))?;
        Ok(Self {
            job,
            size,
            randomness,
            prover_id,
            vanilla: j.vanilla_proofs,
        })
    }

    pub fn name(&self) -> String {
        match self.job {
            PostJob::Winning => format!("winning-post-{}", self.size),
            PostJob::Window => format!("window-post-{}", self.size),
            PostJob::WindowPartition(k) => format!("window-post-{}-partition-{k}", self.size),
        }
    }
}

/// A SnapDeals request, checked: the vanilla proofs decode for the sector
/// size, one per update partition, and the commitments are 32 bytes.
#[derive(Debug)]
pub struct SnapSpec {
    pub size: SectorSize,
    pub vanilla: Vec<Vec<u8>>,
    /// comm_r_old, comm_r_new, comm_d_new.
    pub comms: [[u8; 32]; 3],
}

impl SnapSpec {
    /// Checks a request; the error is for the client (INVALID_ARGUMENT).
    pub fn check(j: proto::FilecoinSnapJob) -> Result<Self, String> {
        let size = SectorSize::new(j.sector_size).map_err(|e| e.to_string())?;
        let comms = [
            bytes32(&j.comm_r_old, "comm_r_old")?,
            bytes32(&j.comm_r_new, "comm_r_new")?,
            bytes32(&j.comm_d_new, "comm_d_new")?,
        ];
        vanilla_count(j.vanilla_proofs.len())?;
        check_snap_vanilla(size, &j.vanilla_proofs).map_err(|e| format!("vanilla_proofs: {e}"))?;
        Ok(Self {
            size,
            vanilla: j.vanilla_proofs,
            comms,
        })
    }

    pub fn name(&self) -> String {
        format!("snapdeals-{}", self.size)
    }

    /// The update's partitions (the job's progress total).
    pub fn partitions(&self) -> u32 {
        self.vanilla.len() as u32
    }
}

/// A Filecoin proving key, by the proofs made with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FilecoinKey {
    /// C2 of a seal proof.
    Porep(RegisteredSeal),
    /// WinningPoSt of a sector size.
    WinningPost(SectorSize),
    /// WindowPoSt of a sector size (whole, or one partition).
    WindowPost(SectorSize),
    /// SnapDeals of a sector size.
    SnapDeals(SectorSize),
}

impl FilecoinKey {
    /// The key's id as cuzk.v1's PreloadSRS / EvictSRS take it:
    /// `<kind>-<size>` (`porep-32g`, `winning-2k`, `wpost-2k`, `snap-2k`,
    /// also what `serve --preload` reads), or for the C2 key of a seal
    /// proof other than V1_1 the proof's name (`StackedDrg32GiBV1`).
    pub fn circuit_id(&self) -> String {
        use crate::cuzk::convert::{circuit_id, KeyKind};
        match self {
            FilecoinKey::Porep(r) if r.version == SealVersion::V1_1 => {
                circuit_id(KeyKind::Porep, r.size.bytes())
            }
            FilecoinKey::Porep(r) => r.to_string(),
            FilecoinKey::WinningPost(s) => circuit_id(KeyKind::WinningPost, s.bytes()),
            FilecoinKey::WindowPost(s) => circuit_id(KeyKind::WindowPost, s.bytes()),
            FilecoinKey::SnapDeals(s) => circuit_id(KeyKind::SnapDeals, s.bytes()),
        }
    }
}

impl std::fmt::Display for FilecoinKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FilecoinKey::Porep(r) => write!(f, "the C2 key of {r}"),
            FilecoinKey::WinningPost(s) => write!(f, "the {s} WinningPoSt key"),
            FilecoinKey::WindowPost(s) => write!(f, "the {s} WindowPoSt key"),
            FilecoinKey::SnapDeals(s) => write!(f, "the {s} SnapDeals key"),
        }
    }
}

/// The daemon's Filecoin prover: its keys (with their shapes) in the
/// daemon's key store, shared by all its Filecoin jobs.
pub struct FilecoinJobs {
    base: FilecoinProver,
    test_params: Option<PathBuf>,
    /// The params file of every key named so far (by a preload, an evict
    /// or a job), so that a loaded params file is listed by its key.
    paths: parking_lot::Mutex<Vec<(FilecoinKey, PathBuf)>>,
}

impl FilecoinJobs {
    /// `test_params`: prove with the TEST parameters of this directory
    /// (seeded, made by `cuda-prover-filecoin test-params`; never the
    /// network's) instead of filecoin-proofs' parameter cache.
    /// Its keys go into `keys`, the daemon's store: counted against the
    /// daemon's key budget with the built-in circuits' keys.
    pub fn new(
        engine: &Engine,
        test_params: Option<&Path>,
        keys: Arc<KeyStore>,
    ) -> Result<Self, String> {
        let ordinals: Vec<u32> = engine.devices().iter().map(|d| d.ordinal).collect();
        let shared = engine.subset(&ordinals).map_err(|e| e.to_string())?;
        let mut base = FilecoinProver::new(shared).with_key_store(keys);
        let test_params = match test_params {
            Some(dir) => {
                let dir = use_test_parameter_dir(dir).map_err(|e| e.to_string())?;
                // TEST parameters are made by this project's own code from a
                // seed; the network's keys get the full subgroup check.
                base = base.with_key_check(KeyCheck::TrustedUnchecked);
                Some(dir)
            }
            None => None,
        };
        Ok(Self {
            base,
            test_params,
            paths: Default::default(),
        })
    }

    /// The TEST parameter directory, when the daemon uses one.
    pub fn test_params(&self) -> Option<&Path> {
        self.test_params.as_deref()
    }

    /// The params file of a seal proof's key (in the TEST directory when
    /// the daemon uses one).
    pub fn porep_params(&self, registered: RegisteredSeal) -> Result<PathBuf, FilecoinError> {
        porep_params_path(registered)
    }

    /// The params file a key's jobs prove with (in the TEST directory when
    /// the daemon uses one): loading it here loads the key those jobs
    /// use, not a second copy.
    pub fn params_of(&self, key: FilecoinKey) -> Result<PathBuf, FilecoinError> {
        if let Some((_, p)) = self.paths.lock().iter().find(|(k, _)| *k == key) {
            return Ok(p.clone());
        }
        // `parameter_files` names the files by the configs the provers use
        // (`post_config` of the kind, the update circuit's public params),
        // in the parameter directory of this process.
        let path = match key {
            FilecoinKey::Porep(registered) => self.porep_params(registered)?,
            FilecoinKey::WinningPost(size) => {
                parameter_files(TestCircuit::WinningPost(size))?.params
            }
            FilecoinKey::WindowPost(size) => parameter_files(TestCircuit::WindowPost(size))?.params,
            FilecoinKey::SnapDeals(size) => parameter_files(TestCircuit::SnapDeals(size))?.params,
        };
        let mut paths = self.paths.lock();
        if !paths.iter().any(|(k, _)| *k == key) {
            paths.push((key, path.clone()));
        }
        Ok(path)
    }

    /// Notes the params file of the key a job is about to load.
    fn job_key(&self, key: FilecoinKey) {
        if let Err(e) = self.params_of(key) {
            log::debug!("{key}: no params file name ({e})");
        }
    }

    /// Loads the key of `params` and pins it in the daemon's store; the
    /// time the load took (zero when it was loaded already).
    pub fn preload(&self, params: &Path) -> Result<std::time::Duration, FilecoinError> {
        self.base.preload_key(params)
    }

    /// Drops the key of `params`; whether it was loaded.
    pub fn evict(&self, params: &Path) -> bool {
        self.base.evict_key(params)
    }

    /// The params files whose keys are loaded.
    pub fn loaded_keys(&self) -> Vec<PathBuf> {
        self.base.loaded_keys()
    }

    /// The loaded keys: each one's circuit id ([`FilecoinKey::circuit_id`];
    /// of a params file no key was named for, the file itself, which
    /// EvictSRS also takes) and params file.
    pub fn loaded_key_ids(&self) -> Vec<(String, PathBuf)> {
        let paths = self.paths.lock().clone();
        self.loaded_keys()
            .into_iter()
            .map(|p| {
                // A file two keys share is listed by its cuzk form.
                let id = paths
                    .iter()
                    .filter(|(_, q)| *q == p)
                    .map(|(k, _)| k.circuit_id())
                    .min_by_key(|id| id.starts_with("StackedDrg"))
                    .unwrap_or_else(|| p.display().to_string());
                (id, p)
            })
            .collect()
    }

    /// C2 on `engine` at `priority`: the proof bytes, already accepted by
    /// filecoin-proofs' `verify_seal`, and where the time went (the
    /// engine's job report in it).
    pub fn run_c2(
        &self,
        engine: Engine,
        spec: &C2Spec,
        priority: Priority,
        cancel: Arc<AtomicBool>,
    ) -> Result<(Vec<u8>, JobTimes), FilecoinError> {
        self.job_key(FilecoinKey::Porep(spec.registered));
        let prover = self.base.for_job(engine, priority, cancel);
        let expected = Expected {
            registered: Some(spec.registered),
            ..spec.expected
        };
        let (_, out) = c2_from_bytes(
            &prover,
            &spec.c1_output,
            &expected,
            spec.prover_id,
            spec.sector_id,
        )?;
        Ok((out.output.proof, out.times))
    }

    /// PoSt on `engine` at `priority`: the proof bytes, already accepted by
    /// filecoin-proofs' verifier, and where the time went.
    pub fn run_post(
        &self,
        engine: Engine,
        spec: &PostSpec,
        priority: Priority,
        cancel: Arc<AtomicBool>,
    ) -> Result<(Vec<u8>, JobTimes), FilecoinError> {
        self.job_key(match spec.job {
            PostJob::Winning => FilecoinKey::WinningPost(spec.size),
            PostJob::Window | PostJob::WindowPartition(_) => FilecoinKey::WindowPost(spec.size),
        });
        let prover = self.base.for_job(engine, priority, cancel);
        let out = prove_post_bytes(
            &prover,
            spec.size,
            spec.job,
            spec.randomness,
            spec.prover_id,
            &spec.vanilla,
        )?;
        Ok((out.proof, out.times))
    }

    /// SnapDeals on `engine` at `priority`: the proof bytes, already
    /// accepted by filecoin-proofs' verifier, and where the time went.
    pub fn run_snap(
        &self,
        engine: Engine,
        spec: &SnapSpec,
        priority: Priority,
        cancel: Arc<AtomicBool>,
    ) -> Result<(Vec<u8>, JobTimes), FilecoinError> {
        self.job_key(FilecoinKey::SnapDeals(spec.size));
        let prover = self.base.for_job(engine, priority, cancel);
        let out = prove_snap_bytes(&prover, spec.size, &spec.vanilla, spec.comms)?;
        Ok((out.proof, out.times))
    }
}
