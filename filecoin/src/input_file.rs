//! Reading an input file (a C1 output, a PoSt input) whose size is bounded
//! before it is read: a larger regular file is refused unread, and a
//! stream without a length (`/dev/zero`, a pipe) is read only up to the
//! bound, then refused.

use std::io::Read;
use std::path::Path;

use crate::error::{FilecoinError, Result};

/// What an input file is and how large one may be.
pub(crate) struct InputFile {
    /// "C1 file": the words errors name the file by.
    pub what: &'static str,
    /// "C1": what the limit is of.
    pub content: &'static str,
    pub max_bytes: u64,
    /// A hint after the limit, e.g. "(a 32 GiB sector's is about 50 MB)".
    pub typical: &'static str,
}

impl InputFile {
    /// The file's bytes, at most `max_bytes`.
    pub fn read(&self, path: &Path) -> Result<Vec<u8>> {
        let what = || format!("reading the {} {}", self.what, path.display());
        let too_big = |n: String| {
            FilecoinError::Input(format!(
                "the {} {} holds {n} bytes, more than the {} MiB a {} may have {}",
                self.what,
                path.display(),
                self.max_bytes >> 20,
                self.content,
                self.typical
            ))
        };
        let f = std::fs::File::open(path).map_err(|e| FilecoinError::io(what(), e))?;
        let meta = f.metadata().map_err(|e| FilecoinError::io(what(), e))?;
        if meta.is_dir() {
            return Err(FilecoinError::Input(format!(
                "the {} {} is a directory",
                self.what,
                path.display()
            )));
        }
        if meta.is_file() && meta.len() > self.max_bytes {
            return Err(too_big(meta.len().to_string()));
        }
        let mut bytes = Vec::new();
        f.take(self.max_bytes + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| FilecoinError::io(what(), e))?;
        if bytes.len() as u64 > self.max_bytes {
            return Err(too_big(format!("more than {}", self.max_bytes)));
        }
        Ok(bytes)
    }
}
