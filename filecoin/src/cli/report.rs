//! Printing and writing where a proof's time went.

use std::path::Path;

use crate::error::{FilecoinError, Result};
use crate::JobTimes;

pub fn print_times(t: &JobTimes) {
    for line in t.partition_lines() {
        println!("  {line}");
    }
    println!(
        "  checks {:.3} s  circuits {:.3} s  key load {:.3} s  engine job {:.3} s ({} backend, devices {:?})  verify {:.3} s",
        t.checks.as_secs_f64(),
        t.circuits.as_secs_f64(),
        t.key_load.as_secs_f64(),
        t.report.wall_s,
        t.report.backend,
        t.report.devices,
        t.verify.as_secs_f64()
    );
}

pub fn write_report(path: &Path, t: &JobTimes) -> Result<()> {
    let json = serde_json::to_vec_pretty(&t.report)
        .map_err(|e| FilecoinError::Input(format!("serializing the report: {e}")))?;
    std::fs::write(path, json)
        .map_err(|e| FilecoinError::io(format!("writing {}", path.display()), e))
}
