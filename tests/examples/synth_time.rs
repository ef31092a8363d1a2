//! Times synthesis of the built-in circuits, with and without size hints:
//! `cargo run --release -p cuda-prover-tests --example synth_time -- 18`.
use cuda_prover_bellperson::circuits::{BuiltIn, Kind};
use cuda_prover_bellperson::{synthesize, synthesize_sized};

fn main() {
    let log: u32 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(18);
    for kind in [Kind::Chain, Kind::Bits] {
        let hint = synthesize(BuiltIn::new(kind, log, 0).unwrap())
            .unwrap()
            .size_hint();
        for sized in [false, true] {
            let mut best = f64::MAX;
            for seed in 0..3 {
                let c = BuiltIn::new(kind, log, seed).unwrap();
                let t = std::time::Instant::now();
                let s = if sized {
                    synthesize_sized(c, hint)
                } else {
                    synthesize(c)
                }
                .unwrap();
                best = best.min(t.elapsed().as_secs_f64());
                std::hint::black_box(s);
            }
            println!(
                "{} 2^{log} (sized: {sized}): synthesis {:.3} s",
                kind.name(),
                best
            );
        }
    }
}
