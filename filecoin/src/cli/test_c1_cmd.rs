//! `test-c1`: a valid C1 output for a committed-capacity sector of any size
//! without sealing (a test fixture: the fixture picks its own challenge
//! seed, see `test_c1`). The last stdout line is `prover_id HEX sector_id
//! N`, what `c2 --prover-id --sector-id` takes.

use std::path::PathBuf;

use crate::config::{RegisteredSeal, SealVersion};
use crate::error::{FilecoinError, Result};
use crate::sector::SectorSize;
use crate::test_c1::{generate_test_c1, wrapper};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Sector size: 2KiB, 8MiB, 512MiB, 32GiB, 64GiB (or a test size).
    #[arg(long)]
    sector_size: SectorSize,
    /// Everything is drawn from it: prover id, sector id, ticket, challenge
    /// seed, the labels and tree nodes nothing opens. Same seed, same bytes.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Where the C1 goes: filecoin-proofs' SealCommitPhase1Output JSON.
    #[arg(long)]
    out: PathBuf,
    /// Write lotus-bench / Curio's {"SectorNum","Phase1Out","SectorSize"}
    /// wrapper instead, marked "test_fixture": true (the file name must
    /// contain "test").
    #[arg(long)]
    wrapper: bool,
}

pub fn run(a: Args) -> Result<()> {
    if a.wrapper {
        wrapper::check_fixture_name(&a.out)?;
    }
    let registered = RegisteredSeal::new(a.sector_size, SealVersion::V1_1);
    let c1 = generate_test_c1(registered, a.seed)?;
    let bytes = if a.wrapper {
        wrapper::wrap(&c1.c1_json, c1.identity.sector_id, a.sector_size)?
    } else {
        c1.c1_json.clone()
    };
    std::fs::write(&a.out, &bytes)
        .map_err(|e| FilecoinError::io(format!("writing {}", a.out.display()), e))?;
    eprintln!(
        "TEST FIXTURE: the challenge seed was chosen by this generator, and no replica lies \
         behind comm_r; C2 accepts it, the chain never would"
    );
    println!(
        "{registered} CC sector, seed {}: {} partition(s) x {} challenges, {} columns opened; \
         built in {:.2} s, vanilla proofs checked by storage-proofs in {:.2} s",
        a.seed,
        c1.partitions,
        c1.challenges_per_partition,
        c1.columns,
        c1.build.as_secs_f64(),
        c1.verify.as_secs_f64()
    );
    println!(
        "{} bytes ({}) written to {}",
        bytes.len(),
        if a.wrapper {
            "lotus-bench / Curio wrapper"
        } else {
            "SealCommitPhase1Output JSON"
        },
        a.out.display()
    );
    println!(
        "comm_d {} comm_r {} ticket {} seed {}",
        hex(&c1.comm_d),
        hex(&c1.comm_r),
        hex(&c1.identity.ticket),
        hex(&c1.identity.seed)
    );
    println!(
        "prover_id {} sector_id {}",
        hex(&c1.identity.prover_id),
        c1.identity.sector_id
    );
    Ok(())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
