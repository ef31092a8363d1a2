//! `demo`: seal a small sector of seeded random data with filecoin-proofs
//! (add piece, PC1, PC2, C1), write its C1 file, run C2 through the engine
//! with TEST parameters, and verify with filecoin-proofs.

use std::path::PathBuf;

use crate::c1::Expected;
use crate::c2::c2_from_bytes;
use crate::cli::engine_args::EngineArgs;
use crate::cli::report::print_times;
use crate::config::{PostKind, RegisteredSeal, SealVersion};
use crate::error::{FilecoinError, Result};
use crate::sealing::{prove_post_for, seal_test_sector};
use crate::sector::SectorSize;
use crate::test_params::{
    default_test_parameter_dir, ensure_test_parameters, use_test_parameter_dir, TestCircuit,
};

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PostArg {
    None,
    Winning,
    Window,
}

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Sector size (test parameters are generated for it on first use).
    #[arg(long, default_value = "2KiB")]
    sector_size: SectorSize,
    /// Where the sector and its C1 file go (default: a new directory under
    /// the system temp directory).
    #[arg(long)]
    work_dir: Option<PathBuf>,
    /// Seed of the sector's data, prover id, ticket and challenge seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Also prove a PoSt over the sealed sector.
    #[arg(long, value_enum, default_value = "none")]
    post: PostArg,
    #[command(flatten)]
    engine: EngineArgs,
}

pub fn run(a: Args) -> Result<()> {
    let dir = use_test_parameter_dir(&default_test_parameter_dir()?)?;
    println!(
        "TEST parameters (seeded, not the network's) for {} from {}",
        a.sector_size,
        dir.display()
    );
    let mut circuits = vec![TestCircuit::Porep(a.sector_size)];
    match a.post {
        PostArg::None => {}
        PostArg::Winning => circuits.push(TestCircuit::WinningPost(a.sector_size)),
        PostArg::Window => circuits.push(TestCircuit::WindowPost(a.sector_size)),
    }
    ensure_test_parameters(&circuits, |m| eprintln!("{m}"))?;

    let work = match a.work_dir {
        Some(d) => d,
        None => {
            std::env::temp_dir().join(format!("cuda-prover-filecoin-demo-{}", std::process::id()))
        }
    };
    std::fs::create_dir_all(&work)
        .map_err(|e| FilecoinError::io(format!("creating {}", work.display()), e))?;
    let registered = RegisteredSeal::new(a.sector_size, SealVersion::V1_1);
    let sector = seal_test_sector(registered, &work, a.seed)?;
    let t = &sector.times;
    println!(
        "sealed {registered} sector {}: add piece {:.3} s, PC1 {:.3} s, PC2 {:.3} s, C1 {:.3} s",
        sector.sector_id,
        t.add_piece.as_secs_f64(),
        t.pc1.as_secs_f64(),
        t.pc2.as_secs_f64(),
        t.c1.as_secs_f64()
    );
    let c1_path = work.join("c1.json");
    std::fs::write(&c1_path, &sector.c1_json)
        .map_err(|e| FilecoinError::io(format!("writing {}", c1_path.display()), e))?;
    println!(
        "C1 output: {} (prover id {}, sector {})",
        c1_path.display(),
        crate::seal::hex(&sector.prover_id),
        sector.sector_id
    );

    // The demo's TEST parameters were made by this program from a seed: it
    // vouches for them. `c2` checks every key it loads (once per file).
    let prover = a
        .engine
        .prover()?
        .with_key_check(cuda_prover_pipeline::KeyCheck::TrustedUnchecked);
    println!("TEST parameters generated here from a seed: their subgroup checks are skipped");
    let expected = Expected {
        size: Some(a.sector_size),
        ..Default::default()
    };
    let (_, out) = c2_from_bytes(
        &prover,
        &sector.c1_json,
        &expected,
        sector.prover_id,
        sector.sector_id,
    )?;
    println!("C2 through the engine:");
    print_times(&out.times);
    let proof_path = work.join("c2.proof");
    std::fs::write(&proof_path, &out.output.proof)
        .map_err(|e| FilecoinError::io(format!("writing {}", proof_path.display()), e))?;
    println!(
        "C2 proof ({} bytes, {}) verified by filecoin-proofs (verify_seal), with TEST parameters",
        out.output.proof.len(),
        proof_path.display()
    );

    let kind = match a.post {
        PostArg::None => return Ok(()),
        PostArg::Winning => PostKind::Winning,
        PostArg::Window => PostKind::Window,
    };
    let mut randomness = [7u8; 32];
    randomness[31] = 0;
    let post = prove_post_for(&prover, &sector, kind, randomness)?;
    println!("{kind:?} PoSt through the engine:");
    print_times(&post.times);
    println!(
        "{kind:?} PoSt proof ({} bytes) verified by filecoin-proofs, with TEST parameters",
        post.proof.len()
    );
    Ok(())
}
