//! The daemon's start (`Service::new`): the key store and its budget, the
//! Filecoin jobs, the journal opened and the job table started, the
//! configured preloads checked, and the jobs the journal held read back.

use std::sync::Arc;

use cuda_prover_engine::Engine;
use tokio::sync::Notify;

use crate::config::ServiceConfig;
use crate::health::Readiness;
use crate::jobs::{JobLimits, Jobs};
use crate::keys::Keys;
use crate::metrics::Metrics;

use super::Service;

impl Service {
    pub fn new(engine: Arc<Engine>, config: ServiceConfig) -> Result<Arc<Self>, String> {
        // The host memory the keys of every job may take, built-in and
        // Filecoin: one store for the daemon.
        let budget = match config.key_budget_bytes {
            Some(b) => b,
            None => cuda_prover_engine::host_memory::available_bytes()
                .map(|b| b / 2)
                .unwrap_or(u64::MAX),
        };
        let store = Arc::new(cuda_prover_groth16::KeyStore::new(budget));
        let keys = Arc::new(Keys::new(&config.params_dirs, store.clone())?);
        #[cfg(feature = "filecoin")]
        let filecoin = if config.filecoin {
            Some(Arc::new(crate::filecoin::FilecoinJobs::new(
                &engine,
                config.filecoin_test_params.as_deref(),
                store,
            )?))
        } else {
            None
        };
        let fresh = crate::job_id::new_instance();
        let (journal, restored) = match &config.state_dir {
            Some(dir) => {
                let (j, r) = crate::journal::Journal::open(dir, fresh)?;
                (Some(Arc::new(j)), Some(r))
            }
            None => (None, None),
        };
        let jobs = Jobs::start(
            engine,
            keys,
            #[cfg(feature = "filecoin")]
            filecoin,
            Arc::new(Metrics::default()),
            JobLimits {
                max_queue: config.max_queue,
                max_running: config.max_running,
                keep_finished: config.keep_finished,
                retention: config.retention,
            },
            restored.as_ref().map(|r| r.instance).unwrap_or(fresh),
            journal,
        );
        let service = Arc::new(Self {
            jobs,
            requests: Default::default(),
            config,
            shutdown: Arc::new(Notify::new()),
            readiness: Readiness::default(),
        });
        for p in &service.config.preload {
            service.preload_target(p)?;
        }
        if let Some(r) = restored {
            let n = r.records.len();
            service
                .jobs
                .restore(r.records, r.journal_instance, r.next_seq, |req| {
                    service.spec(req, None)
                });
            service.requests.read_back(&service.jobs);
            if n > 0 {
                log::info!("{n} jobs read back from the journal");
            }
        }
        Ok(service)
    }
}
