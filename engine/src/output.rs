//! Output files (report, metrics) checked before a job runs: each is a
//! temporary file created beside its destination up front, so that an
//! unwritable path fails before any work, and renamed into place once the
//! content is written. A job that fails leaves no partial file.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::EngineError;

pub struct OutputFile {
    path: PathBuf,
    tmp: PathBuf,
    file: Option<File>,
}

fn setup(what: &str, path: &Path, e: impl std::fmt::Display) -> EngineError {
    EngineError::Setup(format!("cannot write {what} {}: {e}", path.display()))
}

fn io(what: &str, path: &Path, source: std::io::Error) -> EngineError {
    EngineError::Io {
        what: format!("cannot write {what} {}", path.display()),
        source,
    }
}

impl OutputFile {
    /// Creates the temporary file now; `what` names the file in errors.
    pub fn prepare(what: &str, path: &Path) -> Result<Self, EngineError> {
        if path.is_dir() {
            return Err(setup(what, path, "it is a directory"));
        }
        let name = path
            .file_name()
            .ok_or_else(|| setup(what, path, "not a file name"))?;
        let mut tmp_name = std::ffi::OsString::from(".");
        tmp_name.push(name);
        tmp_name.push(format!(".tmp{}", std::process::id()));
        let tmp = path.with_file_name(tmp_name);
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)
            .map_err(|e| io(what, path, e))?;
        Ok(Self {
            path: path.to_path_buf(),
            tmp,
            file: Some(file),
        })
    }

    /// Writes `content` and renames the file into place.
    pub fn commit(mut self, what: &str, content: &str) -> Result<(), EngineError> {
        let mut f = self.file.take().expect("committed once");
        f.write_all(content.as_bytes())
            .and_then(|_| f.sync_all())
            .and_then(|_| std::fs::rename(&self.tmp, &self.path))
            .map_err(|e| io(what, &self.path, e))
    }
}

/// Refuses an output path that names one of the job's inputs, so that a
/// report or metrics file never overwrites them: a file of `inputs_dir`
/// whose name starts with `stem` and a dot (the key, its digest record and
/// lock, the shape), the directory compared by its canonical path (`..`
/// and links to the directory count too), and any existing file that is
/// one of those files under another name (a symbolic or hard link).
pub fn check_not_input(
    what: &str,
    path: &Path,
    inputs_dir: &Path,
    stem: &str,
) -> Result<(), EngineError> {
    let refuse = |input: &Path| {
        EngineError::Setup(format!(
            "the {what} path {} is the job's input {}: refusing to overwrite it",
            path.display(),
            input.display()
        ))
    };
    let prefix = format!("{stem}.");
    let Ok(dir) = inputs_dir.canonicalize() else {
        return Ok(()); // no inputs there yet: the key is made after this check
    };
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
    if let (Ok(parent), Some(name)) = (parent.canonicalize(), &name) {
        if parent == dir && name.starts_with(&prefix) {
            return Err(refuse(&dir.join(name)));
        }
    }
    #[cfg(unix)]
    if let Ok(out) = std::fs::metadata(path) {
        use std::os::unix::fs::MetadataExt;
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            if !entry.file_name().to_string_lossy().starts_with(&prefix) {
                continue;
            }
            if let Ok(m) = std::fs::metadata(entry.path()) {
                if m.dev() == out.dev() && m.ino() == out.ino() {
                    return Err(refuse(&entry.path()));
                }
            }
        }
    }
    Ok(())
}

impl Drop for OutputFile {
    fn drop(&mut self) {
        // Not renamed into place (the job failed, or the write did): remove.
        if self.tmp.exists() {
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}
