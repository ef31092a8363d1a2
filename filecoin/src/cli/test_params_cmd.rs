//! `test-params`: make TEST parameters ahead of time (a GPU machine starts
//! empty; CI caches the directory).

use std::path::PathBuf;

use crate::error::Result;
use crate::sector::SectorSize;
use crate::test_params::{
    default_test_parameter_dir, ensure_test_parameters_on, use_test_parameter_dir, Generator,
    KeygenChoice, KeygenDevice, TestCircuit,
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
    /// Where the shape generator computes the points: auto (the default:
    /// the first CUDA device when built with CUDA and one is visible, else
    /// the host's cores), host or a CUDA device ordinal. On a device the
    /// key passes through host memory whole (about 47 GiB for a 32 GiB
    /// PoRep); the points are the host's, byte for byte.
    #[arg(long, default_value = "auto")]
    keygen_device: KeygenChoice,
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
    let opened = a.keygen_device.open()?;
    let device = opened.as_ref().map(|(ctx, ordinal)| KeygenDevice {
        ctx,
        ordinal: *ordinal,
    });
    if let Some(d) = &device {
        eprintln!("key points computed on CUDA device {}", d.ordinal);
    }
    ensure_test_parameters_on(&circuits, a.generator, device, |m| eprintln!("{m}"))?;
    println!("test parameters for {} in {}", a.sector_size, dir.display());
    Ok(())
}
