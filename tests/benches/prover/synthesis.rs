//! Per circuit and size: the key and shape (loaded from the cache, or made
//! once), then full and witness-only synthesis times, with their lines and
//! the row's first JSON keys.

use std::sync::Arc;
use std::time::Instant;

use cuda_prover_bellperson::circuits::{BuiltIn, Kind};
use cuda_prover_bellperson::{
    synthesize_sized, synthesize_witness, ProvingKey, Shape, Synthesized, Witness,
};
use cuda_prover_groth16::params::load_key_and_shape;
use serde_json::{json, Value};

use crate::args::Args;

/// One circuit and size, ready to prove: its key and shape, and the
/// circuit synthesized both ways with the time each took.
pub(crate) struct Prepared {
    pub(crate) kind: Kind,
    pub(crate) log: u32,
    /// The circuit the key was made for (`key_path` names its file).
    pub(crate) shape: BuiltIn,
    pub(crate) key: ProvingKey,
    pub(crate) circuit_shape: Arc<Shape>,
    /// The circuit proved (seed 42).
    pub(crate) circuit: BuiltIn,
    pub(crate) synth: Synthesized,
    pub(crate) synthesis_s: f64,
    pub(crate) witness: Witness,
    pub(crate) witness_s: f64,
}

pub(crate) fn prepare(args: &Args, kind: Kind, log: u32) -> Prepared {
    let say = |s: &str| eprintln!("{s}");
    let shape = BuiltIn::new(kind, log, 0).unwrap();
    let t = Instant::now();
    let (key, circuit_shape) = load_key_and_shape(&args.params_dir, &shape, &say).unwrap();
    // Key and shape: loaded from the cache, or made once.
    let key_load_s = t.elapsed().as_secs_f64();
    println!(
        "\n== {} 2^{log} (key and shape ready in {key_load_s:.2} s)",
        kind.name()
    );
    let circuit = BuiltIn::new(kind, log, 42).unwrap();
    let t = Instant::now();
    let synth = synthesize_sized(circuit, key.size_hint().unwrap()).unwrap();
    let synthesis_s = t.elapsed().as_secs_f64();
    println!(
        "  synthesis: {:.3} s ({} constraints)",
        synthesis_s,
        synth.num_constraints()
    );
    let mut witness_s = f64::MAX;
    let mut witness = None;
    for _ in 0..2 {
        let t = Instant::now();
        witness = Some(synthesize_witness(circuit, key.size_hint().unwrap()).unwrap());
        witness_s = witness_s.min(t.elapsed().as_secs_f64());
    }
    let witness = witness.unwrap();
    println!(
        "  witness-only synthesis: {witness_s:.3} s ({:.2}x faster); {} nonzeros, {} MiB on a device",
        synthesis_s / witness_s,
        circuit_shape.info().nonzeros,
        circuit_shape.info().device_bytes >> 20
    );
    Prepared {
        kind,
        log,
        shape,
        key,
        circuit_shape,
        circuit,
        synth,
        synthesis_s,
        witness,
        witness_s,
    }
}

impl Prepared {
    /// The row's keys about the circuit and its synthesis.
    pub(crate) fn row(&self) -> Value {
        json!({
            "circuit": self.kind.name(), "log": self.log, "synthesis_s": self.synthesis_s,
            "witness_s": self.witness_s,
            "shape_nonzeros": self.circuit_shape.info().nonzeros,
            "constraints": self.synth.num_constraints(),
        })
    }
}
