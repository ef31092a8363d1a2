//! A proof's timings as numbers: nanoseconds in milliseconds, and the
//! core's per-phase times as a JSON object.

use cuda_prover_bellperson::ProofOutput;
use serde_json::{json, Value};

pub(crate) fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

pub(crate) fn phases(o: &ProofOutput) -> Value {
    let t = &o.timings;
    json!({
        "lock_wait_ms": ms(t.wait_ns), "upload_ms": ms(t.upload_ns), "ntt_ms": ms(t.ntt_ns),
        "msm_h_ms": ms(t.msm_h_ns), "msm_l_ms": ms(t.msm_l_ns), "msm_a_ms": ms(t.msm_a_ns),
        "msm_b_g1_ms": ms(t.msm_b_g1_ns), "msm_b_g2_ms": ms(t.msm_b_g2_ns),
        "batch_add_ms": ms(t.batch_add_ns), "eval_ms": ms(t.eval_ns), "device_ms": ms(t.device_ns),
        "epilogue_ms": ms(t.epilogue_ns), "peak_device_bytes": t.peak_device_bytes,
    })
}
