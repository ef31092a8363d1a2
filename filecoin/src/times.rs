//! Where the time of one Filecoin proof went.

use std::time::Duration;

use cuda_prover_groth16::JobReport;

/// Host-side steps around the engine job, and the job's own report
/// (per-partition synthesis, device and epilogue times, devices used).
#[derive(Debug, Clone)]
pub struct JobTimes {
    /// Input checks, including filecoin-proofs' vanilla-proof verifier.
    pub checks: Duration,
    /// Building the partition circuits from the vanilla proofs.
    pub circuits: Duration,
    /// Loading the proving key (zero when it was already loaded).
    pub key_load: Duration,
    /// filecoin-proofs' verifier on the final bytes.
    pub verify: Duration,
    pub report: JobReport,
}

impl JobTimes {
    /// One line per partition: device, synthesis (full, or witness-only
    /// with the core's evaluation), device part, epilogue.
    pub fn partition_lines(&self) -> Vec<String> {
        self.report
            .per_partition
            .iter()
            .map(|p| {
                let synthesis = match (p.witness_ms, p.synthesis_ms) {
                    (Some(w), _) => format!(
                        "witness {:.3} s (evaluation {:.3} s)",
                        w / 1e3,
                        p.evaluation_ms / 1e3
                    ),
                    (None, Some(f)) => format!("synthesis {:.3} s", f / 1e3),
                    (None, None) => "synthesis -".into(),
                };
                format!(
                    "partition {}: device {}  {synthesis}  device {:.3} s  epilogue {:.3} s",
                    p.partition,
                    p.device,
                    p.device_ms / 1e3,
                    p.epilogue_ms / 1e3
                )
            })
            .collect()
    }
}
