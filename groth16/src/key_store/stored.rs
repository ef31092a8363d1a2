//! One key as a store holds it: the proving key, its circuit's shape when
//! known (loaded with the key, or recorded by a first job and added), the
//! file it came from and the host bytes it is counted for.

use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use cuda_prover_pipeline::{ProvingKey, Shape};

use cuda_prover_engine::EngineError;

/// A key held by a [`super::KeyStore`], shared as `Arc`: a job proving with
/// it keeps it alive after the store evicts it.
pub struct StoredKey {
    file: PathBuf,
    key: Arc<ProvingKey>,
    shape: RwLock<Option<Arc<Shape>>>,
    bytes: u64,
    /// A built-in circuit's key (the store lists the others' files).
    pub(crate) built_in: bool,
}

impl StoredKey {
    /// `shape`, when given, is checked against `key`.
    pub(crate) fn new(
        file: &Path,
        key: Arc<ProvingKey>,
        shape: Option<Arc<Shape>>,
        built_in: bool,
    ) -> Result<Self, EngineError> {
        if let Some(s) = &shape {
            check(file, &key, s)?;
        }
        let bytes = host_bytes(&key, shape.as_deref())?;
        Ok(Self {
            file: file.to_path_buf(),
            key,
            shape: RwLock::new(shape),
            bytes,
            built_in,
        })
    }

    /// The key file (a path no store reads for keys made in memory).
    pub fn file(&self) -> &Path {
        &self.file
    }

    pub fn key(&self) -> &Arc<ProvingKey> {
        &self.key
    }

    /// The circuit's shape, when known.
    pub fn shape(&self) -> Option<Arc<Shape>> {
        self.shape.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Adds the circuit's shape (recorded by a job), checked against the key.
    /// The key stays counted for the bytes it had when it was stored.
    pub fn set_shape(&self, shape: Arc<Shape>) -> Result<(), EngineError> {
        check(&self.file, &self.key, &shape)?;
        *self.shape.write().unwrap_or_else(|p| p.into_inner()) = Some(shape);
        Ok(())
    }

    /// The host bytes the store counts this key for: its points and, when
    /// it was stored with one, its shape.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }
}

fn check(file: &Path, key: &ProvingKey, shape: &Shape) -> Result<(), EngineError> {
    key.check_shape(shape).map_err(|e| {
        EngineError::Params(format!(
            "{}: the shape given with the key: {e}",
            file.display()
        ))
    })
}

/// Host bytes of a key (by the host backend's layout of its points, no
/// context needed) and of its shape's matrices.
pub fn host_bytes(key: &ProvingKey, shape: Option<&Shape>) -> Result<u64, EngineError> {
    let setup = |e: cuda_prover_pipeline::Error| EngineError::Setup(e.to_string());
    let n = key.domain_size().map_err(setup)?;
    let points = key.memory_estimate(n).map_err(setup)?.key_bytes;
    let shape = match shape {
        Some(s) => s.info().device_bytes,
        None => 0,
    };
    Ok(points.saturating_add(shape))
}
