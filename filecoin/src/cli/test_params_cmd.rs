//! `test-params`: make TEST parameters ahead of time (a GPU machine starts
//! empty; CI caches the directory).

use std::path::PathBuf;

use crate::error::Result;
use crate::sector::SectorSize;
use crate::test_params::{
    default_test_parameter_dir, ensure_test_parameters_with, use_test_parameter_dir, Generator,
    TestCircuit,
};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Sector size.
    #[arg(long, default_value = "2KiB")]
    sector_size: SectorSize,
    /// Where to keep them (default: $CUDA_PROVER_FILECOIN_TEST_PARAMS, else
    /// the user cache directory).
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Which circuits: porep, winning-post, window-post, snapdeals (comma separated).
    #[arg(
        long,
        default_value = "porep,winning-post,window-post,snapdeals",
        value_delimiter = ','
    )]
    circuits: Vec<String>,
    /// Which generator makes missing ones: `shape` (from the circuit's
    /// shape, seconds) or `bellperson` (bellperson's own, minutes).
    #[arg(long, default_value = "shape")]
    generator: Generator,
}

pub fn run(a: Args) -> Result<()> {
    let dir = match a.dir {
        Some(d) => d,
        None => default_test_parameter_dir()?,
    };
    let dir = use_test_parameter_dir(&dir)?;
    let mut circuits = Vec::new();
    for c in &a.circuits {
        circuits.push(match c.as_str() {
            "porep" => TestCircuit::Porep(a.sector_size),
            "winning-post" => TestCircuit::WinningPost(a.sector_size),
            "window-post" => TestCircuit::WindowPost(a.sector_size),
            "snapdeals" => TestCircuit::SnapDeals(a.sector_size),
            o => {
                return Err(crate::FilecoinError::Input(format!(
                    "unknown circuit '{o}' (porep, winning-post, window-post, snapdeals)"
                )))
            }
        });
    }
    ensure_test_parameters_with(&circuits, a.generator, |m| eprintln!("{m}"))?;
    println!("test parameters for {} in {}", a.sector_size, dir.display());
    Ok(())
}
