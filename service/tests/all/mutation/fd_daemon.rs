//! The fd class's daemon: a `serve` process under `ulimit -n NOFILE` with a
//! short idle timeout, its log in a file, its soft file limit read and set
//! from outside (`prlimit`), its open descriptors counted; killed when
//! dropped.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_cuda-prover-service");

/// The open-file limit of the fd class's daemon: its connection bound is
/// this less the descriptors it keeps for itself.
pub(super) const NOFILE: u64 = 96;
/// Its idle timeout, seconds.
pub(super) const IDLE_S: u64 = 2;

/// The daemon process of the fd class; killed when dropped.
pub(super) struct Proc {
    pub(super) child: Child,
    pub(super) addr: String,
    pub(super) log: PathBuf,
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Proc {
    /// `serve` under `ulimit -n NOFILE`, its log in a file.
    pub(super) fn start(dir: &Path) -> Proc {
        let log = dir.join("daemon.log");
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(format!("ulimit -n {NOFILE} && exec \"$0\" \"$@\""))
            .arg(BIN)
            .args(["serve", "--listen", "127.0.0.1:0", "--backend", "host"])
            .args([
                "--host-devices",
                "1",
                "--idle-timeout-s",
                &IDLE_S.to_string(),
            ])
            .arg("--params-dir")
            .arg(dir.join("params"))
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(child.stdout.take().unwrap()),
            &mut line,
        )
        .unwrap();
        let addr = match line.trim().strip_prefix("listening on ") {
            Some(a) => a.to_string(),
            None => panic!(
                "the daemon did not start under ulimit -n {NOFILE}: {line:?} {}",
                std::fs::read_to_string(&log).unwrap_or_default()
            ),
        };
        Proc { child, addr, log }
    }

    /// None while it runs; its exit status once it ended.
    pub(super) fn ended(&mut self) -> Option<std::process::ExitStatus> {
        self.child.try_wait().unwrap()
    }

    /// Its soft limit of open files set to `soft` (the hard one kept);
    /// returns the soft limit before.
    pub(super) fn set_soft_nofile(&self, soft: u64) -> u64 {
        let pid = self.child.id() as libc::pid_t;
        let mut old = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: prlimit reads the limit of a process this test started
        // into `old`, a live, writable rlimit; no new limit is passed.
        let rc = unsafe { libc::prlimit(pid, libc::RLIMIT_NOFILE, std::ptr::null(), &mut old) };
        assert_eq!(rc, 0, "prlimit: {}", std::io::Error::last_os_error());
        let new = libc::rlimit {
            rlim_cur: soft,
            rlim_max: old.rlim_max,
        };
        // SAFETY: as above; `new` is a live rlimit the call only reads.
        let rc = unsafe { libc::prlimit(pid, libc::RLIMIT_NOFILE, &new, std::ptr::null_mut()) };
        assert_eq!(rc, 0, "prlimit: {}", std::io::Error::last_os_error());
        old.rlim_cur
    }

    pub(super) fn open_fds(&self) -> u64 {
        std::fs::read_dir(format!("/proc/{}/fd", self.child.id()))
            .map(|d| d.count() as u64)
            .unwrap_or(0)
    }
}
