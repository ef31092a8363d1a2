//! What a job reports: per partition, per device and for the job, as JSON
//! and as Prometheus text.
//!
//! The reports' types and their JSON are here; the report built from an
//! engine run is `build`'s, its Prometheus text `prometheus`'s, its lines
//! for people `summary`'s.

mod build;
mod prometheus;
mod summary;

use serde::Serialize;

use cuda_prover_engine::TrimReport;

pub(crate) use build::job_report;

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

impl JobReport {
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("report serializes")
    }
}
