//! The daemon's job journal (`--state-dir`): every accepted job is written
//! (its request, kind and inputs) before its submission answers, and its
//! end (state, proof, error, timings, when it ended) when it ends, each
//! appended and fsync'd. A daemon started on the same state directory
//! after a crash or kill -9 runs the jobs that were queued or running
//! again, with the same job ids, and keeps the finished ones' results for
//! AwaitProof until their retention time has passed.
//!
//! The file is `<state-dir>/jobs.journal`: a header, then one frame per
//! write (a job's record, a job's removal, or the journal's instance and
//! sequence floor), each with a marker, its length and a CRC-32C of both,
//! so that a reader finds where any damage starts and where the next
//! intact frame is. A record replaces the job's earlier one; the file is
//! rewritten with the live records alone once most of it is replaced or
//! removed ones. `jobs.journal.lock` is held while a daemon has it open.
//!
//! A damaged file (truncated, cut in the middle of a write, bytes
//! overwritten) does not stop the start: every frame that still checks out
//! is read, before and after the damage; the file is kept as
//! `jobs.journal.damaged-<unix seconds>`, the journal is written anew with
//! the jobs recovered, and an error names the file, where it was kept, the
//! damaged byte ranges (and the job a damaged frame seems to be about),
//! and how many jobs were recovered. Recovered jobs keep their ids; new
//! jobs get ids of a new instance, so that no id whose record was lost can
//! name another job. A file that is not a journal (no header) is kept
//! aside the same way, and a new journal starts. A journal that another
//! daemon holds, or that the file system refuses, stops the start with an
//! error naming the file.
//!
//! A `jobs.redb` of earlier builds (a redb database) is read once and
//! converted.

mod files;
mod frame;
mod legacy;
mod open;
mod scan;
#[cfg(test)]
mod tests;
mod write;

use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};

use parking_lot::Mutex;
use prost::Message;

use crate::proto;

pub use scan::frame_spans;

/// The journal's file in a state directory.
pub fn journal_path(state_dir: &Path) -> PathBuf {
    state_dir.join("jobs.journal")
}

/// The journal of earlier builds (a redb database), converted on start.
pub fn legacy_path(state_dir: &Path) -> PathBuf {
    state_dir.join("jobs.redb")
}

fn lock_path(state_dir: &Path) -> PathBuf {
    state_dir.join("jobs.journal.lock")
}

/// One job as the journal holds it.
#[derive(Clone, PartialEq, Message)]
pub struct Record {
    /// The job's sequence number (the low half of its id).
    #[prost(uint64, tag = "1")]
    pub seq: u64,
    /// The job's request, as the cuda_prover.v1 API takes it (cuzk.v1
    /// requests are kept in that form too). Dropped once the job ended.
    #[prost(message, optional, tag = "2")]
    pub request: Option<proto::SubmitRequest>,
    /// The client's idempotency key and the digest of its inputs.
    #[prost(string, tag = "3")]
    pub request_id: String,
    #[prost(uint64, tag = "4")]
    pub digest: u64,
    /// Empty while queued or running; else done, failed or cancelled.
    #[prost(string, tag = "5")]
    pub state: String,
    #[prost(bool, tag = "6")]
    pub verified: bool,
    #[prost(bytes = "vec", repeated, tag = "7")]
    pub proofs: Vec<Vec<u8>>,
    #[prost(string, tag = "8")]
    pub error: String,
    #[prost(uint64, repeated, tag = "9")]
    pub timings: Vec<u64>,
    #[prost(uint32, tag = "10")]
    pub partitions: u32,
    /// When the job ended, in ms since the Unix epoch (0: not ended, or
    /// ended before the journal kept it).
    #[prost(uint64, tag = "11")]
    pub finished_ms: u64,
    /// The API of `request_id` ([`crate::requests::Api::number`]; 0,
    /// cuzk.v1, in records of earlier builds).
    #[prost(uint32, tag = "12")]
    pub request_api: u32,
    /// The id instance the job's id has (0: the journal's).
    #[prost(uint64, tag = "13")]
    pub instance: u64,
    /// Why a finished job failed or was cancelled: a cuda_prover.v1
    /// `ErrorCode` (0 for done jobs and in records of earlier builds).
    #[prost(int32, tag = "14")]
    pub error_code: i32,
}

/// What a daemon reads back at start.
pub struct Restored {
    /// The id instance of the jobs this run accepts: the journal's, or a
    /// new one after damage.
    pub instance: u64,
    /// The instance of the journal's records that name none.
    pub journal_instance: u64,
    /// The sequence numbers below this one were issued already.
    pub next_seq: u64,
    pub records: Vec<Record>,
    /// A damaged (or foreign) journal kept aside.
    pub set_aside: Option<SetAside>,
}

/// A journal file that was kept aside.
#[derive(Debug, Clone)]
pub struct SetAside {
    /// Where its bytes are now.
    pub aside: PathBuf,
    /// What was logged: the file, the damage, what was recovered.
    pub message: String,
    /// Jobs recovered from it.
    pub recovered: usize,
}

pub struct Journal {
    path: PathBuf,
    state: Mutex<State>,
    /// Held (flock) while this daemon has the journal open.
    _lock: File,
}

/// The open file and where its live records are.
struct State {
    file: File,
    len: u64,
    /// seq -> (offset, length) of the job's live frame.
    live: HashMap<u64, (u64, u64)>,
    live_bytes: u64,
    dead_bytes: u64,
    instance: u64,
    next_seq: u64,
}

impl Journal {
    pub fn path(&self) -> &Path {
        &self.path
    }
}
