//! The report of a finished engine run: each partition's times from its
//! proof, each device's share and busy time (the union of its partitions'
//! device parts), the job's throughput and efficiency.

use cuda_prover_engine::Engine;
use cuda_prover_engine::EngineError;
use cuda_prover_engine::{ItemDone, TrimReport, WorkOutput};
use cuda_prover_pipeline::PartitionProof;

use super::{DeviceReport, JobReport, PartitionReport};

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
