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
//! - Every file is opened relative to the params dir's handle without
//!   following a link ([`ParamsDir`]): the key, its verified record, its
//!   lock, temporary files and the shape.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use cuda_prover_pipeline::circuits::BuiltIn;
use cuda_prover_pipeline::{
    setup, vk_fingerprint, ErrorCode, KeyCheck, ProvingKey, Shape, ShapeData,
};
use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};

use crate::params_dir::{Entry, Open, ParamsDir};
use cuda_prover_engine::EngineError;

/// The name of a circuit shape's key file in its params dir.
pub fn key_name(c: &BuiltIn) -> OsString {
    format!("{}-2^{}.params", c.kind.name(), c.log_constraints).into()
}

/// The cache file of a circuit shape.
pub fn key_path(dir: &Path, c: &BuiltIn) -> PathBuf {
    dir.join(key_name(c))
}

/// `<key>.<suffix>` beside the key.
fn sibling(name: &OsStr, suffix: &str) -> OsString {
    let mut s = name.to_os_string();
    s.push(suffix);
    s
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
    load_key_and_shape_in(&ParamsDir::open(dir)?, c, log)
}

/// [`load_key_and_shape`] in a params dir held open: every file is opened
/// relative to it, no link followed.
pub fn load_key_and_shape_in(
    dir: &ParamsDir,
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
    dir: &ParamsDir,
    c: &BuiltIn,
    log: &(dyn Fn(&str) + Sync),
) -> Result<ProvingKey, EngineError> {
    let name = key_name(c);
    let path = dir.shown(&name);
    // A key this process has just made is loaded without the subgroup
    // checks (every point came out of a fixed-base multiplication here);
    // any other key is checked in full once (the core records its digest).
    let mut check = KeyCheck::Full;
    match dir.entry(&name) {
        Ok(Entry::Missing) => {
            if create_locked(dir, &name, c, log)? {
                check = KeyCheck::TrustedUnchecked;
            }
        }
        // A link or another kind of file: the core's open says what it is.
        Ok(_) => {
            // Nobody is writing: leftovers of dead writers can go.
            if let Some(lock) = KeyLock::try_acquire(dir, &name) {
                remove_stale_temps(dir, &name, log);
                drop(lock);
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
    let (key, report) = ProvingKey::load_file_at(dir.fd(), &name, &path, check)
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
    EngineError::Key {
        message: format!(
            "{}: {e}{}",
            path.display(),
            if advice {
                " (delete the file to make it again)"
            } else {
                ""
            }
        ),
        code,
    }
}

/// An exclusive `flock` on `<key>.lock`, released on drop (and by the kernel
/// when the holder dies).
struct KeyLock {
    _file: File,
}

impl KeyLock {
    fn open(dir: &ParamsDir, name: &OsStr) -> std::io::Result<File> {
        dir.open_file(&sibling(name, ".lock"), Open::ReadWriteCreate)
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
    fn acquire(
        dir: &ParamsDir,
        name: &OsStr,
        log: &(dyn Fn(&str) + Sync),
    ) -> Result<Self, EngineError> {
        let lp = dir.shown(&sibling(name, ".lock"));
        let err =
            |e: std::io::Error| EngineError::Params(format!("cannot lock {}: {e}", lp.display()));
        let f = Self::open(dir, name).map_err(err)?;
        if Self::flock(&f, libc::LOCK_EX | libc::LOCK_NB).is_err() {
            log(&format!(
                "another process is making {}; waiting for it",
                dir.shown(name).display()
            ));
            Self::flock(&f, libc::LOCK_EX).map_err(err)?;
        }
        Ok(Self { _file: f })
    }

    /// The lock when it is free now; `None` when it is held or cannot be
    /// opened (a read-only directory: nothing to clean there anyway).
    fn try_acquire(dir: &ParamsDir, name: &OsStr) -> Option<Self> {
        let f = Self::open(dir, name).ok()?;
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
fn remove_stale_temps(dir: &ParamsDir, name: &OsStr, log: &(dyn Fn(&str) + Sync)) {
    let stem = Path::new(name).file_stem().unwrap_or(name);
    let Ok(names) = dir.names() else {
        return;
    };
    for n in names {
        if is_temp_of(n.as_bytes(), name.as_bytes(), stem.as_bytes()) {
            let shown = dir.shown(&n);
            match dir.remove(&n) {
                Ok(()) => log(&format!(
                    "removed {}, left by a writer that died",
                    shown.display()
                )),
                Err(err) => log(&format!(
                    "warning: cannot remove {}: {err}",
                    shown.display()
                )),
            }
        }
    }
}

/// Makes the key under the lock, unless another process made it while this
/// one waited. Returns whether this process generated it.
fn create_locked(
    dir: &ParamsDir,
    name: &OsStr,
    c: &BuiltIn,
    log: &(dyn Fn(&str) + Sync),
) -> Result<bool, EngineError> {
    let _lock = KeyLock::acquire(dir, name, log)?;
    match dir.entry(name) {
        Ok(Entry::Missing) => {}
        Ok(_) => return Ok(false), // made by the process we waited for
        Err(e) => {
            return Err(EngineError::Params(format!(
                "cannot access {}: {e}",
                dir.shown(name).display()
            )))
        }
    }
    remove_stale_temps(dir, name, log);
    create(dir, name, c, log)?;
    Ok(true)
}

/// Writes `bytes` through `writer` to `<name>.tmp<pid>`-style `tmp`,
/// synced, then renamed to `name`; the temporary file is removed on error.
pub(crate) fn write_then_rename<T>(
    dir: &ParamsDir,
    tmp: &OsStr,
    name: &OsStr,
    writer: impl FnOnce(&mut std::io::BufWriter<File>) -> Result<T, EngineError>,
) -> Result<T, EngineError> {
    let path = dir.shown(name);
    let io =
        |e: std::io::Error| EngineError::Params(format!("cannot write {}: {e}", path.display()));
    let write = || -> Result<T, EngineError> {
        let f = dir.open_file(tmp, Open::WriteTruncate).map_err(io)?;
        let mut w = std::io::BufWriter::with_capacity(1 << 20, f);
        let out = writer(&mut w)?;
        w.flush().map_err(io)?;
        w.get_ref().sync_all().map_err(io)?;
        dir.rename(tmp, name).map_err(io)?;
        Ok(out)
    };
    write().inspect_err(|_| {
        let _ = dir.remove(tmp);
    })
}

/// Makes the TEST key of `c` from its shape (recorded here, structure only)
/// with toxic waste from a fresh random seed, streamed to `<key>.tmp<pid>`
/// and renamed into place; the shape is saved beside it, tied to the new
/// key, so the first job does not record it again.
fn create(
    dir: &ParamsDir,
    name: &OsStr,
    c: &BuiltIn,
    log: &(dyn Fn(&str) + Sync),
) -> Result<(), EngineError> {
    log(&format!(
        "generating params for {} 2^{} (a TEST key from its shape, one time) -> {}",
        c.kind.name(),
        c.log_constraints,
        dir.shown(name).display()
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
    let tmp = sibling(name, &format!(".tmp{}", std::process::id()));
    let vk = write_then_rename(dir, &tmp, name, |w| {
        let mut progress = |line: &str| log(&format!("  {line}"));
        setup::write_test_key(&shape, seed, w, &mut progress)
            .map(|(vk, _)| vk)
            .map_err(|e| EngineError::Params(format!("parameter generation failed: {e}")))
    })?;
    log(&format!(
        "  generated and written in {:.1} s",
        t.elapsed().as_secs_f64()
    ));
    if let Err(e) = crate::shape_cache::save(dir, c, &shape, &vk_fingerprint(&vk)) {
        log(&format!("  could not save the shape: {e}"));
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
