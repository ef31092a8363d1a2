//! What the scalars of a PoRep partition's L MSM look like: the aux values
//! of one partition's witness (from a test C1 of any sector size), counted
//! as 0, 1, short (below 2^64) and long. The device splits the 0s and 1s off
//! an MSM (a batch addition of the 1s, nothing for the 0s) and runs
//! Pippenger over the rest only; these counts say how much of L that rest
//! is at each size. The next partition's witness is timed too: the first
//! taught the proof its challenges' size, so the next writes them in place.
//!
//! With `gadget` after the partition, the challenges' SHA-256 parts go
//! through bellpepper's gadget rather than being made from their values.
//!
//!     cargo run --release -p cuda-prover-filecoin --example witness_values -- 32GiB [partition] [gadget]

use std::time::Instant;

use cuda_prover_filecoin::c1::C1File;
use cuda_prover_filecoin::test_c1::generate_test_c1;
use cuda_prover_filecoin::{
    prepare_c2, with_sector_shape, RegisteredSeal, SealVersion, SectorSize,
};
use cuda_prover_pipeline::SizeHint;
use filecoin_proofs::MerkleTreeTrait;
use storage_proofs_core::sector::SectorId;

/// CPU seconds this process has used (user + system), from /proc.
fn cpu_s() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<f64> = after
        .split_whitespace()
        .map(|x| x.parse().unwrap_or(0.0))
        .collect();
    // Fields 14 and 15 of the line (utime, stime), in clock ticks of 1/100 s.
    f.get(11)
        .zip(f.get(12))
        .map_or(0.0, |(u, s)| (u + s) / 100.0)
}

fn count<Tree: 'static + MerkleTreeTrait>(size: SectorSize, partition: usize, native: bool) {
    let registered = RegisteredSeal::new(size, SealVersion::V1_1);
    let t = Instant::now();
    let c1 = generate_test_c1(registered, 1).expect("test C1");
    println!(
        "test C1 of {registered}: {:.2} s",
        t.elapsed().as_secs_f64()
    );
    let config = registered.porep_config().expect("porep config");
    let out = C1File::parse(&c1.c1_json)
        .expect("C1 file")
        .output::<Tree>()
        .expect("C1 output");
    let prepared = prepare_c2::<Tree>(
        &config,
        out,
        c1.identity.prover_id,
        SectorId::from(c1.identity.sector_id),
    )
    .expect("prepare C2");
    let mut circuits: Vec<_> = prepared
        .circuits
        .into_iter()
        .map(|c| c.with_native_witness(native))
        .collect();
    assert!(partition < circuits.len(), "no such partition");
    let next = (partition + 1 < circuits.len()).then(|| circuits.remove(partition + 1));
    let circuit = circuits.swap_remove(partition);
    drop(circuits);
    let (t, c) = (Instant::now(), cpu_s());
    let w = circuit
        .parallel_witness_of(SizeHint::default())
        .expect("witness");
    println!(
        "partition {partition}: witness of {} inputs, {} aux in {:.2} s ({:.1} CPU s)",
        w.inputs.len(),
        w.aux.len(),
        t.elapsed().as_secs_f64(),
        cpu_s() - c
    );
    let (mut zeros, mut ones, mut short) = (0usize, 0usize, 0usize);
    for v in &w.aux {
        let bytes = v.to_bytes_le();
        if bytes[8..].iter().any(|&b| b != 0) {
            continue;
        }
        match u64::from_le_bytes(bytes[..8].try_into().unwrap()) {
            0 => zeros += 1,
            1 => ones += 1,
            _ => short += 1,
        }
    }
    let n = w.aux.len();
    let long = n - zeros - ones - short;
    let pct = |x: usize| 100.0 * x as f64 / n as f64;
    println!(
        "aux: 0 {zeros} ({:.1} %), 1 {ones} ({:.1} %), short {short} ({:.1} %), long {long} ({:.1} %); \
         Pippenger's share of L after the 0/1 split: {} ({:.2} M)",
        pct(zeros),
        pct(ones),
        pct(short),
        pct(long),
        short + long,
        (short + long) as f64 / 1e6
    );
    drop(w);
    // The next partition of the proof writes its challenges in place (the
    // first taught it their size).
    if let Some(next) = next {
        let (t, c) = (Instant::now(), cpu_s());
        let n = next
            .parallel_witness_of(SizeHint::default())
            .expect("witness");
        println!(
            "partition {}: witness of {} aux written in place in {:.2} s ({:.1} CPU s)",
            partition + 1,
            n.aux.len(),
            t.elapsed().as_secs_f64(),
            cpu_s() - c
        );
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let size: SectorSize = args
        .next()
        .unwrap_or_else(|| "2KiB".into())
        .parse()
        .expect("sector size");
    let partition: usize = args.next().map_or(0, |p| p.parse().expect("partition"));
    let native = args.next().as_deref() != Some("gadget");
    with_sector_shape!(size, count, size, partition, native);
}
