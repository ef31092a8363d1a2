//! What the daemon adds to the engine's key store for built-in circuits'
//! keys: they are loaded (or generated) from the configured params dirs
//! only, reached through handles held since the start, and named by
//! circuit, size and dir. Residency (the byte budget, LRU eviction,
//! pinning by preload) is the store's, shared with the daemon's Filecoin
//! prover ([`Keys::store`]).

use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use cuda_prover_engine::{EngineError, Resident};
use cuda_prover_groth16::key_store::built_in_name;
use cuda_prover_groth16::params_dir::ParamsDir;
use cuda_prover_groth16::{KeyStore, KeyUsage, StoredKey};
use cuda_prover_pipeline::circuits::{BuiltIn, Kind};

pub struct Keys {
    /// Canonical forms of the configured dirs.
    dirs: Vec<PathBuf>,
    /// The configured dirs, held open since the start: keys are read and
    /// written through these handles only ([`Keys::open_dir`]).
    handles: Vec<ParamsDir>,
    /// The daemon's one key store.
    store: Arc<KeyStore>,
}

impl Keys {
    /// Creates the params dirs that are missing.
    pub fn new(dirs: &[PathBuf], store: Arc<KeyStore>) -> Result<Self, String> {
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
            store,
        })
    }

    /// The daemon's key store: every key it holds, built-in and Filecoin.
    pub fn store(&self) -> &Arc<KeyStore> {
        &self.store
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

    /// A built-in circuit's key's name in the store.
    pub fn name(kind: Kind, log_constraints: u32, dir: &Path) -> String {
        built_in_name(kind, log_constraints, dir)
    }

    /// The key of a built-in circuit, resident (loaded, or generated and
    /// saved, on first use), with its shape. Returns the keys evicted to
    /// make room.
    pub fn get(
        &self,
        kind: Kind,
        log_constraints: u32,
        dir: &Path,
        pin: bool,
    ) -> Result<(Arc<StoredKey>, Vec<String>), EngineError> {
        if !pin {
            if let Some(k) = self.store.get(&Self::name(kind, log_constraints, dir)) {
                return Ok((k, Vec::new()));
            }
        }
        let c = BuiltIn::new(kind, log_constraints, 0).map_err(EngineError::Setup)?;
        let say = |s: &str| log::info!("{s}");
        let loaded = self
            .store
            .load_built_in(&self.open_dir(dir)?, &c, pin, &say)?;
        Ok((loaded.key, loaded.evicted))
    }

    /// Unpins and drops a key; false when it was not resident.
    pub fn evict(&self, name: &str) -> bool {
        self.store.evict(name)
    }

    /// Every resident key, built-in and Filecoin.
    pub fn list(&self) -> Vec<Resident> {
        self.store.list()
    }

    /// The resident keys of built-in circuits.
    pub fn list_built_in(&self) -> Vec<Resident> {
        self.store.list_built_in()
    }

    pub fn usage(&self) -> KeyUsage {
        self.store.usage()
    }
}
