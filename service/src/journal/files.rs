//! The files beside the journal: a name for a file kept aside, a new
//! journal written whole and synced before it replaces the old one
//! (`write_new`, `sync_dir`), the journal opened for appending, and the
//! state directory's lock.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};

use super::frame::HEADER;
use super::lock_path;

/// A name beside `path` for a file kept aside.
pub(super) fn aside_name(path: &Path, why: &str) -> PathBuf {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let mut name = path.as_os_str().to_owned();
    name.push(format!(".{why}-{secs}"));
    let mut aside = PathBuf::from(&name);
    let mut n = 1;
    while aside.exists() {
        aside = PathBuf::from(format!("{}-{n}", name.to_string_lossy()));
        n += 1;
    }
    aside
}

pub(super) fn sync_dir(path: &Path) -> std::io::Result<()> {
    match path.parent() {
        Some(d) => File::open(d)?.sync_all(),
        None => Ok(()),
    }
}

/// A frame to write, and the job it is about.
pub(super) type NewFrame = std::io::Result<(Option<u64>, Vec<u8>)>;

/// A file written: its path, where each job's frame landed (offset,
/// length) and its length.
type Written = (PathBuf, HashMap<u64, (u64, u64)>, u64);

/// `<path>.new`, written with a header and `frames` (made one at a time)
/// and synced.
pub(super) fn write_new(
    path: &Path,
    frames: impl Iterator<Item = NewFrame>,
) -> std::io::Result<Written> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".new");
    let tmp = PathBuf::from(tmp);
    let file = File::create(&tmp)?;
    let mut out = BufWriter::new(&file);
    out.write_all(HEADER)?;
    let mut at = HEADER.len() as u64;
    let mut live = HashMap::new();
    for f in frames {
        let (seq, f) = f?;
        out.write_all(&f)?;
        if let Some(seq) = seq {
            live.insert(seq, (at, f.len() as u64));
        }
        at += f.len() as u64;
    }
    out.flush()?;
    drop(out);
    file.sync_all()?;
    Ok((tmp, live, at))
}

pub(super) fn open_append(path: &Path) -> std::io::Result<File> {
    OpenOptions::new().read(true).append(true).open(path)
}

/// Holds the state directory's lock file, or says who holds it.
pub(super) fn lock(state_dir: &Path, journal: &Path) -> Result<File, String> {
    let path = lock_path(state_dir);
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .map_err(|e| format!("cannot open {}: {e}", path.display()))?;
    // SAFETY: flock on a descriptor this function owns.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
        let e = std::io::Error::last_os_error();
        return Err(if e.kind() == std::io::ErrorKind::WouldBlock {
            format!(
                "cannot read the job journal {}: another daemon has it open (one daemon per \
                 state directory)",
                journal.display()
            )
        } else {
            format!("cannot lock {}: {e}", path.display())
        });
    }
    Ok(file)
}
