//! Proving keys for the built-in circuits, cached on disk: made once (with
//! progress shown), then loaded by the core. The key is a TEST key made from
//! the circuit's shape with a random seed (seconds at 2^20; anyone with the
//! seed could forge proofs, and the seed is not kept), in bellperson's params
//! format; the shape is saved beside it.
//!
//! - Only a missing file is made again: any other error reaching the file
//!   (permission denied, not a regular file) is reported as it is.
//! - Processes that find the key missing at the same time make it once:
//!   the writer holds an exclusive `flock` on `<key>.lock` while it makes
//!   and writes the key; the others wait for it, then load what it wrote.
//! - A key is written to `<key>.tmp<pid>` and renamed into place. Every
//!   writer holds the lock, so a temporary file found while holding it was
//!   left by a writer that died: it is removed (at generation, and at every
//!   load that finds the lock free).
//! - "delete the file to make it again" follows only a malformed key or a
//!   key of another circuit, never an I/O error.

use std::ffi::OsString;
use std::fs::File;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use cuda_prover_pipeline::circuits::BuiltIn;
use cuda_prover_pipeline::{
    setup, shape_file, vk_fingerprint, ErrorCode, KeyCheck, ProvingKey, Shape, ShapeData,
};
use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};

use crate::error::EngineError;

/// The cache file of a circuit shape.
pub fn cache_path(dir: &Path, c: &BuiltIn) -> PathBuf {
    dir.join(format!("{}-2^{}.params", c.kind.name(), c.log_constraints))
}

/// `<key>.<suffix>` beside the key (bytes, so any directory name works).
fn sibling(path: &Path, suffix: &str) -> PathBuf {
    let mut s = OsString::from(path.as_os_str());
    s.push(suffix);
    PathBuf::from(s)
}

fn lock_path(path: &Path) -> PathBuf {
    sibling(path, ".lock")
}

/// Loads the key for `c`'s circuit from `dir`, generating and writing it
/// first when it is missing, with the circuit's shape (see
/// [`crate::shape_cache`]), which is checked against the key: a cached key of
/// another circuit is refused before any work. `log` receives progress
/// lines.
pub fn load_key_and_shape(
    dir: &Path,
    c: &BuiltIn,
    log: &(dyn Fn(&str) + Sync),
) -> Result<(ProvingKey, Arc<Shape>), EngineError> {
    let key = load_key(dir, c, log)?;
    let shape = crate::shape_cache::load_or_record(dir, c, &key, log)?;
    Ok((key, shape))
}

/// [`load_key_and_shape`] for callers that need only the key.
pub fn load_or_create(
    dir: &Path,
    c: &BuiltIn,
    log: &(dyn Fn(&str) + Sync),
) -> Result<ProvingKey, EngineError> {
    load_key_and_shape(dir, c, log).map(|(key, _)| key)
}

fn load_key(
    dir: &Path,
    c: &BuiltIn,
    log: &(dyn Fn(&str) + Sync),
) -> Result<ProvingKey, EngineError> {
    let path = cache_path(dir, c);
    // A key this process has just made is loaded without the subgroup
    // checks (every point came out of a fixed-base multiplication here);
    // any other key is checked in full once (the core records its digest).
    let mut check = KeyCheck::Full;
    match std::fs::metadata(&path) {
        Ok(_) => {
            // Nobody is writing: leftovers of dead writers can go.
            if let Some(lock) = KeyLock::try_acquire(&path) {
                remove_stale_temps(&path, log);
                drop(lock);
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            if create_locked(dir, &path, c, log)? {
                check = KeyCheck::TrustedUnchecked;
            }
        }
        Err(e) => {
            return Err(EngineError::Params(format!(
                "cannot access {}: {e}",
                path.display()
            )))
        }
    };
    let t = Instant::now();
    let (key, report) = ProvingKey::load_file(&path, check)
        .map_err(|e| key_error(&path, &e.to_string(), e.code()))?;
    if let Some(note) = &report.note {
        log(&format!("warning: {note}"));
    }
    log(&format!(
        "loaded {} in {:.2} s ({})",
        path.display(),
        t.elapsed().as_secs_f64(),
        report.summary()
    ));
    Ok(key)
}

/// A load error: the advice to delete the file only where making it again
/// would help (a malformed key, or a key of another circuit).
pub(crate) fn key_error(path: &Path, e: &str, code: Option<ErrorCode>) -> EngineError {
    let advice = matches!(
        code,
        Some(ErrorCode::ParamsFormat) | Some(ErrorCode::ShapeMismatch)
    );
    EngineError::Params(format!(
        "{}: {e}{}",
        path.display(),
        if advice {
            " (delete the file to make it again)"
        } else {
            ""
        }
    ))
}

/// An exclusive `flock` on `<key>.lock`, released on drop (and by the kernel
/// when the holder dies).
struct KeyLock {
    _file: File,
}

impl KeyLock {
    fn open(path: &Path) -> std::io::Result<File> {
        std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(lock_path(path))
    }

    fn flock(f: &File, flags: libc::c_int) -> std::io::Result<()> {
        loop {
            // SAFETY: flock on a descriptor owned by `f`, alive for the call.
            let r = unsafe { libc::flock(f.as_raw_fd(), flags) };
            if r == 0 {
                return Ok(());
            }
            let e = std::io::Error::last_os_error();
            if e.kind() != std::io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
    }

    /// Waits for the lock, saying so when another process holds it.
    fn acquire(path: &Path, log: &(dyn Fn(&str) + Sync)) -> Result<Self, EngineError> {
        let lp = lock_path(path);
        let err =
            |e: std::io::Error| EngineError::Params(format!("cannot lock {}: {e}", lp.display()));
        let f = Self::open(path).map_err(err)?;
        if Self::flock(&f, libc::LOCK_EX | libc::LOCK_NB).is_err() {
            log(&format!(
                "another process is making {}; waiting for it",
                path.display()
            ));
            Self::flock(&f, libc::LOCK_EX).map_err(err)?;
        }
        Ok(Self { _file: f })
    }

    /// The lock when it is free now; `None` when it is held or cannot be
    /// opened (a read-only directory: nothing to clean there anyway).
    fn try_acquire(path: &Path) -> Option<Self> {
        let f = Self::open(path).ok()?;
        Self::flock(&f, libc::LOCK_EX | libc::LOCK_NB).ok()?;
        Some(Self { _file: f })
    }
}

/// Whether `name` is a temporary file of the key `key_name`: the key's name
/// (or, from older versions, its stem) followed by `.tmp` and a pid, or the
/// core's temporary verified record (`<key>.verified.tmp<pid>-<n>`).
fn is_temp_of(name: &[u8], key_name: &[u8], key_stem: &[u8]) -> bool {
    let digits = |s: &[u8]| !s.is_empty() && s.iter().all(u8::is_ascii_digit);
    let after = |base: &[u8]| {
        name.strip_prefix(base)
            .and_then(|rest| rest.strip_prefix(b".tmp"))
    };
    if [key_name, key_stem]
        .iter()
        .any(|b| after(b).is_some_and(digits))
    {
        return true;
    }
    let record = [key_name, b".verified"].concat();
    after(&record).is_some_and(|rest| {
        let mut parts = rest.splitn(2, |&c| c == b'-');
        parts.next().is_some_and(digits) && parts.next().is_some_and(digits)
    })
}

/// Removes temporary files of dead writers. Call with the key's lock held.
fn remove_stale_temps(path: &Path, log: &(dyn Fn(&str) + Sync)) {
    let (Some(dir), Some(name), Some(stem)) = (path.parent(), path.file_name(), path.file_stem())
    else {
        return;
    };
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let n = e.file_name();
        if is_temp_of(n.as_bytes(), name.as_bytes(), stem.as_bytes()) {
            match std::fs::remove_file(e.path()) {
                Ok(()) => log(&format!(
                    "removed {}, left by a writer that died",
                    e.path().display()
                )),
                Err(err) => log(&format!(
                    "warning: cannot remove {}: {err}",
                    e.path().display()
                )),
            }
        }
    }
}

/// Makes the key under the lock, unless another process made it while this
/// one waited. Returns whether this process generated it.
fn create_locked(
    dir: &Path,
    path: &Path,
    c: &BuiltIn,
    log: &(dyn Fn(&str) + Sync),
) -> Result<bool, EngineError> {
    std::fs::create_dir_all(dir)
        .map_err(|e| EngineError::Params(format!("cannot create {}: {e}", dir.display())))?;
    let _lock = KeyLock::acquire(path, log)?;
    match std::fs::metadata(path) {
        Ok(_) => return Ok(false), // made by the process we waited for
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => {
            return Err(EngineError::Params(format!(
                "cannot access {}: {e}",
                path.display()
            )))
        }
    }
    remove_stale_temps(path, log);
    create(dir, path, c, log)?;
    Ok(true)
}

/// Makes the TEST key of `c` from its shape (recorded here, structure only)
/// with toxic waste from a fresh random seed, streamed to `<key>.tmp<pid>`
/// and renamed into place; the shape is saved beside it, tied to the new
/// key, so the first job does not record it again.
fn create(
    dir: &Path,
    path: &Path,
    c: &BuiltIn,
    log: &(dyn Fn(&str) + Sync),
) -> Result<(), EngineError> {
    log(&format!(
        "generating params for {} 2^{} (a TEST key from its shape, one time) -> {}",
        c.kind.name(),
        c.log_constraints,
        path.display()
    ));
    let t = Instant::now();
    let shape = ShapeData::record(*c).map_err(|e| {
        EngineError::Params(format!("recording the shape of {}: {e}", c.kind.name()))
    })?;
    log(&format!(
        "  shape recorded in {:.1} s ({} constraints)",
        t.elapsed().as_secs_f64(),
        shape.num_constraints()
    ));
    let mut seed = [0u8; 32];
    ChaCha20Rng::from_entropy().fill_bytes(&mut seed);
    let tmp = sibling(path, &format!(".tmp{}", std::process::id()));
    let write = || -> Result<_, EngineError> {
        let io = |e: std::io::Error| {
            EngineError::Params(format!("cannot write {}: {e}", path.display()))
        };
        let f = File::create(&tmp).map_err(io)?;
        let mut w = std::io::BufWriter::with_capacity(1 << 20, f);
        let mut progress = |line: &str| log(&format!("  {line}"));
        let (vk, _) = setup::write_test_key(&shape, seed, &mut w, &mut progress)
            .map_err(|e| EngineError::Params(format!("parameter generation failed: {e}")))?;
        w.flush().map_err(io)?;
        w.get_ref().sync_all().map_err(io)?;
        std::fs::rename(&tmp, path).map_err(io)?;
        Ok(vk)
    };
    let vk = write().inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })?;
    log(&format!(
        "  generated and written in {:.1} s",
        t.elapsed().as_secs_f64()
    ));
    let shape_path = crate::shape_cache::shape_path(dir, c);
    if let Err(e) = shape_file::save_for(&shape, &vk_fingerprint(&vk), &shape_path) {
        log(&format!(
            "  could not save the shape to {}: {e}",
            shape_path.display()
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::is_temp_of;

    #[test]
    fn temp_names() {
        let (name, stem) = (&b"chain-2^8.params"[..], &b"chain-2^8"[..]);
        assert!(is_temp_of(b"chain-2^8.params.tmp123", name, stem));
        assert!(is_temp_of(b"chain-2^8.tmp9", name, stem));
        assert!(!is_temp_of(b"chain-2^8.params", name, stem));
        assert!(!is_temp_of(b"chain-2^8.params.tmp", name, stem));
        assert!(!is_temp_of(b"chain-2^8.params.tmp12x", name, stem));
        assert!(!is_temp_of(b"chain-2^8.params.lock", name, stem));
        assert!(!is_temp_of(b"chain-2^80.params.tmp1", name, stem));
        assert!(is_temp_of(b"chain-2^8.params.verified.tmp77-0", name, stem));
        assert!(!is_temp_of(b"chain-2^8.params.verified", name, stem));
        assert!(!is_temp_of(b"chain-2^8.params.verified.tmp77", name, stem));
    }
}
