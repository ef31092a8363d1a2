//! The C1 the bench proves: a sector sealed here, or `test-c1`'s
//! generator (a valid C1 of a CC sector in seconds).

use std::path::{Path, PathBuf};

use cuda_prover_filecoin::sealing::{seal_test_sector, SealTimes, SealedSector};
use cuda_prover_filecoin::test_c1::generate_test_c1;
use cuda_prover_filecoin::{FilecoinError, RegisteredSeal};

use crate::args::Args;

/// The C1 of `registered`: generated when `--c1 test` or, by default,
/// above 8 MiB; else sealed in `work`. Says which (true: generated).
pub fn c1_sector(
    a: &Args,
    registered: RegisteredSeal,
    work: &Path,
) -> Result<(SealedSector, bool), FilecoinError> {
    let test_c1 = a.test_c1.unwrap_or(a.sector_size.bytes() > 8 << 20);
    let sector = if test_c1 {
        let t = generate_test_c1(registered, a.c1_seed)?;
        println!(
            "test C1 of a {registered} CC sector: {} partitions, built in {:.2} s, checked in {:.2} s",
            t.partitions,
            t.build.as_secs_f64(),
            t.verify.as_secs_f64()
        );
        SealedSector {
            registered,
            prover_id: t.identity.prover_id,
            sector_id: t.identity.sector_id,
            ticket: t.identity.ticket,
            seed: t.identity.seed,
            comm_r: t.comm_r,
            comm_d: t.comm_d,
            replica: PathBuf::new(),
            cache: PathBuf::new(),
            c1_json: t.c1_json,
            times: SealTimes {
                add_piece: Default::default(),
                pc1: Default::default(),
                pc2: Default::default(),
                c1: t.build + t.verify,
            },
        }
    } else {
        let sector = seal_test_sector(registered, work, a.c1_seed)?;
        println!(
            "sealed {registered} sector (PC1 {:.2} s, PC2 {:.2} s, C1 {:.2} s)",
            sector.times.pc1.as_secs_f64(),
            sector.times.pc2.as_secs_f64(),
            sector.times.c1.as_secs_f64()
        );
        sector
    };
    Ok((sector, test_c1))
}
