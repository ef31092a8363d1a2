//! What a job reports: per partition, per device and for the job, as JSON
//! and as Prometheus text.

use std::fmt::Write as _;

use cuda_prover_pipeline::PartitionProof;
use serde::Serialize;

use cuda_prover_engine::Engine;
use cuda_prover_engine::EngineError;
use cuda_prover_engine::{ItemDone, TrimReport, WorkOutput};

#[derive(Debug, Clone, Serialize)]
pub struct PartitionReport {
    pub partition: usize,
    pub device: u32,
    /// Full synthesis (a, b, c on the CPU); absent on the witness path.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub synthesis_ms: Option<f64>,
    /// Witness-only synthesis; absent on the full path.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub witness_ms: Option<f64>,
    /// a, b, c evaluated and checked by the core (witness path).
    pub evaluation_ms: f64,
    /// Host bytes the partition held on its way to the device.
    pub host_bytes: usize,
    pub queue_wait_ms: f64,
    /// When its worker began and ended proving it (lock wait, device part,
    /// epilogue), in ms from the run's start: the job's timeline.
    pub prove_start_ms: f64,
    pub prove_end_ms: f64,
    pub lock_wait_ms: f64,
    pub device_ms: f64,
    pub epilogue_ms: f64,
    pub ntt_ms: f64,
    pub msm_h_ms: f64,
    pub msm_l_ms: f64,
    pub msm_a_ms: f64,
    pub msm_b_g1_ms: f64,
    pub msm_b_g2_ms: f64,
    pub batch_add_ms: f64,
    pub upload_ms: f64,
    /// Measured: the device memory the core held at its highest during the
    /// device part (CUDA: key copy, working cache, shape and the memory
    /// pool's high-water mark; host: the working cache).
    pub peak_device_bytes: u64,
    /// The backend's estimate of the same.
    pub estimated_device_bytes: u64,
    /// Chunks of the key's bases streamed through the device (0: the key
    /// was resident; see `--device-memory-limit`).
    pub stream_chunks: u64,
    /// Partitions whose device parts shared this streamed pass over the key
    /// (1: streamed alone, 0: the key was resident).
    pub stream_shared: u64,
    /// A streamed pass's memory layout: 0 whole, 1 phased with a, b, c
    /// from the host, 2 phased with the shape's rows evaluated on the
    /// device.
    pub phased: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct DeviceReport {
    pub device: u32,
    pub name: String,
    pub partitions: usize,
    /// Time with at least one of its device parts in flight (the union of
    /// their intervals: a CUDA device with two pass lanes overlaps them).
    pub busy_s: f64,
    pub busy_fraction: f64,
    pub synthesis_s: f64,
    pub queue_wait_s: f64,
    pub epilogue_s: f64,
    /// When its last worker was ready (key, shape and buffers in place,
    /// warmed up), in ms from the run's start.
    pub ready_ms: f64,
    /// The highest measured peak of its partitions, and the estimate.
    pub peak_device_bytes: u64,
    pub estimated_device_bytes: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct JobReport {
    pub job: String,
    pub backend: String,
    pub policy: String,
    pub devices: Vec<u32>,
    pub partitions: usize,
    pub wall_s: f64,
    pub proofs_per_s: f64,
    /// Device time of all partitions over (devices x wall time): 1.0 means
    /// every device was busy all the time, i.e. linear scaling against one
    /// device running the same partitions back to back.
    pub scaling_efficiency: f64,
    /// The largest per-device busy time: the job's makespan on the devices.
    pub makespan_busy_s: f64,
    pub peak_in_flight: usize,
    pub in_flight_bound: usize,
    pub verified: bool,
    /// Ordinals the core touched (its own record, see `cp_device_touched`).
    pub devices_touched: Vec<u32>,
    pub per_device: Vec<DeviceReport>,
    pub per_partition: Vec<PartitionReport>,
    pub trims: Vec<TrimReport>,
}

fn label(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"")
}

impl JobReport {
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("report serializes")
    }

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

fn ms(d: std::time::Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn ns_ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

fn partition_report(d: &ItemDone<PartitionProof>) -> PartitionReport {
    let p = &d.output;
    let t = &p.output.timings;
    PartitionReport {
        partition: d.item,
        device: d.device,
        synthesis_ms: (!p.witness_only).then(|| ms(p.synthesis)),
        witness_ms: p.witness_only.then(|| ms(p.synthesis)),
        evaluation_ms: ns_ms(t.eval_ns),
        host_bytes: p.host_bytes,
        queue_wait_ms: ms(d.queue_wait),
        prove_start_ms: ms(d.proved_from),
        prove_end_ms: ms(d.proved_until),
        lock_wait_ms: ns_ms(t.wait_ns),
        device_ms: ns_ms(t.device_ns),
        epilogue_ms: ns_ms(t.epilogue_ns),
        ntt_ms: ns_ms(t.ntt_ns),
        msm_h_ms: ns_ms(t.msm_h_ns),
        msm_l_ms: ns_ms(t.msm_l_ns),
        msm_a_ms: ns_ms(t.msm_a_ns),
        msm_b_g1_ms: ns_ms(t.msm_b_g1_ns),
        msm_b_g2_ms: ns_ms(t.msm_b_g2_ns),
        batch_add_ms: ns_ms(t.batch_add_ns),
        upload_ms: ns_ms(t.upload_ns),
        peak_device_bytes: t.peak_device_bytes,
        estimated_device_bytes: t.estimated_device_bytes,
        stream_chunks: t.stream_chunks,
        stream_shared: t.stream_shared,
        phased: t.phased,
    }
}

/// Milliseconds in which the device had at least one of these partitions'
/// device parts in flight: the union of their device intervals, each
/// ending where its epilogue began. A device with two pass lanes overlaps
/// the next device part with the tail of the one before, so the sum of
/// their times can exceed the wall time; the union cannot.
fn busy_union_ms(parts: &[&PartitionReport]) -> f64 {
    let mut spans: Vec<(f64, f64)> = parts
        .iter()
        .map(|p| {
            let end = p.prove_end_ms - p.epilogue_ms;
            (end - p.device_ms, end)
        })
        .collect();
    spans.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut total = 0.0;
    let mut open: Option<(f64, f64)> = None;
    for (s, e) in spans {
        open = match open {
            Some((os, oe)) if s <= oe => Some((os, oe.max(e))),
            Some((os, oe)) => {
                total += oe - os;
                Some((s, e))
            }
            None => Some((s, e)),
        };
    }
    if let Some((os, oe)) = open {
        total += oe - os;
    }
    total
}

/// The report of a Groth16 run whose proofs all verified.
pub(crate) fn job_report(
    engine: &Engine,
    name: String,
    out: &WorkOutput<PartitionProof>,
    trims: Vec<TrimReport>,
) -> Result<JobReport, EngineError> {
    let per_partition: Vec<PartitionReport> = out.items.iter().map(partition_report).collect();
    let wall_s = out.wall.as_secs_f64();
    let devices = engine.devices();
    let per_device: Vec<DeviceReport> = devices
        .iter()
        .enumerate()
        .map(|(i, dev)| {
            let mine: Vec<&PartitionReport> = per_partition
                .iter()
                .filter(|p| p.device == dev.ordinal)
                .collect();
            let busy_s = busy_union_ms(&mine) / 1e3;
            DeviceReport {
                device: dev.ordinal,
                name: dev.name.clone(),
                partitions: mine.len(),
                busy_s,
                busy_fraction: if wall_s > 0.0 { busy_s / wall_s } else { 0.0 },
                synthesis_s: mine
                    .iter()
                    .map(|p| p.synthesis_ms.or(p.witness_ms).unwrap_or(0.0))
                    .sum::<f64>()
                    / 1e3,
                queue_wait_s: mine.iter().map(|p| p.queue_wait_ms).sum::<f64>() / 1e3,
                ready_ms: out.ready.get(i).map(|d| ms(*d)).unwrap_or(0.0),
                epilogue_s: mine.iter().map(|p| p.epilogue_ms).sum::<f64>() / 1e3,
                peak_device_bytes: mine.iter().map(|p| p.peak_device_bytes).max().unwrap_or(0),
                estimated_device_bytes: mine
                    .iter()
                    .map(|p| p.estimated_device_bytes)
                    .max()
                    .unwrap_or(0),
            }
        })
        .collect();
    let total_busy: f64 = per_device.iter().map(|d| d.busy_s).sum();
    let n = out.items.len();
    Ok(JobReport {
        job: name,
        backend: engine.context().backend_name().to_string(),
        policy: engine.config().policy.name().to_string(),
        devices: devices.iter().map(|d| d.ordinal).collect(),
        partitions: n,
        wall_s,
        proofs_per_s: if wall_s > 0.0 { n as f64 / wall_s } else { 0.0 },
        scaling_efficiency: if wall_s > 0.0 {
            total_busy / (devices.len() as f64 * wall_s)
        } else {
            0.0
        },
        makespan_busy_s: per_device.iter().map(|d| d.busy_s).fold(0.0, f64::max),
        peak_in_flight: out.peak_in_flight,
        in_flight_bound: out.in_flight_bound,
        verified: true,
        devices_touched: engine.devices_touched()?,
        per_device,
        per_partition,
        trims,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part(end_ms: f64, device_ms: f64, epilogue_ms: f64) -> PartitionReport {
        PartitionReport {
            partition: 0,
            device: 0,
            synthesis_ms: None,
            witness_ms: None,
            evaluation_ms: 0.0,
            host_bytes: 0,
            queue_wait_ms: 0.0,
            prove_start_ms: 0.0,
            prove_end_ms: end_ms,
            lock_wait_ms: 0.0,
            device_ms,
            epilogue_ms,
            ntt_ms: 0.0,
            msm_h_ms: 0.0,
            msm_l_ms: 0.0,
            msm_a_ms: 0.0,
            msm_b_g1_ms: 0.0,
            msm_b_g2_ms: 0.0,
            batch_add_ms: 0.0,
            upload_ms: 0.0,
            peak_device_bytes: 0,
            estimated_device_bytes: 0,
            stream_chunks: 0,
            stream_shared: 0,
            phased: 0,
        }
    }

    #[test]
    fn busy_time_counts_overlapping_device_parts_once() {
        // [0, 10] and [6, 16] overlap (two lanes), [20, 25] stands alone,
        // [21, 23] lies inside it.
        let a = part(11.0, 10.0, 1.0);
        let b = part(17.0, 10.0, 1.0);
        let c = part(25.0, 5.0, 0.0);
        let d = part(23.5, 2.0, 0.5);
        let parts = [&c, &a, &d, &b];
        assert!((busy_union_ms(&parts) - 21.0).abs() < 1e-9);
        assert_eq!(busy_union_ms(&[]), 0.0);
    }
}
