//! A params directory held open. Key files, shape files, verified records,
//! lock and temporary files are opened relative to the directory's handle,
//! by one name each, without following a symbolic link; a subdirectory is
//! reached one component at a time, none of them a link. So a directory
//! swapped for a link after it was checked, or a key, record or lock file
//! that is a link to a file elsewhere, cannot make a reader or a writer
//! leave the directory: the open fails, saying why.
//!
//! The directory itself is opened as its path says (links followed): it is
//! the operator's choice, given once.

use std::ffi::{CString, OsStr, OsString};
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Component, Path, PathBuf};

use cuda_prover_engine::EngineError;

/// What a name in the directory is, without following a link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Entry {
    Missing,
    File,
    Link,
    Other,
}

/// How [`ParamsDir::open_file`] opens a name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Open {
    /// Reading; never blocks on a FIFO.
    Read,
    /// Reading and writing, created when missing, never truncated (locks).
    ReadWriteCreate,
    /// Writing, created or truncated (temporary files).
    WriteTruncate,
}

#[derive(Debug)]
pub struct ParamsDir {
    fd: OwnedFd,
    path: PathBuf,
}

fn c_name(name: &OsStr) -> io::Result<CString> {
    CString::new(name.as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "the name contains a NUL byte"))
}

/// One component: not empty, no '/', not "." or "..".
fn one_name(name: &OsStr) -> io::Result<CString> {
    let b = name.as_bytes();
    if b.is_empty() || b == b"." || b == b".." || b.contains(&b'/') {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("'{}' is not one file name", name.to_string_lossy()),
        ));
    }
    c_name(name)
}

/// `openat`, retried on EINTR; the descriptor owned.
fn openat(dir: libc::c_int, name: &CString, flags: libc::c_int) -> io::Result<OwnedFd> {
    loop {
        // SAFETY: `name` is NUL-terminated and alive for the call; `dir` is
        // an open directory descriptor or AT_FDCWD; the mode is read only
        // with O_CREAT.
        let fd = unsafe { libc::openat(dir, name.as_ptr(), flags | libc::O_CLOEXEC, 0o644) };
        if fd >= 0 {
            // SAFETY: `fd` was just returned by openat and is owned by no
            // one else.
            return Ok(unsafe { OwnedFd::from_raw_fd(fd) });
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// ELOOP from an open with O_NOFOLLOW: the name is a symbolic link.
fn is_link_error(e: &io::Error) -> bool {
    e.raw_os_error() == Some(libc::ELOOP)
}

/// What `name` is in the directory open as `dir`, without following a link.
fn entry_at(dir: libc::c_int, name: &CString) -> io::Result<Entry> {
    // SAFETY: all-zero bytes are a valid `stat`; fstatat writes into it and
    // reads the NUL-terminated `name`, both alive for the call, relative to
    // `dir`, an open directory descriptor.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    let r = unsafe { libc::fstatat(dir, name.as_ptr(), &mut st, libc::AT_SYMLINK_NOFOLLOW) };
    if r != 0 {
        let e = io::Error::last_os_error();
        return match e.kind() {
            io::ErrorKind::NotFound => Ok(Entry::Missing),
            _ => Err(e),
        };
    }
    Ok(match st.st_mode & libc::S_IFMT {
        libc::S_IFREG => Entry::File,
        libc::S_IFLNK => Entry::Link,
        _ => Entry::Other,
    })
}

impl ParamsDir {
    /// Opens the directory at `path`, created when missing.
    pub fn open(path: &Path) -> Result<Self, EngineError> {
        let err = |e: io::Error| EngineError::Params(format!("params dir {}: {e}", path.display()));
        std::fs::create_dir_all(path).map_err(err)?;
        let c = c_name(path.as_os_str()).map_err(err)?;
        let fd = openat(libc::AT_FDCWD, &c, libc::O_RDONLY | libc::O_DIRECTORY).map_err(err)?;
        Ok(Self {
            fd,
            path: path.to_path_buf(),
        })
    }

    /// The directory `rel` inside this one, each component opened without
    /// following a link: a component that is a link, or not a directory,
    /// is refused. `rel` has no `..` and is not absolute.
    pub fn beneath(&self, rel: &Path) -> Result<Self, EngineError> {
        let mut fd = self
            .fd
            .try_clone()
            .map_err(|e| EngineError::Params(format!("params dir {}: {e}", self.path.display())))?;
        let mut path = self.path.clone();
        for comp in rel.components() {
            let name = match comp {
                Component::CurDir => continue,
                Component::Normal(n) => n,
                _ => {
                    return Err(EngineError::Params(format!(
                        "params dir {}: '{}' is not a path inside it",
                        self.path.display(),
                        rel.display()
                    )))
                }
            };
            path.push(name);
            let c = one_name(name)
                .map_err(|e| EngineError::Params(format!("params dir {}: {e}", path.display())))?;
            // O_DIRECTORY with O_NOFOLLOW fails a link with ENOTDIR.
            let at = fd.as_raw_fd();
            fd = openat(
                at,
                &c,
                libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW,
            )
            .map_err(|e| {
                let link = is_link_error(&e)
                    || (e.raw_os_error() == Some(libc::ENOTDIR)
                        && matches!(entry_at(at, &c), Ok(Entry::Link)));
                EngineError::Params(if link {
                    format!(
                        "params dir {}: a symbolic link (refused: params dirs are reached \
                         without following links; was it swapped after the request?)",
                        path.display()
                    )
                } else {
                    format!("params dir {}: {e}", path.display())
                })
            })?;
        }
        Ok(Self { fd, path })
    }

    /// The directory's path as given (for messages).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// `name`'s path in the directory (for messages).
    pub fn shown(&self, name: &OsStr) -> PathBuf {
        self.path.join(name)
    }

    /// The directory's handle, for the core's loader.
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// Opens `name` as `how` says, never following a link: a link there
    /// is an error saying so.
    pub fn open_file(&self, name: &OsStr, how: Open) -> io::Result<File> {
        let c = one_name(name)?;
        let flags = libc::O_NOFOLLOW
            | libc::O_NOCTTY
            | match how {
                Open::Read => libc::O_RDONLY | libc::O_NONBLOCK,
                Open::ReadWriteCreate => libc::O_RDWR | libc::O_CREAT,
                Open::WriteTruncate => libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC,
            };
        match openat(self.fd.as_raw_fd(), &c, flags) {
            Ok(fd) => {
                let f = File::from(fd);
                if how == Open::Read {
                    let meta = f.metadata()?;
                    if !meta.is_file() {
                        return Err(io::Error::new(
                            io::ErrorKind::InvalidInput,
                            "not a regular file",
                        ));
                    }
                    // SAFETY: fcntl on the descriptor `f` owns, alive for
                    // the call; clears O_NONBLOCK so reads are plain.
                    unsafe { libc::fcntl(f.as_raw_fd(), libc::F_SETFL, 0) };
                }
                Ok(f)
            }
            Err(e) if is_link_error(&e) => Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "a symbolic link (refused: files in a params dir are opened without following \
                 links)",
            )),
            Err(e) => Err(e),
        }
    }

    /// What `name` is, without following a link.
    pub fn entry(&self, name: &OsStr) -> io::Result<Entry> {
        entry_at(self.fd.as_raw_fd(), &one_name(name)?)
    }

    /// Renames `from` to `to`, both in the directory (a link at `to` is
    /// replaced, not followed).
    pub fn rename(&self, from: &OsStr, to: &OsStr) -> io::Result<()> {
        let (a, b) = (one_name(from)?, one_name(to)?);
        let fd = self.fd.as_raw_fd();
        // SAFETY: both names are NUL-terminated and alive for the call,
        // relative to the directory descriptor we own.
        if unsafe { libc::renameat(fd, a.as_ptr(), fd, b.as_ptr()) } == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }

    /// Removes the file (or link) `name` of the directory.
    pub fn remove(&self, name: &OsStr) -> io::Result<()> {
        let c = one_name(name)?;
        // SAFETY: `c` is NUL-terminated and alive for the call, relative
        // to the directory descriptor we own.
        if unsafe { libc::unlinkat(self.fd.as_raw_fd(), c.as_ptr(), 0) } == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }

    /// The names in the directory (without "." and "..").
    pub fn names(&self) -> io::Result<Vec<OsString>> {
        let dup = self.fd.try_clone()?;
        // SAFETY: fdopendir takes ownership of the duplicated descriptor
        // (released from `dup` only on success); the stream is read until
        // its end and closed once, here; each entry's name is a
        // NUL-terminated string valid until the next readdir, copied
        // before it.
        unsafe {
            let raw = dup.as_raw_fd();
            let dir = libc::fdopendir(raw);
            if dir.is_null() {
                return Err(io::Error::last_os_error());
            }
            std::mem::forget(dup);
            let mut out = Vec::new();
            loop {
                let e = libc::readdir(dir);
                if e.is_null() {
                    break;
                }
                let name = std::ffi::CStr::from_ptr((*e).d_name.as_ptr()).to_bytes();
                if name != b"." && name != b".." {
                    out.push(OsString::from_vec(name.to_vec()));
                }
            }
            libc::closedir(dir);
            Ok(out)
        }
    }
}
