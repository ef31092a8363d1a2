//! Starting the table (`Jobs::start`: its runner threads and the deadline
//! watch) and what it was started with: the engine, the keys, the Filecoin
//! prover, its limits, whether it journals.

use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use cuda_prover_engine::Engine;
use parking_lot::{Condvar, Mutex};

use crate::keys::Keys;
use crate::metrics::Metrics;

use super::{Inner, JobLimits, Jobs};

impl Jobs {
    /// Starts `limits.max_running` runners and the deadline watch.
    pub fn start(
        engine: Arc<Engine>,
        keys: Arc<Keys>,
        #[cfg(feature = "filecoin")] filecoin: Option<Arc<crate::filecoin::FilecoinJobs>>,
        metrics: Arc<Metrics>,
        limits: JobLimits,
        instance: u64,
        journal: Option<Arc<crate::journal::Journal>>,
    ) -> Arc<Self> {
        let JobLimits {
            max_queue,
            max_running,
            keep_finished,
            retention,
        } = limits;
        let device_partitions = engine.devices().iter().map(|_| AtomicU64::new(0)).collect();
        let jobs = Arc::new(Self {
            inner: Mutex::new(Inner::default()),
            work: Condvar::new(),
            idle: Condvar::new(),
            next_id: AtomicU64::new(1),
            instance,
            engine,
            keys,
            #[cfg(feature = "filecoin")]
            filecoin,
            metrics,
            device_partitions,
            max_queue,
            keep_finished,
            retention,
            journal,
        });
        for i in 0..max_running.max(1) {
            let j = jobs.clone();
            std::thread::Builder::new()
                .name(format!("job-runner-{i}"))
                .spawn(move || j.runner())
                .expect("spawn a runner");
        }
        let j = jobs.clone();
        std::thread::Builder::new()
            .name("job-deadlines".into())
            .spawn(move || j.watch_deadlines())
            .expect("spawn the deadline watch");
        jobs
    }

    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    pub fn keys(&self) -> &Keys {
        &self.keys
    }

    /// The Filecoin prover, when the daemon takes Filecoin jobs.
    #[cfg(feature = "filecoin")]
    pub fn filecoin(&self) -> Option<&crate::filecoin::FilecoinJobs> {
        self.filecoin.as_deref()
    }

    /// The Filecoin prover, shared (for work off the runtime's threads).
    #[cfg(feature = "filecoin")]
    pub fn filecoin_handle(&self) -> Option<Arc<crate::filecoin::FilecoinJobs>> {
        self.filecoin.clone()
    }

    /// Finished jobs remembered for await and status.
    pub fn keep_finished(&self) -> usize {
        self.keep_finished
    }

    /// Jobs queued or running at most.
    pub fn max_queue(&self) -> usize {
        self.max_queue
    }

    /// Whether accepted jobs are journaled.
    pub fn journaling(&self) -> bool {
        self.journal.is_some()
    }
}
