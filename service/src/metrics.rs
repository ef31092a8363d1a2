//! The daemon's counters, as Prometheus text.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};

/// Upper bounds (seconds) of the job latency histogram.
const BUCKETS: [f64; 12] = [
    0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 120.0,
];

#[derive(Default)]
pub struct Metrics {
    pub submitted: AtomicU64,
    pub rejected_busy: AtomicU64,
    pub done: AtomicU64,
    pub failed: AtomicU64,
    pub cancelled: AtomicU64,
    pub proofs: AtomicU64,
    latency_buckets: [AtomicU64; BUCKETS.len()],
    latency_count: AtomicU64,
    latency_sum_us: AtomicU64,
}

/// Values read at the time of a scrape.
pub struct Gauges {
    pub queued: usize,
    pub running: usize,
    pub key_bytes: u64,
    pub key_budget: u64,
    pub key_evictions: u64,
    pub resident_keys: usize,
    /// (ordinal, partitions proved there)
    pub device_partitions: Vec<(u32, u64)>,
}

impl Metrics {
    /// Submission to result, for a job that finished.
    pub fn observe_latency(&self, seconds: f64) {
        for (b, c) in BUCKETS.iter().zip(&self.latency_buckets) {
            if seconds <= *b {
                c.fetch_add(1, Ordering::Relaxed);
            }
        }
        self.latency_count.fetch_add(1, Ordering::Relaxed);
        self.latency_sum_us
            .fetch_add((seconds * 1e6) as u64, Ordering::Relaxed);
    }

    pub fn to_prometheus(&self, g: &Gauges) -> String {
        let mut o = String::new();
        let mut one = |name: &str, help: &str, kind: &str, v: f64| {
            let _ = writeln!(o, "# HELP cuda_prover_service_{name} {help}");
            let _ = writeln!(o, "# TYPE cuda_prover_service_{name} {kind}");
            let _ = writeln!(o, "cuda_prover_service_{name} {v}");
        };
        let c = |a: &AtomicU64| a.load(Ordering::Relaxed) as f64;
        one(
            "jobs_submitted_total",
            "Jobs accepted.",
            "counter",
            c(&self.submitted),
        );
        one(
            "jobs_rejected_busy_total",
            "Jobs refused with a full queue.",
            "counter",
            c(&self.rejected_busy),
        );
        one(
            "jobs_done_total",
            "Jobs whose proofs all verified.",
            "counter",
            c(&self.done),
        );
        one(
            "jobs_failed_total",
            "Jobs that failed.",
            "counter",
            c(&self.failed),
        );
        one(
            "jobs_cancelled_total",
            "Jobs cancelled.",
            "counter",
            c(&self.cancelled),
        );
        one(
            "proofs_total",
            "Verified proofs returned.",
            "counter",
            c(&self.proofs),
        );
        one(
            "jobs_queued",
            "Jobs waiting to run.",
            "gauge",
            g.queued as f64,
        );
        one("jobs_running", "Jobs running.", "gauge", g.running as f64);
        one(
            "resident_keys",
            "Keys resident.",
            "gauge",
            g.resident_keys as f64,
        );
        one(
            "resident_key_bytes",
            "Device bytes of the resident keys.",
            "gauge",
            g.key_bytes as f64,
        );
        one(
            "key_budget_bytes",
            "Device bytes keys may take.",
            "gauge",
            g.key_budget as f64,
        );
        one(
            "key_evictions_total",
            "Keys evicted to make room.",
            "counter",
            g.key_evictions as f64,
        );
        let _ = writeln!(
            o,
            "# HELP cuda_prover_service_device_partitions_total Partitions proved per device."
        );
        let _ = writeln!(
            o,
            "# TYPE cuda_prover_service_device_partitions_total counter"
        );
        for (d, n) in &g.device_partitions {
            let _ = writeln!(
                o,
                "cuda_prover_service_device_partitions_total{{device=\"{d}\"}} {n}"
            );
        }
        let _ = writeln!(
            o,
            "# HELP cuda_prover_service_job_latency_seconds Submission to result."
        );
        let _ = writeln!(
            o,
            "# TYPE cuda_prover_service_job_latency_seconds histogram"
        );
        for (b, n) in BUCKETS.iter().zip(&self.latency_buckets) {
            let _ = writeln!(
                o,
                "cuda_prover_service_job_latency_seconds_bucket{{le=\"{b}\"}} {}",
                c(n)
            );
        }
        let count = c(&self.latency_count);
        let _ = writeln!(
            o,
            "cuda_prover_service_job_latency_seconds_bucket{{le=\"+Inf\"}} {count}"
        );
        let _ = writeln!(
            o,
            "cuda_prover_service_job_latency_seconds_sum {}",
            c(&self.latency_sum_us) / 1e6
        );
        let _ = writeln!(o, "cuda_prover_service_job_latency_seconds_count {count}");
        o
    }
}
