//! A job's report as a few lines for people.

use std::fmt::Write as _;

use super::JobReport;

impl JobReport {
    /// A few lines for people.
    pub fn summary(&self) -> String {
        let mut s = format!(
            "job {}: {} partitions on {} device(s) [{}] with {}, {:.3} s, {:.2} proofs/s, efficiency {:.1}%, peak in flight {}/{}\n",
            self.job,
            self.partitions,
            self.devices.len(),
            self.backend,
            self.policy,
            self.wall_s,
            self.proofs_per_s,
            100.0 * self.scaling_efficiency,
            self.peak_in_flight,
            self.in_flight_bound
        );
        for d in &self.per_device {
            let _ = writeln!(
                s,
                "  device {} ({}): {} partitions, busy {:.3} s ({:.1}%), peak memory {:.1} MiB measured, {:.1} MiB estimated",
                d.device,
                d.name,
                d.partitions,
                d.busy_s,
                100.0 * d.busy_fraction,
                d.peak_device_bytes as f64 / (1 << 20) as f64,
                d.estimated_device_bytes as f64 / (1 << 20) as f64
            );
        }
        for p in &self.per_partition {
            let synthesis = match (p.witness_ms, p.synthesis_ms) {
                (Some(w), _) => format!("witness {w:.1} ms, evaluation {:.1} ms", p.evaluation_ms),
                (None, Some(f)) => format!("synthesis {f:.1} ms"),
                (None, None) => "synthesis -".to_string(),
            };
            let _ = writeln!(
                s,
                "  partition {:>3} -> device {}: {synthesis}, queue {:.1} ms, device {:.1} ms (ntt {:.1}, msm h {:.1} l {:.1} a {:.1} b1 {:.1} b2 {:.1}), epilogue {:.1} ms, host {:.1} MiB",
                p.partition, p.device, p.queue_wait_ms, p.device_ms, p.ntt_ms,
                p.msm_h_ms, p.msm_l_ms, p.msm_a_ms, p.msm_b_g1_ms, p.msm_b_g2_ms, p.epilogue_ms,
                p.host_bytes as f64 / (1 << 20) as f64
            );
        }
        s
    }
}
