//! `c2`: commit phase 2 of a C1 file, verified with filecoin-proofs'
//! `verify_seal` before the proof bytes are written.

use std::path::PathBuf;

use crate::c1::Expected;
use crate::c2::{c2_from_bytes, parse_prover_id};
use crate::cli::engine_args::EngineArgs;
use crate::cli::report::print_times;
use crate::config::RegisteredSeal;
use crate::error::{FilecoinError, Result};
use crate::sector::SectorSize;
use crate::test_params::{
    default_test_parameter_dir, ensure_test_parameters, parameter_files, use_test_parameter_dir,
    TestCircuit, TestMarker,
};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The C1 output: filecoin-proofs' SealCommitPhase1Output JSON, its
    /// filecoin-proofs-api form, or lotus-bench / Curio's
    /// {"SectorNum","Phase1Out","SectorSize"} wrapper.
    #[arg(long)]
    c1: PathBuf,
    /// The miner's prover id, hex (1-32 bytes, zero-padded on the right).
    #[arg(long)]
    prover_id: String,
    #[arg(long)]
    sector_id: u64,
    /// Where the proof bytes go (written only after verify_seal accepts them).
    #[arg(long)]
    out: PathBuf,
    /// The sector size, when the file does not say it (it is checked
    /// against the file either way).
    #[arg(long)]
    sector_size: Option<SectorSize>,
    /// The registered seal proof, e.g. StackedDrg32GiBV1_1 (default: the
    /// file's, else V1_1).
    #[arg(long)]
    registered_proof: Option<RegisteredSeal>,
    /// Use TEST parameters (seeded, not the network's) from the test
    /// parameter directory, generating them if missing. Without it the
    /// parameters come from FIL_PROOFS_PARAMETER_CACHE
    /// (default /var/tmp/filecoin-proof-parameters).
    #[arg(long)]
    test_params: bool,
    /// Write the engine's job report (per-partition times, devices) as JSON.
    #[arg(long)]
    report: Option<PathBuf>,
    #[command(flatten)]
    engine: EngineArgs,
}

pub fn run(a: Args) -> Result<()> {
    let bytes = crate::c1::read_c1_file(&a.c1)?;
    let prover_id = parse_prover_id(&a.prover_id)?;
    let expected = Expected {
        size: a.sector_size,
        registered: a.registered_proof,
        sector_id: Some(a.sector_id),
    };
    // A malformed or empty C1 file is refused here, before any parameters
    // are looked for or made.
    let file = crate::c1::C1File::parse(&bytes)?;
    file.resolve(&expected)?;
    let size = a
        .sector_size
        .or(a.registered_proof.map(|r| r.size))
        .or(file.proofs_size);
    if a.test_params {
        let dir = use_test_parameter_dir(&default_test_parameter_dir()?)?;
        eprintln!("using TEST parameters from {}", dir.display());
        let size = size.ok_or_else(|| FilecoinError::SectorSize("give --sector-size".into()))?;
        ensure_test_parameters(&[TestCircuit::Porep(size)], |m| eprintln!("{m}"))?;
    } else if let Some(size) = size {
        warn_if_test_key(size)?;
    }
    let prover = a.engine.prover()?;
    let expected = Expected {
        sector_id: None,
        ..expected
    };
    let (registered, out) = c2_from_bytes(&prover, &bytes, &expected, prover_id, a.sector_id)?;
    std::fs::write(&a.out, &out.output.proof)
        .map_err(|e| FilecoinError::io(format!("writing {}", a.out.display()), e))?;
    print_times(&out.times);
    println!(
        "{registered} sector {}: {} bytes of proof verified by filecoin-proofs (verify_seal), written to {}",
        a.sector_id,
        out.output.proof.len(),
        a.out.display()
    );
    if let Some(path) = a.report {
        crate::cli::report::write_report(&path, &out.times)?;
    }
    Ok(())
}

/// Production C2 with a key marked TEST: say so loudly (the proof would
/// verify only against the same TEST key, and anyone can forge such proofs).
fn warn_if_test_key(size: SectorSize) -> Result<()> {
    let files = parameter_files(TestCircuit::Porep(size))?;
    if let Some(m) = TestMarker::read(&files.params) {
        eprintln!(
            "WARNING: {} holds TEST parameters ({} generator, seed {}), not the network's: \
             its proofs are worthless on chain. Use --test-params if this is intended.",
            files.params.display(),
            m.generator,
            m.seed
        );
    }
    Ok(())
}
