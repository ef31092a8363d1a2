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

/// The shape beside the key file `key_file`, when that file is there and
/// fits `key`. A missing or unusable file is not an error (a job records
/// the shape again); why it was not used is logged.
pub(crate) fn load_shape(key_file: &Path, key: &ProvingKey) -> Option<Arc<Shape>> {
    let path = shape_path(key_file);
    if !path.exists() {
        return None;
    }
    let loaded = shape_file::load(&path, key).and_then(|data| {
        let shape = Shape::new(&data)?;
        key.check_shape(&shape)?;
        Ok(shape)
    });
    match loaded {
        Ok(shape) => Some(Arc::new(shape)),
        Err(e) => {
            log::warn!(
                "not using {}: {e}; the job records the shape again",
                path.display()
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
