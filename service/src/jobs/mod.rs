//! The daemon's jobs: a bounded queue ordered by priority (then by
//! arrival: fairness within a priority), `max_running` runner threads that
//! run jobs on the engine concurrently (the engine's priority gate orders
//! their items on the devices), cancellation, deadlines and each job's
//! state for await and status.

mod cancel;
mod entry;
mod finish;
mod queue;
mod restore;
mod result;
mod run;
mod spec;
mod start;

use std::cmp::Reverse;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Duration;

use cuda_prover_engine::gate::Priority;
use cuda_prover_engine::Engine;
use parking_lot::{Condvar, Mutex};

use crate::keys::Keys;
use crate::metrics::Metrics;

pub use entry::{JobEntry, Snapshot};
pub use queue::SubmitError;
pub use result::{JobResult, Timings};
pub use spec::{CancelReason, JobSpec, JobState, Origin, Work};

#[derive(Default)]
struct Inner {
    /// (Reverse(priority), arrival) -> job: most urgent, then oldest first.
    queue: BTreeMap<(Reverse<Priority>, u64), Arc<JobEntry>>,
    running: HashMap<u64, Arc<JobEntry>>,
    all: HashMap<u64, Arc<JobEntry>>,
    finished: VecDeque<u64>,
    draining: bool,
    stopping: bool,
}

pub struct Jobs {
    inner: Mutex<Inner>,
    work: Condvar,
    idle: Condvar,
    next_id: AtomicU64,
    /// This daemon run's half of every job id (`job_id`).
    instance: u64,
    engine: Arc<Engine>,
    keys: Arc<Keys>,
    #[cfg(feature = "filecoin")]
    filecoin: Option<Arc<crate::filecoin::FilecoinJobs>>,
    pub metrics: Arc<Metrics>,
    /// Partitions proved per device (engine order).
    pub device_partitions: Vec<AtomicU64>,
    max_queue: usize,
    keep_finished: usize,
    /// A finished job is forgotten (and dropped from the journal) this long
    /// after it ended.
    retention: Duration,
    journal: Option<Arc<crate::journal::Journal>>,
}

/// How many jobs the table queues, runs at once and keeps once finished, and
/// for how long it keeps them (`serve`'s `--max-queue`, `--max-running`,
/// `--keep-finished`, `--retention`).
#[derive(Clone, Copy, Debug)]
pub struct JobLimits {
    pub max_queue: usize,
    pub max_running: usize,
    pub keep_finished: usize,
    pub retention: Duration,
}
