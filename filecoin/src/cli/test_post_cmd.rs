//! `test-post`: a valid Winning or Window PoSt input (vanilla proofs) for
//! sectors of any size without sealing (a test fixture: the fixture picks
//! its own randomness, see `test_post`), written as the JSON file that
//! `cuda-prover-service submit --filecoin-post` sends to the daemon.

use std::path::PathBuf;

use crate::config::PostKind;
use crate::error::{FilecoinError, Result};
use crate::seal::hex;
use crate::sector::SectorSize;
use crate::test_post::generate_test_post;

#[derive(Debug, clap::Args)]
#[command(
    after_help = "The output is JSON: {\"test_fixture\": true, \"kind\": \"winning\" | \
    \"window\", \"sector_size\": \"32GiB\", \"seed\": N, \"randomness\": HEX, \"prover_id\": HEX, \
    \"sectors\": [{\"sector_id\": N, \"comm_r\": HEX, \"vanilla_proof\": BASE64}, ...]}. Each \
    vanilla_proof is filecoin-proofs' FallbackPoStSectorProof in bincode, as filecoin-proofs-api's \
    generate_single_vanilla_proof returns it (base64, standard alphabet); hex values are 32 \
    bytes. Prove it with `cuda-prover-service submit --filecoin-post FILE`."
)]
pub struct Args {
    /// winning (one sector) or window (every partition of --sectors).
    #[arg(long)]
    kind: PostKind,
    /// Sector size: 2KiB, 8MiB, 512MiB, 32GiB, 64GiB (or a test size).
    #[arg(long)]
    sector_size: SectorSize,
    /// Everything is drawn from it: prover id, randomness, sector numbers,
    /// the replica tree nodes and comm_c nothing opens. Same seed, same
    /// bytes.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Sectors to prove: 1 for winning; 1 to 8192 for window.
    #[arg(long, default_value_t = 1)]
    sectors: usize,
    /// Where the PoSt input goes (JSON, see below).
    #[arg(long)]
    out: PathBuf,
}

pub fn run(a: Args) -> Result<()> {
    let post = generate_test_post(a.kind, a.sector_size, a.seed, a.sectors)?;
    let input = &post.input;
    let bytes = input.to_json(true)?;
    std::fs::write(&a.out, &bytes)
        .map_err(|e| FilecoinError::io(format!("writing {}", a.out.display()), e))?;
    eprintln!(
        "TEST FIXTURE: the randomness was chosen by this generator, and no replica lies behind \
         comm_r; PoSt verifiers accept it, the chain never would"
    );
    println!(
        "{} PoSt over {} {} sector(s), seed {}: {} challenges a sector; built in {:.2} s, \
         vanilla proofs checked by storage-proofs in {:.2} s",
        a.kind,
        input.sectors.len(),
        a.sector_size,
        a.seed,
        post.challenges_per_sector,
        post.build.as_secs_f64(),
        post.verify.as_secs_f64()
    );
    println!(
        "{} bytes ({} vanilla proof bytes) written to {}",
        bytes.len(),
        input.vanilla_proofs.iter().map(Vec::len).sum::<usize>(),
        a.out.display()
    );
    println!(
        "randomness {} prover_id {}",
        hex(&input.randomness),
        hex(&input.prover_id)
    );
    Ok(())
}
