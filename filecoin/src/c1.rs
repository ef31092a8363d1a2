//! Commit-phase-1 files as sealing workers receive them.
//!
//! Three shapes are accepted:
//! - filecoin-proofs' `SealCommitPhase1Output` as serde JSON;
//! - filecoin-proofs-api's form of it (what filecoin-ffi and lotus hand
//!   around): the same fields plus `registered_proof`, with the vanilla
//!   proofs under a key naming the proof shape;
//! - the wrapper that lotus-bench and Curio give a C2 worker:
//!   `{"SectorNum", "Phase1Out" (base64 of one of the above), "SectorSize"}`.
//!
//! Everything the file says about the sector (its declared size, its
//! registered proof, the size its proofs imply) must agree with what the
//! caller asks for, or parsing fails with the disagreement spelled out.

use base64::Engine as _;
use filecoin_proofs::{MerkleTreeTrait, SealCommitPhase1Output};
use serde_json::{Map, Value};

use crate::config::{RegisteredSeal, SealVersion};
use crate::error::{FilecoinError, Result};
use crate::sector::SectorSize;

/// The largest C1 file read: a 32 GiB or 64 GiB sector's is about 50 MB,
/// and gRPC messages stop at 256 MiB (Curio's limit) as well.
pub const MAX_C1_BYTES: u64 = 256 << 20;

/// Reads a C1 file of at most [`MAX_C1_BYTES`]: a larger regular file is
/// refused before it is read, and a stream without a length (`/dev/zero`,
/// a pipe) is read only up to the limit, then refused.
pub fn read_c1_file(path: &std::path::Path) -> Result<Vec<u8>> {
    use std::io::Read;
    let what = || format!("reading the C1 file {}", path.display());
    let too_big = |n: String| {
        FilecoinError::Input(format!(
            "the C1 file {} holds {n} bytes, more than the {} MiB a C1 may have \
             (a 32 GiB sector's is about 50 MB)",
            path.display(),
            MAX_C1_BYTES >> 20
        ))
    };
    let f = std::fs::File::open(path).map_err(|e| FilecoinError::io(what(), e))?;
    let meta = f.metadata().map_err(|e| FilecoinError::io(what(), e))?;
    if meta.is_dir() {
        return Err(FilecoinError::Input(format!(
            "the C1 file {} is a directory",
            path.display()
        )));
    }
    if meta.is_file() && meta.len() > MAX_C1_BYTES {
        return Err(too_big(meta.len().to_string()));
    }
    let mut bytes = Vec::new();
    f.take(MAX_C1_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| FilecoinError::io(what(), e))?;
    if bytes.len() as u64 > MAX_C1_BYTES {
        return Err(too_big(format!("more than {MAX_C1_BYTES}")));
    }
    Ok(bytes)
}

/// A C1 file, read and normalized to filecoin-proofs' form.
#[derive(Debug, Clone)]
pub struct C1File {
    /// `SectorNum` of the lotus-bench / Curio wrapper.
    pub sector_num: Option<u64>,
    /// `SectorSize` of the wrapper.
    pub declared_size: Option<SectorSize>,
    /// `registered_proof` of filecoin-proofs-api's form.
    pub registered: Option<RegisteredSeal>,
    /// The size the vanilla proofs are for (from their data-tree paths).
    pub proofs_size: Option<SectorSize>,
    /// Partitions of vanilla proofs (each holds at least one proof).
    pub partitions: usize,
    /// filecoin-proofs' `SealCommitPhase1Output` as JSON.
    output: Value,
}

/// What the caller knows about the sector (command-line flags).
#[derive(Debug, Clone, Copy, Default)]
pub struct Expected {
    pub size: Option<SectorSize>,
    pub registered: Option<RegisteredSeal>,
    pub sector_id: Option<u64>,
}

impl C1File {
    /// Parses any of the three shapes.
    pub fn parse(bytes: &[u8]) -> Result<Self> {
        let v = parse_json(bytes, "the C1 file")?;
        let Value::Object(mut top) = v else {
            return Err(FilecoinError::Input(
                "the C1 file is JSON but not an object".into(),
            ));
        };
        let (mut sector_num, mut declared_size) = (None, None);
        if top.contains_key("Phase1Out") {
            sector_num = top.get("SectorNum").map(as_u64("SectorNum")).transpose()?;
            declared_size = top
                .get("SectorSize")
                .map(as_u64("SectorSize"))
                .transpose()?
                .map(SectorSize::new)
                .transpose()?;
            let b64 = top
                .get("Phase1Out")
                .and_then(Value::as_str)
                .ok_or_else(|| FilecoinError::Input("Phase1Out is not a string".into()))?;
            let inner = base64::engine::general_purpose::STANDARD
                .decode(b64.trim())
                .map_err(|e| FilecoinError::Input(format!("Phase1Out is not base64: {e}")))?;
            match parse_json(&inner, "Phase1Out")? {
                Value::Object(m) => top = m,
                _ => {
                    return Err(FilecoinError::Input(
                        "Phase1Out is not a JSON object".into(),
                    ))
                }
            }
        }
        let registered = normalize_api_form(&mut top)?;
        for field in [
            "vanilla_proofs",
            "comm_r",
            "comm_d",
            "replica_id",
            "seed",
            "ticket",
        ] {
            if !top.contains_key(field) {
                return Err(FilecoinError::Input(format!(
                    "the C1 output has no '{field}' (not a commit-phase-1 output?)"
                )));
            }
        }
        let partitions = check_not_empty(&top)?;
        let proofs_size = proofs_sector_size(&top)?;
        Ok(Self {
            sector_num,
            declared_size,
            registered,
            proofs_size,
            partitions,
            output: Value::Object(top),
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

    /// filecoin-proofs' typed output for the sector's tree shape.
    pub fn output<Tree: 'static + MerkleTreeTrait>(&self) -> Result<SealCommitPhase1Output<Tree>> {
        serde_json::from_value(self.output.clone()).map_err(|e| {
            FilecoinError::Input(format!(
                "the C1 output does not have the shape of this sector size's proofs: {e}"
            ))
        })
    }
}

fn parse_json(bytes: &[u8], what: &str) -> Result<Value> {
    serde_json::from_slice(bytes).map_err(|e| {
        if e.is_eof() {
            FilecoinError::Input(format!(
                "{what} ends early (truncated?): {e} ({} bytes read)",
                bytes.len()
            ))
        } else {
            FilecoinError::Input(format!("{what} is not valid JSON: {e}"))
        }
    })
}

/// The values a sealed sector's C1 output never has all zero: its
/// commitments, replica id and seed are hashes or chain randomness.
const NEVER_ZERO: [&str; 4] = ["comm_d", "comm_r", "replica_id", "seed"];

/// Refuses a C1 output that is structurally empty: all-zero commitments,
/// replica id or seed, no vanilla proofs, or a partition without proofs.
/// Returns the number of partitions.
fn check_not_empty(top: &Map<String, Value>) -> Result<usize> {
    let all_zero = |v: &Value| {
        v.as_array()
            .is_some_and(|a| a.iter().all(|x| x.as_u64() == Some(0)))
    };
    let zero: Vec<&str> = NEVER_ZERO
        .into_iter()
        .filter(|f| top.get(*f).is_some_and(all_zero))
        .collect();
    if !zero.is_empty() {
        return Err(FilecoinError::Input(format!(
            "the C1 output's {} {} all zero: not the output of a sealed sector",
            zero.join(", "),
            if zero.len() == 1 { "is" } else { "are" }
        )));
    }
    let Some(proofs) = top.get("vanilla_proofs").and_then(Value::as_array) else {
        return Err(FilecoinError::Input(
            "the C1 output's vanilla_proofs is not a list of partitions".into(),
        ));
    };
    if proofs.is_empty() {
        return Err(FilecoinError::Input(
            "the C1 output has no vanilla proofs (an empty C1 output)".into(),
        ));
    }
    if let Some(k) = proofs
        .iter()
        .position(|p| p.as_array().is_none_or(|a| a.is_empty()))
    {
        return Err(FilecoinError::Input(format!(
            "partition {k} of the C1 output's vanilla proofs holds no proofs"
        )));
    }
    Ok(proofs.len())
}

fn as_u64(field: &'static str) -> impl Fn(&Value) -> Result<u64> {
    move |v| {
        v.as_u64()
            .ok_or_else(|| FilecoinError::Input(format!("{field} is not a non-negative integer")))
    }
}

/// filecoin-proofs-api's form: `registered_proof` names the proof, and
/// `vanilla_proofs` is `{"StackedDrg2KiBV1": [[...]]}`. Rewrites it in
/// place to filecoin-proofs' form and returns the registered proof.
fn normalize_api_form(top: &mut Map<String, Value>) -> Result<Option<RegisteredSeal>> {
    let Some(reg) = top.remove("registered_proof") else {
        return Ok(None);
    };
    let name = reg
        .as_str()
        .ok_or_else(|| FilecoinError::Input("registered_proof is not a string".into()))?;
    let registered: RegisteredSeal = name.parse()?;
    if let Some(Value::Object(by_shape)) = top.get("vanilla_proofs") {
        if by_shape.len() != 1 {
            return Err(FilecoinError::Input(
                "vanilla_proofs has more than one proof shape".into(),
            ));
        }
        let (shape, proofs) = by_shape
            .iter()
            .next()
            .map(|(k, v)| (k.clone(), v.clone()))
            .ok_or_else(|| FilecoinError::Input("vanilla_proofs is empty".into()))?;
        let shape_size = shape
            .strip_prefix("StackedDrg")
            .and_then(|s| s.strip_suffix("V1"))
            .ok_or_else(|| {
                FilecoinError::Input(format!("vanilla_proofs has an unknown shape '{shape}'"))
            })?
            .parse::<SectorSize>()?;
        if shape_size != registered.size {
            return Err(FilecoinError::SectorSize(format!(
                "the C1 output's registered_proof is {registered} but its vanilla proofs are \
                 {shape}"
            )));
        }
        top.insert("vanilla_proofs".into(), proofs);
    }
    Ok(Some(registered))
}

/// The sector size the first vanilla proof's data-tree path implies:
/// a binary tree over 2^n 32-byte nodes has paths of n elements.
fn proofs_sector_size(top: &Map<String, Value>) -> Result<Option<SectorSize>> {
    let path = top
        .get("vanilla_proofs")
        .and_then(|v| v.get(0))
        .and_then(|v| v.get(0))
        .and_then(|v| v.get("comm_d_proofs"))
        .and_then(|v| v.get("data"))
        .and_then(|v| v.get("Single"))
        .and_then(|v| v.get("path"))
        .and_then(|v| v.get("path"))
        .and_then(Value::as_array);
    let Some(path) = path else {
        return Ok(None);
    };
    let bytes = 32u64.checked_shl(path.len() as u32).unwrap_or(0);
    SectorSize::new(bytes).map(Some).map_err(|_| {
        FilecoinError::SectorSize(format!(
            "the C1 output's data-tree paths have {} levels: no supported sector size has that",
            path.len()
        ))
    })
}
