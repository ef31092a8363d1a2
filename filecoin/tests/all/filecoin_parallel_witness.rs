//! A PoRep partition's witness with its challenges synthesized on every
//! core equals, value for value, the witness of one sequential synthesis of
//! filecoin-proofs' own `StackedCircuit` (built by `StackedCompound::circuit`
//! from the same C1 output), for every partition of a real 2 KiB and 8 MiB
//! sector (and, on request, of a 32 GiB test C1). (A C2 proved on that
//! path passes `verify_seal` with the bytes of the sequential path:
//! tests/filecoin_c2.rs, which proves the 2 KiB C2 once for all its
//! checks.)

use crate::common;

use std::time::{Duration, Instant};

use cuda_prover_filecoin::c1::C1File;
use cuda_prover_filecoin::seal::PorepPartition;
use cuda_prover_filecoin::sealing::{seal_test_sector, SealedSector};
use cuda_prover_filecoin::test_c1::generate_test_c1;
use cuda_prover_filecoin::{prepare_c2, RegisteredSeal, SealVersion, SectorSize};
use cuda_prover_pipeline::{synthesize_witness, SizeHint, Witness};
use filecoin_proofs::constants::{
    DefaultPieceHasher, SectorShape2KiB, SectorShape32GiB, SectorShape8MiB, SECTOR_SIZE_8_MIB,
};
use filecoin_proofs::MerkleTreeTrait;
use storage_proofs_core::compound_proof::CompoundProof;
use storage_proofs_core::sector::SectorId;
use storage_proofs_porep::stacked::{StackedCircuit, StackedCompound, StackedDrg};

use common::{sealed_2kib, stacked_public, test_params, SEED};

type Compound<Tree> = StackedCompound<Tree, DefaultPieceHasher>;
type Vanilla<Tree> = StackedDrg<'static, Tree, DefaultPieceHasher>;

/// A C1 output and the ids C2 takes with it.
struct Sector<'a> {
    registered: RegisteredSeal,
    c1_json: &'a [u8],
    prover_id: [u8; 32],
    sector_id: u64,
}

impl<'a> From<&'a SealedSector> for Sector<'a> {
    fn from(s: &'a SealedSector) -> Self {
        Sector {
            registered: s.registered,
            c1_json: &s.c1_json,
            prover_id: s.prover_id,
            sector_id: s.sector_id,
        }
    }
}

/// filecoin-proofs' partition circuits of a sealed sector, built as its
/// `seal_commit_phase2` builds them, with each partition's public inputs as
/// its verifier computes them.
fn stacked_circuits<Tree: 'static + MerkleTreeTrait>(
    sector: &Sector,
) -> Vec<(
    StackedCircuit<Tree, DefaultPieceHasher>,
    Vec<blstrs::Scalar>,
)> {
    let config = sector.registered.porep_config().unwrap();
    let c1 = C1File::parse(sector.c1_json)
        .unwrap()
        .output::<Tree>()
        .unwrap();
    let (public_inputs, pp) = stacked_public(&config, &c1);
    c1.vanilla_proofs
        .iter()
        .enumerate()
        .map(|(k, proofs)| {
            let circuit = <Compound<Tree> as CompoundProof<Vanilla<Tree>, _>>::circuit(
                &public_inputs,
                (),
                proofs,
                &pp.vanilla_params,
                Some(k),
            )
            .unwrap();
            let inputs =
                <Compound<Tree> as CompoundProof<Vanilla<Tree>, _>>::generate_public_inputs(
                    &public_inputs,
                    &pp.vanilla_params,
                    Some(k),
                )
                .unwrap();
            (circuit, inputs)
        })
        .collect()
}

/// This crate's partitions of the sector (what C2 proves).
fn partitions<Tree: 'static + MerkleTreeTrait>(sector: &Sector) -> Vec<PorepPartition<Tree>> {
    let config = sector.registered.porep_config().unwrap();
    let c1 = C1File::parse(sector.c1_json)
        .unwrap()
        .output::<Tree>()
        .unwrap();
    prepare_c2::<Tree>(
        &config,
        c1,
        sector.prover_id,
        SectorId::from(sector.sector_id),
    )
    .unwrap()
    .circuits
}

fn timed<T>(f: impl FnOnce() -> T) -> (T, Duration) {
    let t = Instant::now();
    let r = f();
    (r, t.elapsed())
}

/// The witness of each of the first `count` partitions against
/// filecoin-proofs' circuit's: the partition under the witness-only
/// constraint system (which takes the parallel path), and when `thorough`
/// also the parallel pieces directly and the partition with the parallel
/// path off. Returns the sequential and parallel times of the last
/// partition: of the first synthesis (no size hint) when `runs` is 0, else
/// the best of `runs` more with the whole circuit's sizes as the hint.
fn check_sector<Tree: 'static + MerkleTreeTrait>(
    sector: &Sector,
    count: usize,
    runs: usize,
    thorough: bool,
) -> (Duration, Duration) {
    let theirs = stacked_circuits::<Tree>(sector);
    let n = theirs.len();
    assert_eq!(
        n,
        usize::from(sector.registered.porep_config().unwrap().partitions)
    );
    let mut mine = partitions::<Tree>(sector).into_iter();
    let mut times = (Duration::MAX, Duration::MAX);
    for (k, (circuit, public_inputs)) in theirs.into_iter().enumerate().take(count) {
        let partition = mine.next().unwrap();
        let challenges = partition.challenges();
        assert!(challenges >= 2, "partition {k} has {challenges} challenges");
        let (seq, t_seq) =
            timed(|| synthesize_witness(circuit.clone(), SizeHint::default()).unwrap());
        assert_eq!(
            seq.public_inputs(),
            &public_inputs[..],
            "partition {k}: filecoin-proofs' public inputs"
        );
        let (par, t_par) = timed(|| synthesize_witness(partition, SizeHint::default()).unwrap());
        assert_same(&par, &seq, k, "partition under the witness system");
        drop(par);
        times = (t_seq, t_par);
        eprintln!(
            "partition {k}: {challenges} challenges, {} inputs, {} aux: equal \
             (sequential {:.2} s, parallel {:.2} s)",
            seq.inputs.len(),
            seq.aux.len(),
            t_seq.as_secs_f64(),
            t_par.as_secs_f64()
        );

        // A key's hint: the whole circuit's sizes.
        let hint = SizeHint {
            constraints: 0,
            inputs: seq.inputs.len(),
            aux: seq.aux.len(),
        };
        let again = || partitions::<Tree>(sector).into_iter().nth(k).unwrap();
        if thorough {
            let pieces = again().parallel_witness_of(hint).unwrap();
            assert_same(&pieces, &seq, k, "parallel pieces");
            drop(pieces);
            let off = synthesize_witness(again().with_parallel_witness(false), hint).unwrap();
            assert_same(&off, &seq, k, "partition with the parallel path off");
        }
        drop(seq);
        if runs > 0 {
            times = (Duration::MAX, Duration::MAX);
        }
        for _ in 0..runs {
            let (w, t) = timed(|| synthesize_witness(circuit.clone(), hint).unwrap());
            drop(w);
            times.0 = times.0.min(t);
            let c = again();
            let (w, t) = timed(|| synthesize_witness(c, hint).unwrap());
            drop(w);
            times.1 = times.1.min(t);
        }
    }
    times
}

fn assert_same(got: &Witness, want: &Witness, k: usize, what: &str) {
    assert_eq!(
        (got.inputs.len(), got.aux.len()),
        (want.inputs.len(), want.aux.len()),
        "partition {k}, {what}: lengths"
    );
    if let Some(i) = (0..want.inputs.len()).find(|&i| got.inputs[i] != want.inputs[i]) {
        panic!("partition {k}, {what}: input {i} differs");
    }
    if let Some(i) = (0..want.aux.len()).find(|&i| got.aux[i] != want.aux[i]) {
        panic!("partition {k}, {what}: aux {i} differs");
    }
    assert!(got == want);
}

fn report(size: &str, (seq, par): (Duration, Duration)) {
    eprintln!(
        "{size} witness of one partition on {} threads: sequential {:.2} ms, \
         parallel {:.2} ms ({:.2}x)",
        threads(),
        seq.as_secs_f64() * 1e3,
        par.as_secs_f64() * 1e3,
        seq.as_secs_f64() / par.as_secs_f64()
    );
}

fn threads() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
}

#[test]
fn parallel_witness_equals_filecoin_proofs_circuit_2kib() {
    let times = check_sector::<SectorShape2KiB>(&sealed_2kib().into(), usize::MAX, 3, true);
    report("2 KiB", times);
}

#[test]
fn parallel_witness_equals_filecoin_proofs_circuit_8mib() {
    test_params(&[]);
    let dir = std::env::temp_dir().join(format!(
        "cuda-prover-filecoin-test-{}-8mib",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let registered = RegisteredSeal::new(
        SectorSize::new(SECTOR_SIZE_8_MIB).unwrap(),
        SealVersion::V1_1,
    );
    let (sector, t) = timed(|| seal_test_sector(registered, &dir, SEED).expect("sealing 8 MiB"));
    eprintln!(
        "sealed 8 MiB in {:.1} s (pc1 {:.1}, pc2 {:.1}, c1 {:.1})",
        t.as_secs_f64(),
        sector.times.pc1.as_secs_f64(),
        sector.times.pc2.as_secs_f64(),
        sector.times.c1.as_secs_f64()
    );
    let times = check_sector::<SectorShape8MiB>(&(&sector).into(), usize::MAX, 3, true);
    report("8 MiB", times);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A 32 GiB partition (18 challenges) from a test C1 (no sealing): its
/// parallel witness equals filecoin-proofs' circuit's. About 4 GiB per
/// witness and a minute or more of synthesis per partition on one core, so
/// it runs on request: `--ignored`; `PARTITIONS=N` checks the first N
/// (default 1).
#[test]
#[ignore]
fn parallel_witness_equals_filecoin_proofs_circuit_32gib() {
    test_params(&[]);
    let registered = RegisteredSeal::new("32GiB".parse().unwrap(), SealVersion::V1_1);
    let (c1, t) = timed(|| generate_test_c1(registered, 7).expect("32 GiB test C1"));
    eprintln!("32 GiB test C1 in {:.1} s", t.as_secs_f64());
    let sector = Sector {
        registered,
        c1_json: &c1.c1_json,
        prover_id: c1.identity.prover_id,
        sector_id: c1.identity.sector_id,
    };
    let count = std::env::var("PARTITIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1);
    let times = check_sector::<SectorShape32GiB>(&sector, count, 0, false);
    report("32 GiB", times);
}
