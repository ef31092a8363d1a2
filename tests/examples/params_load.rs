//! Measures proving-key load time with and without the verified digest:
//! `cargo run --profile test -p cuda-prover-tests --example params_load --
//! DIR 16,20 [quick]` (quick: skip the third load, which repeats the first).
//!
//! Writes a params file with the shape of the built-in `chain` circuit at
//! each size (points made by repeated addition: valid group elements,
//! quick to make, meaningless as a key) and loads it four ways: the first
//! checked load (subgroup checks, digest written), a load with a matching
//! digest, a checked load that ignores the digest, and a trusted load (no
//! subgroup checks).
use std::io::Write;

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective};
use cuda_prover_bellperson::circuits::{BuiltIn, Kind};
use cuda_prover_bellperson::{synthesize, KeyCheck, ProvingKey};
use group::{prime::PrimeCurveAffine, Curve, Group};

fn points_g1(n: usize, start: u64) -> Vec<G1Affine> {
    let g = G1Projective::generator();
    let mut acc = g * blstrs::Scalar::from(start);
    let mut proj = Vec::with_capacity(n);
    for _ in 0..n {
        acc += g;
        proj.push(acc);
    }
    let mut out = vec![G1Affine::identity(); n];
    G1Projective::batch_normalize(&proj, &mut out);
    out
}

fn points_g2(n: usize, start: u64) -> Vec<G2Affine> {
    let g = G2Projective::generator();
    let mut acc = g * blstrs::Scalar::from(start);
    let mut proj = Vec::with_capacity(n);
    for _ in 0..n {
        acc += g;
        proj.push(acc);
    }
    let mut out = vec![G2Affine::identity(); n];
    G2Projective::batch_normalize(&proj, &mut out);
    out
}

fn write_key(path: &std::path::Path, log: u32) -> [usize; 6] {
    let s = synthesize(BuiltIn::new(Kind::Chain, log, 0).unwrap()).unwrap();
    let m = s.num_constraints().next_power_of_two();
    let b = s.b_input_density.count() + s.b_aux_density.count();
    let shape = [
        s.inputs.len(),
        m - 1,
        s.aux.len(),
        s.inputs.len() + s.a_aux_density.count(),
        b,
        b,
    ];
    let mut w = std::io::BufWriter::with_capacity(1 << 22, std::fs::File::create(path).unwrap());
    let g1 = points_g1(3, 1);
    let g2 = points_g2(3, 1);
    for p in [&g1[0], &g1[1]] {
        w.write_all(&p.to_uncompressed()).unwrap();
    }
    for p in [&g2[0], &g2[1]] {
        w.write_all(&p.to_uncompressed()).unwrap();
    }
    w.write_all(&g1[2].to_uncompressed()).unwrap();
    w.write_all(&g2[2].to_uncompressed()).unwrap();
    for (i, &n) in shape.iter().enumerate() {
        w.write_all(&(n as u32).to_be_bytes()).unwrap();
        if i < 5 {
            for p in points_g1(n, 10 + i as u64 * (1 << 40)) {
                w.write_all(&p.to_uncompressed()).unwrap();
            }
        } else {
            for p in points_g2(n, 10) {
                w.write_all(&p.to_uncompressed()).unwrap();
            }
        }
    }
    w.flush().unwrap();
    shape
}

fn main() {
    let mut args = std::env::args().skip(1);
    let dir = std::path::PathBuf::from(args.next().unwrap_or_else(|| "/tmp".into()));
    let logs: Vec<u32> = args
        .next()
        .unwrap_or_else(|| "16".into())
        .split(',')
        .map(|s| s.parse().unwrap())
        .collect();
    let quick = args.next().as_deref() == Some("quick");
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!("hardware threads: {threads}");
    for log in logs {
        let path = dir.join(format!("load-chain-2^{log}.params"));
        let t = std::time::Instant::now();
        let shape = write_key(&path, log);
        let bytes = std::fs::metadata(&path).unwrap().len();
        println!(
            "2^{log}: {} MB, shape {:?}, written in {:.1} s",
            bytes / 1_000_000,
            shape,
            t.elapsed().as_secs_f64()
        );
        let _ = std::fs::remove_file(format!("{}.verified", path.display()));
        for (what, check) in [
            ("first load, full check, digest written", KeyCheck::Full),
            ("load with matching digest", KeyCheck::Full),
            ("full check, digest ignored", KeyCheck::FullNoDigest),
            ("trusted (no subgroup check)", KeyCheck::TrustedUnchecked),
        ] {
            if quick && check == KeyCheck::FullNoDigest {
                continue;
            }
            let t = std::time::Instant::now();
            let (_, r) = ProvingKey::load_file(&path, check).unwrap();
            println!(
                "  {what}: {:.2} s (read+decode+hash {:.2} s, subgroup {:.2} s; {:?}, {} points)",
                t.elapsed().as_secs_f64(),
                r.read.as_secs_f64(),
                r.subgroup_time.as_secs_f64(),
                r.subgroup,
                r.points
            );
        }
        std::fs::remove_file(&path).ok();
        std::fs::remove_file(format!("{}.verified", path.display())).ok();
    }
}
