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
            .map_err(|e| setup(what, path, e))?;
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
            .map_err(|e| setup(what, &self.path, e))
    }
}

impl Drop for OutputFile {
    fn drop(&mut self) {
        // Not renamed into place (the job failed, or the write did): remove.
        if self.tmp.exists() {
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}
