//! The proving keys of a process, held once: one store per process (the
//! CLI's, or the daemon's, handed to its built-in jobs and to its Filecoin
//! prover), so a 47 GiB key is loaded once and counted once.
//!
//! What it owns: getting a key by its file (loaded once, even when two
//! callers ask at the same time; its shape from the file beside it, see
//! [`shape_path`]), generating and saving the TEST key of a built-in
//! circuit when its file is missing ([`crate::params`]), keys made in
//! memory, and which keys stay resident: the host bytes of each key
//! counted against a budget, the least recently used unpinned keys
//! evicted to make room ([`Residency`]), pinned keys never. Keys are
//! shared as `Arc`: a key a job proves with stays valid after it is
//! evicted, is found again (not loaded twice) while that job holds it,
//! and stops counting ([`KeyUsage::evicted_in_use`]) once the job drops it.
//!
//! - `files`: where a key's shape lies, a built-in key's name;
//! - `stored`: one key as the store holds it, and its host bytes;
//! - `loading`: one load at a time per key.

mod files;
mod loading;
mod stored;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use cuda_prover_pipeline::circuits::BuiltIn;
use cuda_prover_pipeline::{KeyCheck, ProvingKey, Shape};
use parking_lot::Mutex;

pub use files::{built_in_name, shape_name, shape_path};
use files::{read_shape, shape_for_key};
pub use stored::{host_bytes, StoredKey};

use crate::params_dir::ParamsDir;
use cuda_prover_engine::residency::{Residency, Resident};
use cuda_prover_engine::Engine;
use cuda_prover_engine::EngineError;
use loading::LoadSlots;

/// A key as a store hands it out.
pub struct Loaded {
    pub key: Arc<StoredKey>,
    /// Keys evicted to make room for it.
    pub evicted: Vec<String>,
    /// Time spent loading it (zero when it was resident).
    pub took: Duration,
}

/// What a store holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyUsage {
    /// Host bytes of the resident keys.
    pub used: u64,
    pub budget: u64,
    /// Keys evicted to make room, since the start.
    pub evictions: u64,
    /// Host bytes of evicted keys a job still holds (freed when it ends).
    pub evicted_in_use: u64,
}

/// The keys of a process (see the module's documentation).
pub struct KeyStore {
    resident: Mutex<Residency<StoredKey>>,
    /// Keys evicted while in use: taken back instead of loaded again.
    retired: Mutex<Vec<(String, Weak<StoredKey>)>>,
    loading: LoadSlots,
}

impl KeyStore {
    /// A store whose resident keys take at most `budget_bytes` host bytes.
    pub fn new(budget_bytes: u64) -> Self {
        Self {
            resident: Mutex::new(Residency::new(budget_bytes)),
            retired: Mutex::new(Vec::new()),
            loading: LoadSlots::default(),
        }
    }

    /// A store that keeps every key it loads (a CLI run).
    pub fn unbounded() -> Self {
        Self::new(u64::MAX)
    }

    /// The resident key `name`, marked as used.
    pub fn get(&self, name: &str) -> Option<Arc<StoredKey>> {
        self.resident.lock().get(name)
    }

    /// The key of `file` (its name in the store is the path as given),
    /// loaded with `check` on first use, its subgroup checks on the
    /// engine's first GPU when it has one (seconds for a 47 GiB key
    /// instead of minutes on the host's cores); its shape from
    /// [`shape_path`] when that file is there and fits (a missing or
    /// unusable one is left for the job to record: why is logged).
    /// `pin` keeps it resident until [`KeyStore::unpin`] or
    /// [`KeyStore::evict`].
    pub fn load_key(
        &self,
        engine: &Engine,
        file: &Path,
        check: KeyCheck,
        pin: bool,
    ) -> Result<Loaded, EngineError> {
        let name = file.display().to_string();
        self.get_or_load(&name, pin, || {
            let gpu = engine
                .devices()
                .iter()
                .find(|d| !d.simulated)
                .map(|d| d.ordinal);
            // The shape file is read and checksummed (mostly one thread)
            // while the key loads on every core; checked against the key
            // after.
            let t = std::time::Instant::now();
            let (loaded, shape_read) = std::thread::scope(|s| {
                let shape = s.spawn(|| {
                    let read = read_shape(file);
                    (read, t.elapsed())
                });
                let loaded = match gpu {
                    Some(ordinal) => {
                        ProvingKey::load_file_on(engine.context(), ordinal, file, check)
                    }
                    None => ProvingKey::load_file(file, check),
                };
                (loaded, shape.join())
            });
            let (shape_read, read_time) = shape_read.unwrap_or_else(|p| {
                (
                    Some(Err(format!(
                        "reading it stopped: {}",
                        cuda_prover_pipeline::panic_message(&*p)
                    ))),
                    t.elapsed(),
                )
            });
            let (key, r) = loaded.map_err(|e| EngineError::Params(e.to_string()))?;
            log::info!(
                "{}: key loaded in {:.2} s ({} points, {} MiB read, hashed and decoded in {:.2} s; \
                 subgroup checks {:?}, {:.2} s)",
                file.display(),
                r.total.as_secs_f64(),
                r.points,
                r.bytes >> 20,
                r.read.as_secs_f64(),
                r.subgroup,
                r.subgroup_time.as_secs_f64()
            );
            let t = std::time::Instant::now();
            let shape = shape_for_key(file, shape_read, &key);
            if shape.is_some() {
                log::info!(
                    "{}: shape read and built in {:.2} s beside the key, checked against it in {:.2} s",
                    file.display(),
                    read_time.as_secs_f64(),
                    t.elapsed().as_secs_f64()
                );
            }
            StoredKey::new(file, Arc::new(key), shape, false)
        })
    }

    /// The key of built-in circuit `c` in `dir` (named [`built_in_name`]),
    /// with its shape: loaded, or generated and saved first when its file
    /// is missing ([`crate::params::load_key_and_shape_in`]). `log`
    /// receives progress lines.
    pub fn load_built_in(
        &self,
        dir: &ParamsDir,
        c: &BuiltIn,
        pin: bool,
        log: &(dyn Fn(&str) + Sync),
    ) -> Result<Loaded, EngineError> {
        let name = built_in_name(c.kind, c.log_constraints, dir.path());
        self.get_or_load(&name, pin, || {
            let (key, shape) = crate::params::load_key_and_shape_in(dir, c, log)?;
            let file = dir.path().join(crate::params::key_name(c));
            StoredKey::new(&file, Arc::new(key), Some(shape), true)
        })
    }

    /// A key made in memory for `file` (a TEST key computed here that need
    /// not pass through its file), with its shape when known (checked
    /// against it). It replaces a resident key of that name, and is
    /// pinned: the store could not load it again.
    pub fn insert_key(
        &self,
        file: &Path,
        key: Arc<ProvingKey>,
        shape: Option<Arc<Shape>>,
    ) -> Result<Loaded, EngineError> {
        let name = file.display().to_string();
        let _slot = self.loading.hold(&name);
        let entry = Arc::new(StoredKey::new(file, key, shape, false)?);
        self.resident.lock().remove(&name);
        let evicted = self.admit(&name, entry.clone(), true)?;
        Ok(Loaded {
            key: entry,
            evicted,
            took: Duration::ZERO,
        })
    }

    /// Pins a resident key; false when it is not resident.
    pub fn pin(&self, name: &str) -> bool {
        self.resident.lock().set_pinned(name, true)
    }

    /// Unpins a resident key (it may then be evicted); false when it is
    /// not resident.
    pub fn unpin(&self, name: &str) -> bool {
        self.resident.lock().set_pinned(name, false)
    }

    /// Drops a key, pinned or not; false when it was not resident. A job
    /// proving with it keeps it until that job ends.
    pub fn evict(&self, name: &str) -> bool {
        let removed = self.resident.lock().remove(name);
        match removed {
            Some(e) => {
                self.retire(vec![(name.to_string(), e)]);
                true
            }
            None => false,
        }
    }

    /// The resident keys, most recently used first.
    pub fn list(&self) -> Vec<Resident> {
        self.resident.lock().list()
    }

    /// The resident keys of built-in circuits, most recently used first.
    pub fn list_built_in(&self) -> Vec<Resident> {
        let r = self.resident.lock();
        r.list()
            .into_iter()
            .filter(|k| r.peek(&k.name).is_some_and(|e| e.built_in))
            .collect()
    }

    /// The files of the resident keys loaded by file or made in memory
    /// (not built-in circuits' keys), sorted.
    pub fn loaded_files(&self) -> Vec<PathBuf> {
        let r = self.resident.lock();
        let mut v: Vec<PathBuf> = r
            .list()
            .iter()
            .filter_map(|k| r.peek(&k.name))
            .filter(|e| !e.built_in)
            .map(|e| e.file().to_path_buf())
            .collect();
        v.sort();
        v
    }

    pub fn usage(&self) -> KeyUsage {
        let (used, budget, evictions) = {
            let r = self.resident.lock();
            (r.used(), r.budget(), r.evictions())
        };
        let mut retired = self.retired.lock();
        retired.retain(|(_, w)| w.strong_count() > 0);
        let evicted_in_use = retired
            .iter()
            .filter_map(|(_, w)| w.upgrade())
            .map(|e| e.bytes())
            .sum();
        KeyUsage {
            used,
            budget,
            evictions,
            evicted_in_use,
        }
    }

    /// The resident key `name` (pinned when `pin`), else one evicted that a
    /// job still holds, else `load`ed, once however many callers ask.
    fn get_or_load(
        &self,
        name: &str,
        pin: bool,
        load: impl FnOnce() -> Result<StoredKey, EngineError>,
    ) -> Result<Loaded, EngineError> {
        if let Some(k) = self.resident_now(name, pin) {
            return Ok(k);
        }
        let _slot = self.loading.hold(name);
        if let Some(k) = self.resident_now(name, pin) {
            return Ok(k);
        }
        let t = Instant::now();
        let entry = match self.take_retired(name) {
            Some(e) => e,
            None => Arc::new(load()?),
        };
        let took = t.elapsed();
        let evicted = self.admit(name, entry.clone(), pin)?;
        Ok(Loaded {
            key: entry,
            evicted,
            took,
        })
    }

    fn resident_now(&self, name: &str, pin: bool) -> Option<Loaded> {
        let mut r = self.resident.lock();
        let e = r.get(name)?;
        if pin {
            r.set_pinned(name, true);
        }
        Some(Loaded {
            key: e,
            evicted: Vec::new(),
            took: Duration::ZERO,
        })
    }

    /// Makes `entry` resident, evicting to make room; the names evicted.
    fn admit(
        &self,
        name: &str,
        entry: Arc<StoredKey>,
        pin: bool,
    ) -> Result<Vec<String>, EngineError> {
        let bytes = entry.bytes();
        let evicted = self
            .resident
            .lock()
            .insert_evicting(name, entry, bytes, pin)
            .map_err(EngineError::Setup)?;
        let names: Vec<String> = evicted.iter().map(|(n, _)| n.clone()).collect();
        for n in &names {
            log::info!("evicted key {n} to make room for {name}");
        }
        self.retire(evicted);
        Ok(names)
    }

    /// Keeps a weak reference to evicted keys: found again while in use.
    fn retire(&self, evicted: Vec<(String, Arc<StoredKey>)>) {
        let mut retired = self.retired.lock();
        retired.retain(|(_, w)| w.strong_count() > 0);
        for (n, e) in evicted {
            retired.retain(|(m, _)| *m != n);
            retired.push((n, Arc::downgrade(&e)));
        }
    }

    fn take_retired(&self, name: &str) -> Option<Arc<StoredKey>> {
        let mut retired = self.retired.lock();
        let i = retired.iter().position(|(n, _)| n == name)?;
        retired.swap_remove(i).1.upgrade()
    }
}
