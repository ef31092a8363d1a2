//! The wrapper lotus-bench and Curio give a C2 worker, for a test C1:
//! `{"SectorNum", "Phase1Out" (base64 of the C1 JSON), "SectorSize"}`, as
//! `c1::C1File` reads it, plus `"test_fixture": true` so that no one takes
//! it for a sealed sector's. Its file name must say "test".

use std::path::Path;

use base64::Engine as _;
use serde_json::json;

use crate::error::{FilecoinError, Result};
use crate::sector::SectorSize;

/// Refuses an output path whose file name does not contain "test": a
/// wrapper looks like any worker's C2 input, its name must not.
pub fn check_fixture_name(out: &Path) -> Result<()> {
    let name = out
        .file_name()
        .map(|n| n.to_string_lossy().to_lowercase())
        .unwrap_or_default();
    if name.contains("test") {
        Ok(())
    } else {
        Err(FilecoinError::Input(format!(
            "--wrapper writes a C2 worker's input, so its file name must contain \"test\" (a \
             test C1 is no sealed sector's): {} does not",
            out.display()
        )))
    }
}

/// The wrapper JSON around filecoin-proofs' C1 JSON.
pub fn wrap(c1_json: &[u8], sector_num: u64, size: SectorSize) -> Result<Vec<u8>> {
    let wrapper = json!({
        "SectorNum": sector_num,
        "Phase1Out": base64::engine::general_purpose::STANDARD.encode(c1_json),
        "SectorSize": size.bytes(),
        "test_fixture": true,
    });
    serde_json::to_vec(&wrapper)
        .map_err(|e| FilecoinError::Input(format!("serializing the wrapper: {e}")))
}
