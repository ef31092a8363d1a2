//! Where a key's files lie: the shape file beside a key file (one rule for
//! every key of the workspace, built-in circuits' and Filecoin's) and the
//! name a built-in circuit's key has in a store.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use cuda_prover_pipeline::circuits::Kind;
use cuda_prover_pipeline::{shape_file, ProvingKey, Shape};

/// The name of the shape file kept beside the key file `key_name`:
/// `<key file>.shape`.
pub fn shape_name(key_name: &OsStr) -> OsString {
    let mut s = key_name.to_os_string();
    s.push(".shape");
    s
}

/// The shape file kept beside the key file `key` (`<key file>.shape`).
pub fn shape_path(key: &Path) -> PathBuf {
    PathBuf::from(shape_name(key.as_os_str()))
}

/// A shape file read, checked in itself and made into a [`Shape`], not
/// yet checked against a key: the fingerprint of the key it was made for.
pub(crate) struct ReadShape {
    fingerprint: [u8; 32],
    shape: Shape,
}

/// The shape beside a key file, in two halves so that the first runs
/// beside the key's own load. This one needs no key: the shape file beside
/// `key_file` read, checked in itself and made into the core's shape (None
/// when there is none).
pub(crate) fn read_shape(key_file: &Path) -> Option<Result<ReadShape, String>> {
    let path = shape_path(key_file);
    if !path.exists() {
        return None;
    }
    Some((|| {
        let file = shape_file::read(&path).map_err(|e| e.to_string())?;
        let fingerprint = *file.fingerprint();
        let shape = Shape::new(&file.into_data()).map_err(|e| e.to_string())?;
        Ok(ReadShape { fingerprint, shape })
    })())
}

/// The second half: the shape [`read_shape`] read for `key_file`, checked
/// against `key` (the file's fingerprint, then the shape's sizes and
/// densities against the key's). A missing or unusable file is not an
/// error (a job records the shape again); why it was not used is logged.
pub(crate) fn shape_for_key(
    key_file: &Path,
    read: Option<Result<ReadShape, String>>,
    key: &ProvingKey,
) -> Option<Arc<Shape>> {
    let loaded = read?.and_then(|r| {
        shape_file::made_for(&r.fingerprint, key)?;
        key.check_shape(&r.shape).map_err(|e| e.to_string())?;
        Ok(r.shape)
    });
    match loaded {
        Ok(shape) => Some(Arc::new(shape)),
        Err(e) => {
            log::warn!(
                "not using {}: {e}; the job records the shape again",
                shape_path(key_file).display()
            );
            None
        }
    }
}

/// The name of a built-in circuit's key in a store: its circuit, its size
/// and its params dir (`chain-2^12@/var/lib/keys`).
pub fn built_in_name(kind: Kind, log_constraints: u32, dir: &Path) -> String {
    format!("{}-2^{}@{}", kind.name(), log_constraints, dir.display())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shape_beside_the_key() {
        assert_eq!(
            shape_path(Path::new("/p/v28-stacked.params")),
            Path::new("/p/v28-stacked.params.shape")
        );
        assert_eq!(
            shape_name(OsStr::new("chain-2^8.params")),
            "chain-2^8.params.shape"
        );
    }
}
