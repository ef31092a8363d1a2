//! The gRPC service: checks every request (size, token, circuit, limits,
//! params dir), then hands jobs to [`Jobs`].

#[cfg(feature = "filecoin")]
mod filecoin;
mod job_view;
mod preload;
mod prover;
mod serve;
mod start;
mod submit;

use std::sync::atomic::Ordering;
use std::sync::Arc;

use tokio::sync::Notify;

use crate::config::ServiceConfig;
use crate::health::Readiness;
use crate::jobs::Jobs;
use crate::metrics::Gauges;

pub use job_view::shown_id;
pub use serve::{check_listen, serve};

/// The daemon's state behind the RPCs.
pub struct Service {
    jobs: Arc<Jobs>,
    /// The request ids of both APIs.
    requests: crate::requests::RequestIds,
    config: ServiceConfig,
    shutdown: Arc<Notify>,
    readiness: Readiness,
}

impl Service {
    pub fn jobs(&self) -> &Arc<Jobs> {
        &self.jobs
    }

    /// The request ids of both APIs.
    pub fn requests(&self) -> &crate::requests::RequestIds {
        &self.requests
    }

    pub fn config(&self) -> &ServiceConfig {
        &self.config
    }

    /// What the health service reports.
    pub fn readiness(&self) -> &Readiness {
        &self.readiness
    }

    /// Prometheus text of the daemon's metrics.
    pub fn prometheus(&self) -> String {
        let (queued, running) = self.jobs.list();
        let usage = self.jobs.keys().usage();
        let (used, budget, evictions) = (usage.used, usage.budget, usage.evictions);
        let devices = self.jobs.engine().devices();
        let g = Gauges {
            queued: queued.len(),
            running: running.len(),
            key_bytes: used,
            key_budget: budget,
            key_evictions: evictions,
            resident_keys: self.jobs.keys().list().len(),
            device_partitions: devices
                .iter()
                .zip(&self.jobs.device_partitions)
                .map(|(d, n)| (d.ordinal, n.load(Ordering::Relaxed)))
                .collect(),
        };
        self.jobs.metrics.to_prometheus(&g)
    }

    /// Resolves when a Shutdown request asks the daemon to stop.
    pub fn shutdown_signal(&self) -> Arc<Notify> {
        self.shutdown.clone()
    }
}
