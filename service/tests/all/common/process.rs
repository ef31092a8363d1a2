//! The daemon binary as a child process, for the tests that start, kill
//! and restart it (`process`, `load_kill`, `cuzk`).

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

/// The daemon (and CLI) binary.
pub const BIN: &str = env!("CARGO_BIN_EXE_cuda-prover-service");

/// A daemon process, killed (SIGKILL) when dropped.
pub struct ChildDaemon {
    pub child: Child,
    /// What it printed after "listening on ": `host:port` or `unix://PATH`.
    pub addr: String,
}

impl Drop for ChildDaemon {
    fn drop(&mut self) {
        self.kill9();
    }
}

impl ChildDaemon {
    /// SIGKILL, and waits for the process to end.
    pub fn kill9(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `serve --listen LISTEN --backend host --host-devices N`, to which a
/// test adds its options.
pub fn serve_cmd(listen: &str, host_devices: u32) -> Command {
    let mut cmd = Command::new(BIN);
    cmd.args(["serve", "--listen", listen, "--backend", "host"])
        .args(["--host-devices", &host_devices.to_string()]);
    cmd
}

/// Starts `cmd` (a `serve`, maybe behind a shell) with its stderr in
/// `log` (None: discarded) and reads the address its first line names;
/// when it does not start, what it logged (or its first line).
pub fn try_spawn(mut cmd: Command, log: Option<&Path>) -> Result<ChildDaemon, String> {
    let stderr = match log {
        Some(l) => Stdio::from(std::fs::File::create(l).unwrap()),
        None => Stdio::null(),
    };
    let mut child = cmd.stdout(Stdio::piped()).stderr(stderr).spawn().unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    match line.trim().strip_prefix("listening on ") {
        Some(a) => Ok(ChildDaemon {
            addr: a.to_string(),
            child,
        }),
        None => {
            let _ = child.wait();
            Err(match log {
                Some(l) => std::fs::read_to_string(l).unwrap_or_default(),
                None => format!("first line: {line:?}"),
            })
        }
    }
}

/// [`try_spawn`], which must start.
pub fn spawn(cmd: Command, log: Option<&Path>) -> ChildDaemon {
    try_spawn(cmd, log).unwrap_or_else(|e| panic!("the daemon did not start: {e}"))
}

/// Runs the CLI: (exit 0, stdout, stderr).
pub fn cli(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(BIN).args(args).output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The daemon's log (the file at `log`) says the file at `journal` is not
/// a job journal and was kept aside as a damaged one.
pub fn assert_not_a_journal(log: &Path, journal: &Path) {
    let said = std::fs::read_to_string(log).unwrap();
    assert!(
        said.contains(&format!(
            "the job journal {} is not a job journal",
            journal.display()
        )) && said.contains("jobs.journal.damaged-"),
        "{said}"
    );
}
