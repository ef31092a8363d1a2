//! Times the host backend on one built-in circuit: `cargo run --release -p
//! cuda-prover-tests --example host_prove -- chain 14`.
use cuda_prover_bellperson::circuits::BuiltIn;
use cuda_prover_bellperson::Placement;
use cuda_prover_bellperson::{prove_from_assignments, synthesize, Blinding, Context, ProvingKey};
use rand_chacha::ChaCha8Rng;
use rand_core::SeedableRng;

fn main() {
    let mut args = std::env::args().skip(1);
    let kind = args
        .next()
        .unwrap_or_else(|| "chain".into())
        .parse()
        .unwrap();
    let log: u32 = args.next().and_then(|a| a.parse().ok()).unwrap_or(14);
    let shape = BuiltIn::new(kind, log, 0).unwrap();
    let params = shape
        .generate_params(&mut ChaCha8Rng::seed_from_u64(1))
        .unwrap();
    let key = ProvingKey::from_params(&params).unwrap();
    let s = vec![synthesize(BuiltIn::new(kind, log, 3).unwrap()).unwrap()];
    let bl = Blinding::random_vec(&mut ChaCha8Rng::seed_from_u64(2), 1);
    let ctx = Context::host(1).unwrap();
    for _ in 0..3 {
        let t = std::time::Instant::now();
        let o = prove_from_assignments(&ctx, &key, &s, &bl, &Placement::on(0)).unwrap();
        let p = &o[0].timings;
        println!(
            "{:.3} s: ntt {:.0} h {:.0} l {:.0} a {:.0} b1 {:.0} b2 {:.0} ms",
            t.elapsed().as_secs_f64(),
            p.ntt_ns as f64 / 1e6,
            p.msm_h_ns as f64 / 1e6,
            p.msm_l_ns as f64 / 1e6,
            p.msm_a_ns as f64 / 1e6,
            p.msm_b_g1_ns as f64 / 1e6,
            p.msm_b_g2_ns as f64 / 1e6
        );
    }
}
