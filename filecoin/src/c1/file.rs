//! A C1 file's checks: [`C1File::parse`] (the output is not empty, its
//! proof shape is its registered proof's), [`C1File::resolve`] (the file
//! and the caller agree on the sector) and [`C1File::output`], the typed
//! output read from the file's bytes.

use filecoin_proofs::{MerkleTreeTrait, SealCommitPhase1Output};
use serde::de::Deserialize;

use super::meta::{Meta, Top};
use super::source::{json_error, Source};
use super::typed::Typed;
use super::{C1File, Expected};
use crate::config::{RegisteredSeal, SealVersion};
use crate::error::{FilecoinError, Result};
use crate::sector::SectorSize;

/// The fields of a commit-phase-1 output, in filecoin-proofs' form.
const REQUIRED: [&str; 6] = [
    "vanilla_proofs",
    "comm_r",
    "comm_d",
    "replica_id",
    "seed",
    "ticket",
];

/// The 32-byte values of a C1 output.
pub(super) const HASHES: [&str; 5] = ["comm_r", "comm_d", "replica_id", "seed", "ticket"];

/// The values a sealed sector's C1 output never has all zero: its
/// commitments, replica id and seed are hashes or chain randomness.
const NEVER_ZERO: [&str; 4] = ["comm_d", "comm_r", "replica_id", "seed"];

impl<'a> C1File<'a> {
    /// Parses any of the three shapes and checks that the output is not
    /// empty; the vanilla proofs are skipped over (counted), not kept.
    pub fn parse(bytes: &'a [u8]) -> Result<Self> {
        let mut de = serde_json::Deserializer::from_slice(bytes);
        let top = Top::deserialize(&mut de)
            .and_then(|t| de.end().map(|()| t))
            .map_err(|e| json_error(e, "the C1 file", Some(bytes.len())))?;
        let (sector_num, declared_size, meta, source) = match top.phase1_out {
            Some(b64) => {
                let source = Source::Base64(b64);
                let meta = source
                    .read::<Meta>()
                    .map_err(|e| json_error(e, "Phase1Out", None))?;
                let size = top.sector_size.map(SectorSize::new).transpose()?;
                (top.sector_num, size, meta, source)
            }
            None => (None, None, top.inner, Source::Json(bytes)),
        };
        let registered = meta
            .registered_proof
            .as_deref()
            .map(str::parse::<RegisteredSeal>)
            .transpose()?;
        for (k, field) in REQUIRED.iter().enumerate() {
            let present = if k == 0 {
                meta.proofs.is_some()
            } else {
                meta.hashes[k - 1].is_some()
            };
            if !present {
                return Err(FilecoinError::Input(format!(
                    "the C1 output has no '{field}' (not a commit-phase-1 output?)"
                )));
            }
        }
        let zero: Vec<&str> = NEVER_ZERO
            .into_iter()
            .filter(|f| {
                let k = HASHES.iter().position(|h| h == f).unwrap_or(0);
                meta.hashes[k] == Some([0; 32])
            })
            .collect();
        if !zero.is_empty() {
            return Err(FilecoinError::Input(format!(
                "the C1 output's {} {} all zero: not the output of a sealed sector",
                zero.join(", "),
                if zero.len() == 1 { "is" } else { "are" }
            )));
        }
        let proofs = meta.proofs.unwrap_or_default();
        if let Some(shape) = &proofs.shape {
            check_api_shape(shape, registered)?;
        }
        if proofs.per_partition.is_empty() {
            return Err(FilecoinError::Input(
                "the C1 output has no vanilla proofs (an empty C1 output)".into(),
            ));
        }
        if let Some(k) = proofs.per_partition.iter().position(|&n| n == 0) {
            return Err(FilecoinError::Input(format!(
                "partition {k} of the C1 output's vanilla proofs holds no proofs"
            )));
        }
        let proofs_size = proofs
            .data_path_len
            .map(|n| {
                let bytes = 32u64.checked_shl(n as u32).unwrap_or(0);
                SectorSize::new(bytes).map_err(|_| {
                    FilecoinError::SectorSize(format!(
                        "the C1 output's data-tree paths have {n} levels: no supported sector \
                         size has that"
                    ))
                })
            })
            .transpose()?;
        Ok(Self {
            sector_num,
            declared_size,
            registered,
            proofs_size,
            partitions: proofs.per_partition.len(),
            source,
        })
    }

    /// The registered seal proof, checked against everything the file and
    /// the caller say. Without a registered proof anywhere, `V1_1` (what
    /// sealing workers use) of the agreed size.
    pub fn resolve(&self, expected: &Expected) -> Result<RegisteredSeal> {
        let mut sizes: Vec<(SectorSize, &str)> = Vec::new();
        if let Some(s) = expected.size {
            sizes.push((s, "the requested sector size"));
        }
        if let Some(r) = expected.registered {
            sizes.push((r.size, "the requested proof type"));
        }
        if let Some(s) = self.declared_size {
            sizes.push((s, "the file's SectorSize"));
        }
        if let Some(r) = self.registered {
            sizes.push((r.size, "the file's registered_proof"));
        }
        if let Some(s) = self.proofs_size {
            sizes.push((s, "its vanilla proofs"));
        }
        let Some(&(size, first)) = sizes.first() else {
            return Err(FilecoinError::SectorSize(
                "the C1 file does not say its sector size: give --sector-size".into(),
            ));
        };
        if let Some(&(other, what)) = sizes.iter().find(|(s, _)| *s != size) {
            return Err(FilecoinError::SectorSize(format!(
                "the C1 output is for a {other} sector according to {what}, but {size} according \
                 to {first}"
            )));
        }
        if let (Some(a), Some(b)) = (expected.registered, self.registered) {
            if a != b {
                return Err(FilecoinError::Input(format!(
                    "the C1 output is a {b} proof, not {a}"
                )));
            }
        }
        if let (Some(want), Some(have)) = (expected.sector_id, self.sector_num) {
            if want != have {
                return Err(FilecoinError::Identity(format!(
                    "the C1 file is for sector {have}, not sector {want}"
                )));
            }
        }
        let version = expected
            .registered
            .or(self.registered)
            .map(|r| r.version)
            .unwrap_or(SealVersion::V1_1);
        let registered = RegisteredSeal::new(size, version);
        let partitions = usize::from(registered.porep_config()?.partitions);
        if self.partitions != partitions {
            return Err(FilecoinError::Input(format!(
                "the C1 output has {} partitions of vanilla proofs; a {size} sector has {partitions}",
                self.partitions
            )));
        }
        Ok(registered)
    }

    /// filecoin-proofs' typed output for the sector's tree shape,
    /// deserialized from the file's bytes (no intermediate JSON value).
    pub fn output<Tree: 'static + MerkleTreeTrait>(&self) -> Result<SealCommitPhase1Output<Tree>> {
        self.source.read::<Typed<Tree>>().map(|t| t.0).map_err(|e| {
            FilecoinError::Input(format!(
                "the C1 output does not have the shape of this sector size's proofs: {e}"
            ))
        })
    }
}

/// filecoin-proofs-api's proof shape name (`StackedDrg2KiBV1`) must be
/// the registered proof's size.
fn check_api_shape(shape: &str, registered: Option<RegisteredSeal>) -> Result<()> {
    let shape_size = shape
        .strip_prefix("StackedDrg")
        .and_then(|s| s.strip_suffix("V1"))
        .ok_or_else(|| {
            FilecoinError::Input(format!("vanilla_proofs has an unknown shape '{shape}'"))
        })?
        .parse::<SectorSize>()?;
    match registered {
        Some(r) if r.size != shape_size => Err(FilecoinError::SectorSize(format!(
            "the C1 output's registered_proof is {r} but its vanilla proofs are {shape}"
        ))),
        _ => Ok(()),
    }
}
