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
//! caller asks for, or parsing fails with the disagreement spelled out. A
//! C1 output that is structurally empty (all-zero commitments, replica id
//! or seed; no vanilla proofs; a partition without proofs; another
//! partition count than its sector size's) is refused there too.
//!
//! Memory: the JSON is never held as a `serde_json::Value` (about 16 times
//! its size). [`C1File::parse`] reads it once, keeping only the few values
//! it checks and skipping the rest; [`C1File::output`] deserializes the
//! typed output straight from the bytes. The wrapper's base64 is decoded
//! as it is read, in both passes: no decoded copy is made.

mod file;
mod meta;
mod proofs_meta;
mod source;
mod typed;

use crate::config::RegisteredSeal;
use crate::sector::SectorSize;

use source::Source;
pub use source::{read_c1_file, MAX_C1_BYTES};

/// A C1 file, parsed and checked; the typed output is read from its bytes
/// on demand ([`C1File::output`]).
#[derive(Debug, Clone)]
pub struct C1File<'a> {
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
    source: Source<'a>,
}

/// What the caller knows about the sector (command-line flags).
#[derive(Debug, Clone, Copy, Default)]
pub struct Expected {
    pub size: Option<SectorSize>,
    pub registered: Option<RegisteredSeal>,
    pub sector_id: Option<u64>,
}
