//! Keys of the daemon: loaded (or generated) from the configured params
//! dirs only, kept resident by the engine's LRU residency under a byte
//! budget, pinned by preload.

use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use cuda_prover_engine::params::load_key_and_shape_in;
use cuda_prover_engine::params_dir::ParamsDir;
use cuda_prover_engine::{Engine, EngineError, Residency, Resident};
use cuda_prover_pipeline::circuits::{BuiltIn, Kind};
use cuda_prover_pipeline::{ProvingKey, Shape};
use parking_lot::Mutex;

/// A key with its circuit's shape.
pub struct LoadedKey {
    pub key: ProvingKey,
    pub shape: Arc<Shape>,
}

pub struct Keys {
    /// Canonical forms of the configured dirs.
    dirs: Vec<PathBuf>,
    /// The configured dirs, held open since the start: keys are read and
    /// written through these handles only ([`Keys::open_dir`]).
    handles: Vec<ParamsDir>,
    resident: Mutex<Residency<LoadedKey>>,
    /// One load at a time: two jobs of one new key load it once.
    loading: Mutex<()>,
}

impl Keys {
    /// Creates the params dirs that are missing.
    pub fn new(dirs: &[PathBuf], budget: u64) -> Result<Self, String> {
        if dirs.is_empty() {
            return Err("at least one params dir is needed".into());
        }
        let dirs = dirs
            .iter()
            .map(|d| {
                std::fs::create_dir_all(d)
                    .and_then(|_| d.canonicalize())
                    .map_err(|e| format!("params dir {}: {e}", d.display()))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let handles = dirs
            .iter()
            .map(|d| ParamsDir::open(d).map_err(|e| e.to_string()))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self {
            dirs,
            handles,
            resident: Mutex::new(Residency::new(budget)),
            loading: Mutex::new(()),
        })
    }

    /// The directory a request names: empty is the first params dir; a
    /// relative path is under the first; any path must resolve (links
    /// followed) inside one of the params dirs.
    pub fn resolve_dir(&self, requested: &str) -> Result<PathBuf, String> {
        if requested.is_empty() {
            return Ok(self.dirs[0].clone());
        }
        let p = Path::new(requested);
        if p.components().any(|c| c == Component::ParentDir) {
            return Err(format!(
                "params dir {requested}: '..' is not allowed; name a directory inside the params dirs {:?}",
                self.dirs
            ));
        }
        let joined = if p.is_absolute() {
            p.to_path_buf()
        } else {
            self.dirs[0].join(p)
        };
        let canon = joined.canonicalize().map_err(|e| {
            format!("params dir {requested}: {e} (it must exist inside the params dirs)")
        })?;
        if self.dirs.iter().any(|d| canon.starts_with(d)) {
            if !canon.is_dir() {
                return Err(format!(
                    "params dir {requested} is not a directory (keys are files inside one)"
                ));
            }
            Ok(canon)
        } else {
            Err(format!(
                "params dir {requested} is outside the configured params dirs {:?}",
                self.dirs
            ))
        }
    }

    /// The directory `dir` (a path [`Keys::resolve_dir`] returned) at the
    /// time of use: reached from the configured dir's handle one component
    /// at a time, no link followed, so a directory swapped for a link after
    /// the request was checked is refused, not followed outside.
    pub fn open_dir(&self, dir: &Path) -> Result<ParamsDir, EngineError> {
        let (root, handle) = self
            .dirs
            .iter()
            .zip(&self.handles)
            .filter(|(d, _)| dir.starts_with(d))
            .max_by_key(|(d, _)| d.as_os_str().len())
            .ok_or_else(|| {
                EngineError::Params(format!(
                    "params dir {} is outside the configured params dirs {:?}",
                    dir.display(),
                    self.dirs
                ))
            })?;
        let rel = dir.strip_prefix(root).unwrap_or(Path::new(""));
        handle.beneath(rel)
    }

    pub fn name(kind: Kind, log_constraints: u32, dir: &Path) -> String {
        format!("{}-2^{}@{}", kind.name(), log_constraints, dir.display())
    }

    /// The key of a built-in circuit, resident (loaded, or generated and
    /// saved, on first use). Returns the keys evicted to make room.
    pub fn get(
        &self,
        engine: &Engine,
        kind: Kind,
        log_constraints: u32,
        dir: &Path,
        pin: bool,
    ) -> Result<(Arc<LoadedKey>, Vec<String>), EngineError> {
        let name = Self::name(kind, log_constraints, dir);
        if !pin {
            if let Some(k) = self.resident.lock().get(&name) {
                return Ok((k, Vec::new()));
            }
        }
        let _one = self.loading.lock();
        let found = self.resident.lock().get(&name);
        let key = match found {
            Some(k) => k,
            None => {
                let c = BuiltIn::new(kind, log_constraints, 0).map_err(EngineError::Setup)?;
                let say = |s: &str| log::info!("{s}");
                let (key, shape) = load_key_and_shape_in(&self.open_dir(dir)?, &c, &say)?;
                Arc::new(LoadedKey { key, shape })
            }
        };
        let bytes = key_bytes(engine, &key)?;
        let evicted = self
            .resident
            .lock()
            .insert(&name, key.clone(), bytes, pin)
            .map_err(EngineError::Setup)?;
        for e in &evicted {
            log::info!("evicted key {e} to make room for {name}");
        }
        Ok((key, evicted))
    }

    /// Unpins and drops a key; false when it was not resident.
    pub fn evict(&self, name: &str) -> bool {
        self.resident.lock().evict(name)
    }

    pub fn list(&self) -> Vec<Resident> {
        self.resident.lock().list()
    }

    /// (used, budget, evictions)
    pub fn usage(&self) -> (u64, u64, u64) {
        let r = self.resident.lock();
        (r.used(), r.budget(), r.evictions())
    }
}

/// Device bytes of a key and its shape, by the first device's backend.
pub fn key_bytes(engine: &Engine, k: &LoadedKey) -> Result<u64, EngineError> {
    let setup = EngineError::Prepare;
    let n = k.key.domain_size().map_err(setup)?;
    let ordinal = engine.devices().first().map(|d| d.ordinal).unwrap_or(0);
    let est = k
        .key
        .device_memory_estimate(engine.context(), ordinal, n)
        .map_err(setup)?;
    Ok(est.srs_bytes.saturating_add(k.shape.info().device_bytes))
}
