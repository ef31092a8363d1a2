//! A job's report as Prometheus text (the exposition format).

use std::fmt::Write as _;

use super::{DeviceReport, JobReport};

fn label(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"")
}

impl JobReport {
    /// Prometheus text exposition format.
    pub fn to_prometheus(&self) -> String {
        let mut o = String::new();
        let job = label(&self.job);
        let mut metric = |name: &str, help: &str, kind: &str, rows: Vec<(String, f64)>| {
            let _ = writeln!(o, "# HELP cuda_prover_{name} {help}");
            let _ = writeln!(o, "# TYPE cuda_prover_{name} {kind}");
            for (labels, v) in rows {
                let _ = writeln!(o, "cuda_prover_{name}{{{labels}}} {v}");
            }
        };
        let jl = format!("job=\"{job}\",policy=\"{}\"", self.policy);
        metric(
            "job_wall_seconds",
            "Wall time of the job.",
            "gauge",
            vec![(jl.clone(), self.wall_s)],
        );
        metric(
            "job_proofs_per_second",
            "Partitions proved per second.",
            "gauge",
            vec![(jl.clone(), self.proofs_per_s)],
        );
        metric(
            "job_scaling_efficiency",
            "Device time over devices times wall time.",
            "gauge",
            vec![(jl.clone(), self.scaling_efficiency)],
        );
        metric(
            "job_peak_in_flight",
            "Most synthesized partitions held at once.",
            "gauge",
            vec![(jl.clone(), self.peak_in_flight as f64)],
        );
        let dev = |f: &dyn Fn(&DeviceReport) -> f64| {
            self.per_device
                .iter()
                .map(|d| (format!("{jl},device=\"{}\"", d.device), f(d)))
                .collect::<Vec<_>>()
        };
        metric(
            "device_partitions_total",
            "Partitions proved.",
            "counter",
            dev(&|d| d.partitions as f64),
        );
        metric(
            "device_busy_seconds",
            "Time with at least one device part in flight.",
            "counter",
            dev(&|d| d.busy_s),
        );
        metric(
            "device_busy_fraction",
            "Busy time over job wall time.",
            "gauge",
            dev(&|d| d.busy_fraction),
        );
        metric(
            "device_queue_wait_seconds",
            "Time partitions waited in the queue.",
            "counter",
            dev(&|d| d.queue_wait_s),
        );
        metric(
            "device_epilogue_seconds",
            "Host epilogue time.",
            "counter",
            dev(&|d| d.epilogue_s),
        );
        metric(
            "device_peak_memory_bytes",
            "Device memory held at the highest, measured.",
            "gauge",
            dev(&|d| d.peak_device_bytes as f64),
        );
        metric(
            "device_estimated_memory_bytes",
            "Device memory a partition needs, by the backend's estimate.",
            "gauge",
            dev(&|d| d.estimated_device_bytes as f64),
        );
        metric(
            "device_trim_seconds",
            "Time to trim the device's cache after the job.",
            "gauge",
            self.trims
                .iter()
                .map(|t| (format!("{jl},device=\"{}\"", t.device), t.seconds))
                .collect(),
        );
        o
    }
}
