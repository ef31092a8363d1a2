//! Witness-only synthesis of a built-in circuit against its arithmetic
//! alone: for chain, the squarings without storing anything; the gap is
//! what storing the assignment costs.
//!
//!     cargo run --release -p cuda-prover-bellperson --example witness_timing -- [LOG] [RUNS]
use std::time::Instant;

use cuda_prover_bellperson::circuits::{BuiltIn, Kind};
use cuda_prover_bellperson::{synthesize_witness, Scalar, SizeHint};
use ff::Field;

fn main() {
    let mut args = std::env::args().skip(1);
    let log: u32 = args.next().map_or(20, |s| s.parse().expect("LOG"));
    let runs: usize = args.next().map_or(3, |s| s.parse().expect("RUNS"));
    let steps = (1usize << log) - 2;
    let hint = SizeHint {
        constraints: 1 << log,
        inputs: 2,
        aux: steps,
    };
    for run in 0..runs {
        let t = Instant::now();
        let mut x = Scalar::from(3u64);
        let seven = Scalar::from(7u64);
        for _ in 0..steps {
            x = x.square() + seven;
        }
        std::hint::black_box(x);
        let squarings = t.elapsed().as_secs_f64() * 1e3;
        let circuit = BuiltIn::new(Kind::Chain, log, run as u64).expect("log in range");
        let t = Instant::now();
        let w = synthesize_witness(circuit, hint).expect("synthesis");
        let witness = t.elapsed().as_secs_f64() * 1e3;
        assert_eq!(w.aux.len(), steps);
        assert_eq!(w.public_inputs(), [circuit.public_input()]);
        println!(
            "chain 2^{log}: squarings alone {squarings:.1} ms, witness synthesis {witness:.1} ms"
        );
    }
}
