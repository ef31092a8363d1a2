//! What a daemon is allowed to do: its params dirs, queue and request
//! limits, key budget and token.

use std::path::PathBuf;

#[derive(Debug, Clone)]
pub struct ServiceConfig {
    /// Keys are read from and written to these directories only; the first
    /// is the default. Requests can name a directory inside one of them.
    pub params_dirs: Vec<PathBuf>,
    /// Jobs queued or running at most; past it, submit answers "busy".
    pub max_queue: usize,
    /// Jobs running on the engine at once (their items share the devices
    /// by priority).
    pub max_running: usize,
    /// Largest request accepted, in bytes: a built-in job's submit and
    /// every request but a Filecoin job's.
    pub max_request_bytes: usize,
    /// Limits of built-in jobs.
    pub max_partitions: u32,
    pub max_log_constraints: u32,
    /// Host memory the resident keys may take, built-in and Filecoin
    /// (one store); `None`: half the host memory available at start.
    pub key_budget_bytes: Option<u64>,
    /// Required on every request when set (`authorization: Bearer TOKEN`);
    /// a daemon listening on anything but loopback must have one.
    pub token: Option<String>,
    /// Finished jobs remembered for await and status.
    pub keep_finished: usize,
    /// Take Filecoin jobs (builds with the `filecoin` feature).
    pub filecoin: bool,
    /// Filecoin jobs prove with the TEST parameters of this directory
    /// (seeded, from `cuda-prover-filecoin test-params`) instead of
    /// filecoin-proofs' parameter cache (`FIL_PROOFS_PARAMETER_CACHE`).
    pub filecoin_test_params: Option<PathBuf>,
    /// Largest Filecoin C2 request (the C1 output is in it: a 32 GiB
    /// sector's is about 50 MB), in bytes.
    pub max_filecoin_request_bytes: usize,
    /// Client connections open at once (lowered to what the open-file
    /// limit leaves); more are closed as they arrive.
    pub max_connections: usize,
    /// A connection that sends nothing for this long is closed (live
    /// clients answer the server's pings well within it).
    pub idle_timeout: std::time::Duration,
    /// Accepted jobs are journaled here (`jobs.journal`) before their
    /// submission answers, and taken back by the next start.
    pub state_dir: Option<PathBuf>,
    /// A finished job (its result and proofs) is kept this long after it
    /// ended, for await and status, then forgotten and dropped from the
    /// journal (at most `keep_finished` are kept either way).
    pub retention: std::time::Duration,
    /// Keys loaded and pinned at start; the health service reports
    /// SERVING once they are all in place.
    pub preload: Vec<crate::health::Preload>,
}

impl Default for ServiceConfig {
    fn default() -> Self {
        Self {
            params_dirs: vec![PathBuf::from("params-cache")],
            max_queue: 256,
            max_running: 4,
            max_request_bytes: 64 << 10,
            max_partitions: 10_000,
            max_log_constraints: 26,
            key_budget_bytes: None,
            token: None,
            keep_finished: 10_000,
            filecoin: true,
            filecoin_test_params: None,
            max_filecoin_request_bytes: 64 << 20,
            max_connections: 512,
            idle_timeout: std::time::Duration::from_secs(60),
            state_dir: None,
            retention: std::time::Duration::from_secs(24 * 3600),
            preload: Vec::new(),
        }
    }
}
