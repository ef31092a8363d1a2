//! Across backends, per circuit and size: whether every backend and path
//! produced the same proof bytes for the same r, s, and the ratios of
//! their times.

use serde_json::{Map, Value};

/// Whether every proof so far had the first proof's bytes.
pub(crate) struct SameBytes {
    reference: Option<Vec<u8>>,
    pub(crate) same: bool,
}

impl SameBytes {
    pub(crate) fn new() -> Self {
        SameBytes {
            reference: None,
            same: true,
        }
    }

    /// Compares `b` with the first bytes checked (`b` itself when none were).
    pub(crate) fn check(&mut self, b: &[u8]) {
        self.same &= self.reference.get_or_insert_with(|| b.to_vec()) == b;
    }

    /// Counts a comparison made elsewhere.
    pub(crate) fn and(&mut self, same: bool) {
        self.same &= same;
    }
}

/// The ratio lines for the backends in `latency` that have both numbers,
/// then whether the proof bytes matched.
pub(crate) fn print_ratios(latency: &Map<String, Value>, same: bool) {
    let get = |b: &str, f: &str| latency.get(b).and_then(|v| v[f].as_f64());
    if let (Some(h), Some(bp)) = (
        get("host", "end_to_end_s"),
        get("bellperson", "end_to_end_s"),
    ) {
        println!("  ratio bellperson / host (end to end): {:.2}x", bp / h);
    }
    if let (Some(c), Some(bp)) = (
        get("cuda", "end_to_end_s"),
        get("bellperson", "end_to_end_s"),
    ) {
        println!("  ratio bellperson / cuda (end to end): {:.2}x", bp / c);
    }
    if let (Some(c), Some(h)) = (get("cuda", "prover_s"), get("host", "prover_s")) {
        println!("  ratio host / cuda (prover): {:.2}x", h / c);
    }
    println!("  identical proof bytes across backends: {same}");
}
