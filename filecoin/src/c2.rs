//! C2 of a C1 file: parse, resolve the proof type, prove, verify. What a
//! sealing worker's C2 task does, and what `cuda-prover-filecoin c2` runs.

use std::path::PathBuf;

use filecoin_proofs::{MerkleTreeTrait, PoRepConfig};
use storage_proofs_core::sector::SectorId;

use crate::c1::{C1File, Expected};
use crate::config::RegisteredSeal;
use crate::error::{FilecoinError, Result};
use crate::prover::FilecoinProver;
use crate::seal::{seal_commit_phase2, SealCommit};
use crate::with_sector_shape;

/// Parses prover ids as lotus builds them: 1 to 32 bytes of hex (an
/// optional `0x`), zero-padded on the right to 32 bytes.
pub fn parse_prover_id(s: &str) -> Result<[u8; 32]> {
    let h = s.trim().trim_start_matches("0x");
    if h.is_empty() || !h.len().is_multiple_of(2) || h.len() > 64 {
        return Err(FilecoinError::Input(format!(
            "prover id '{s}' is not 1 to 32 bytes of hex"
        )));
    }
    let mut id = [0u8; 32];
    for (i, pair) in h.as_bytes().chunks(2).enumerate() {
        let txt = std::str::from_utf8(pair).unwrap_or("");
        id[i] = u8::from_str_radix(txt, 16)
            .map_err(|_| FilecoinError::Input(format!("prover id '{s}' is not hex")))?;
    }
    Ok(id)
}

/// A prover id as hex, all 32 bytes: what [`parse_prover_id`] reads back.
pub fn prover_id_hex(id: &[u8; 32]) -> String {
    crate::seal::hex(id)
}

/// The params file a seal proof's C2 proves with (in filecoin-proofs'
/// parameter cache, `FIL_PROOFS_PARAMETER_CACHE`).
pub fn porep_params_path(registered: RegisteredSeal) -> Result<PathBuf> {
    let config = registered.porep_config()?;
    with_sector_shape!(registered.size, porep_params_typed, &config)
}

fn porep_params_typed<Tree: 'static + MerkleTreeTrait>(config: &PoRepConfig) -> Result<PathBuf> {
    config
        .get_cache_params_path::<Tree>()
        .map_err(|e| FilecoinError::proofs("parameter path", e))
}

/// C2 of a C1 file's bytes (any shape `C1File` reads).
pub fn c2_from_bytes(
    prover: &FilecoinProver,
    c1_bytes: &[u8],
    expected: &Expected,
    prover_id: [u8; 32],
    sector_id: u64,
) -> Result<(RegisteredSeal, SealCommit)> {
    let file = C1File::parse(c1_bytes)?;
    let expected = Expected {
        sector_id: Some(sector_id),
        ..*expected
    };
    let registered = file.resolve(&expected)?;
    let config = registered.porep_config()?;
    let out = with_sector_shape!(
        registered.size,
        c2_typed,
        prover,
        &file,
        &config,
        prover_id,
        sector_id
    )?;
    Ok((registered, out))
}

fn c2_typed<Tree: 'static + MerkleTreeTrait>(
    prover: &FilecoinProver,
    file: &C1File,
    config: &PoRepConfig,
    prover_id: [u8; 32],
    sector_id: u64,
) -> Result<SealCommit> {
    let c1 = file.output::<Tree>()?;
    seal_commit_phase2::<Tree>(prover, config, c1, prover_id, SectorId::from(sector_id))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prover_ids() {
        let id = parse_prover_id("0x01ab").unwrap();
        assert_eq!(&id[..3], &[1, 0xab, 0]);
        assert!(parse_prover_id("abc").is_err());
        assert!(parse_prover_id("zz").is_err());
        assert!(parse_prover_id(&"00".repeat(33)).is_err());
    }
}
