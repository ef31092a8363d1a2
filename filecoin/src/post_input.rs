//! A PoSt input: everything a Winning or Window PoSt over vanilla proofs
//! needs (kind, sector size, randomness, prover id, the sectors and their
//! vanilla proofs), and its JSON file (what `test-post --out` writes and
//! the daemon client's `submit --filecoin-post` reads).
//!
//! ```json
//! {
//!   "test_fixture": true,
//!   "kind": "winning",
//!   "sector_size": "32GiB",
//!   "seed": 1,
//!   "randomness": "<32 bytes, hex>",
//!   "prover_id": "<32 bytes, hex>",
//!   "sectors": [
//!     {"sector_id": 123, "comm_r": "<32 bytes, hex>", "vanilla_proof": "<base64>"}
//!   ]
//! }
//! ```
//!
//! `kind` is `winning` or `window` (every partition of the sectors given);
//! `sector_size` a name (`2KiB`, `32GiB`) or a byte count. Each
//! `vanilla_proof` is base64 (standard alphabet, padded) of filecoin-proofs'
//! `FallbackPoStSectorProof` in bincode, exactly as filecoin-proofs-api's
//! `generate_single_vanilla_proof` returns it; the sectors are in the order
//! the PoSt takes them (ascending sector numbers for Window PoSt).
//! `test_fixture` and `seed` say where a fixture came from and are
//! optional: a file of real vanilla proofs reads the same way. Reading
//! checks that each proof decodes for the sector size and names its
//! sector's number and comm_r.

use std::path::Path;

use filecoin_proofs::PublicReplicaInfo;
use storage_proofs_core::sector::SectorId;

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use serde::{Deserialize, Serialize};

use crate::c2::parse_prover_id;
use crate::config::PostKind;
use crate::error::{FilecoinError, Result};
use crate::input_file::InputFile;
use crate::seal::hex;
use crate::sector::SectorSize;
use crate::vanilla::post_vanilla_sectors;

/// The largest PoSt input file read: base64 of a full 32 GiB Window PoSt
/// partition's vanilla proofs (2,349 sectors) is about 80 MB.
pub const MAX_POST_FILE_BYTES: u64 = 256 << 20;

/// One sector a PoSt proves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PostSector {
    pub sector_id: u64,
    pub comm_r: [u8; 32],
}

/// What a Winning or Window PoSt over vanilla proofs takes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PostInput {
    pub kind: PostKind,
    pub size: SectorSize,
    /// The fixture's seed, when a fixture made it.
    pub seed: Option<u64>,
    pub randomness: [u8; 32],
    pub prover_id: [u8; 32],
    pub sectors: Vec<PostSector>,
    /// One per sector, in the same order: `FallbackPoStSectorProof` in
    /// bincode.
    pub vanilla_proofs: Vec<Vec<u8>>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileJson {
    #[serde(default)]
    test_fixture: bool,
    kind: String,
    sector_size: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    seed: Option<u64>,
    randomness: String,
    prover_id: String,
    sectors: Vec<SectorJson>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct SectorJson {
    sector_id: u64,
    comm_r: String,
    vanilla_proof: String,
}

fn bad(message: impl Into<String>) -> FilecoinError {
    FilecoinError::Input(format!("PoSt input: {}", message.into()))
}

/// 32 bytes of hex (an optional `0x` before them).
fn bytes32(s: &str, what: &str) -> Result<[u8; 32]> {
    let h = s.trim().trim_start_matches("0x");
    if h.len() != 64 {
        return Err(bad(format!("{what} '{s}' is not 32 bytes of hex")));
    }
    let mut out = [0u8; 32];
    for (i, pair) in h.as_bytes().chunks(2).enumerate() {
        out[i] = std::str::from_utf8(pair)
            .ok()
            .and_then(|t| u8::from_str_radix(t, 16).ok())
            .ok_or_else(|| bad(format!("{what} '{s}' is not hex")))?;
    }
    Ok(out)
}

impl PostInput {
    /// The JSON file's bytes; `test_fixture` marks a fixture's.
    pub fn to_json(&self, test_fixture: bool) -> Result<Vec<u8>> {
        if self.sectors.len() != self.vanilla_proofs.len() {
            return Err(bad(format!(
                "{} sectors and {} vanilla proofs",
                self.sectors.len(),
                self.vanilla_proofs.len()
            )));
        }
        let file = FileJson {
            test_fixture,
            kind: self.kind.name().into(),
            sector_size: self.size.to_string(),
            seed: self.seed,
            randomness: hex(&self.randomness),
            prover_id: hex(&self.prover_id),
            sectors: self
                .sectors
                .iter()
                .zip(&self.vanilla_proofs)
                .map(|(s, p)| SectorJson {
                    sector_id: s.sector_id,
                    comm_r: hex(&s.comm_r),
                    vanilla_proof: STANDARD.encode(p),
                })
                .collect(),
        };
        serde_json::to_vec_pretty(&file).map_err(|e| bad(format!("writing JSON: {e}")))
    }

    /// The sectors as filecoin-proofs' `verify_winning_post` and
    /// `verify_window_post` take them.
    pub fn replicas(&self) -> Result<Vec<(SectorId, PublicReplicaInfo)>> {
        self.sectors
            .iter()
            .map(|s| {
                let replica = PublicReplicaInfo::new(s.comm_r)
                    .map_err(|e| bad(format!("sector {}'s comm_r: {e:#}", s.sector_id)))?;
                Ok((SectorId::from(s.sector_id), replica))
            })
            .collect()
    }

    /// Parses and checks a PoSt input file's bytes: the fields' forms, and
    /// each vanilla proof decoding for the sector size and naming its
    /// sector's number and comm_r. (Whether the proofs answer the
    /// randomness is the prover's check.)
    pub fn parse(bytes: &[u8]) -> Result<Self> {
        let file: FileJson =
            serde_json::from_slice(bytes).map_err(|e| bad(format!("not a PoSt input: {e}")))?;
        let kind: PostKind = file.kind.parse()?;
        let size: SectorSize = file.sector_size.parse()?;
        let randomness = bytes32(&file.randomness, "randomness")?;
        let prover_id = parse_prover_id(&file.prover_id)?;
        if file.sectors.is_empty() {
            return Err(bad("no sectors"));
        }
        let mut sectors = Vec::with_capacity(file.sectors.len());
        let mut vanilla_proofs = Vec::with_capacity(file.sectors.len());
        for (i, s) in file.sectors.iter().enumerate() {
            sectors.push(PostSector {
                sector_id: s.sector_id,
                comm_r: bytes32(&s.comm_r, &format!("sector {i}'s comm_r"))?,
            });
            vanilla_proofs.push(
                STANDARD
                    .decode(s.vanilla_proof.trim())
                    .map_err(|e| bad(format!("sector {i}'s vanilla_proof is not base64: {e}")))?,
            );
        }
        let named = post_vanilla_sectors(size, &vanilla_proofs)?;
        for (i, (s, (id, comm_r))) in sectors.iter().zip(named).enumerate() {
            if (s.sector_id, s.comm_r) != (id, comm_r) {
                return Err(bad(format!(
                    "sector {i} is {} with comm_r {}, its vanilla proof is of sector {id} with \
                     comm_r {}",
                    s.sector_id,
                    hex(&s.comm_r),
                    hex(&comm_r)
                )));
            }
        }
        Ok(Self {
            kind,
            size,
            seed: file.seed,
            randomness,
            prover_id,
            sectors,
            vanilla_proofs,
        })
    }

    /// Reads and parses a PoSt input file of at most
    /// [`MAX_POST_FILE_BYTES`].
    pub fn read(path: &Path) -> Result<Self> {
        let bytes = InputFile {
            what: "PoSt input file",
            content: "PoSt input",
            max_bytes: MAX_POST_FILE_BYTES,
            typical: "(a 32 GiB Window PoSt partition's is about 80 MB)",
        }
        .read(path)?;
        Self::parse(&bytes).map_err(|e| match e {
            FilecoinError::Input(m) => FilecoinError::Input(format!("{}: {m}", path.display())),
            other => other,
        })
    }
}
