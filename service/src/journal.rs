//! The daemon's job journal (`--state-dir`): every accepted job is written
//! (its request, kind and inputs) before its submission answers, and its
//! end (state, proof, error, timings) when it ends, each in one fsync'd
//! redb transaction. A daemon started on the same state directory after a
//! crash or kill -9 runs the jobs that were queued or running again, with
//! the same job ids, and keeps the finished ones' results for AwaitProof.
//!
//! The file is `<state-dir>/jobs.redb`. One that cannot be opened is an
//! error naming it; a record that cannot be decoded is skipped with a
//! warning naming the file and the job.

use std::path::{Path, PathBuf};

use parking_lot::Mutex;
use prost::Message;
use redb::{Database, ReadableTable, TableDefinition};

use crate::proto;

const JOBS: TableDefinition<u64, &[u8]> = TableDefinition::new("jobs");
const META: TableDefinition<&str, u64> = TableDefinition::new("meta");
const INSTANCE: &str = "instance";

/// The journal's file in a state directory.
pub fn journal_path(state_dir: &Path) -> PathBuf {
    state_dir.join("jobs.redb")
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
}

/// What a daemon reads back at start.
pub struct Restored {
    /// The job id instance of the first run on this state directory.
    pub instance: u64,
    pub records: Vec<Record>,
}

pub struct Journal {
    db: Mutex<Database>,
    path: PathBuf,
}

impl Journal {
    /// Opens (or creates) the journal of `state_dir`; `fresh_instance` is
    /// the instance a new journal records.
    pub fn open(state_dir: &Path, fresh_instance: u64) -> Result<(Self, Restored), String> {
        std::fs::create_dir_all(state_dir).map_err(|e| {
            format!(
                "cannot create the state directory {}: {e}",
                state_dir.display()
            )
        })?;
        let path = journal_path(state_dir);
        let bad = |e: String| format!("cannot read the job journal {}: {e}", path.display());
        let db = Database::create(&path).map_err(|e| bad(e.to_string()))?;
        let tx = db.begin_write().map_err(|e| bad(e.to_string()))?;
        let instance = {
            tx.open_table(JOBS).map_err(|e| bad(e.to_string()))?;
            let mut meta = tx.open_table(META).map_err(|e| bad(e.to_string()))?;
            let known = meta
                .get(INSTANCE)
                .map_err(|e| bad(e.to_string()))?
                .map(|v| v.value());
            match known {
                Some(i) => i,
                None => {
                    meta.insert(INSTANCE, fresh_instance)
                        .map_err(|e| bad(e.to_string()))?;
                    fresh_instance
                }
            }
        };
        tx.commit().map_err(|e| bad(e.to_string()))?;
        let mut records = Vec::new();
        {
            let rx = db.begin_read().map_err(|e| bad(e.to_string()))?;
            let jobs = rx.open_table(JOBS).map_err(|e| bad(e.to_string()))?;
            for row in jobs.iter().map_err(|e| bad(e.to_string()))? {
                let (k, v) = row.map_err(|e| bad(e.to_string()))?;
                match Record::decode(v.value()) {
                    Ok(r) if r.seq == k.value() => records.push(r),
                    Ok(_) | Err(_) => log::warn!(
                        "skipping job {} of the journal {}: its record does not decode",
                        k.value(),
                        path.display()
                    ),
                }
            }
        }
        Ok((
            Self {
                db: Mutex::new(db),
                path,
            },
            Restored { instance, records },
        ))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Writes (or replaces) a job's record; durable when this returns.
    pub fn put(&self, r: &Record) -> Result<(), String> {
        self.write(|t| {
            t.insert(r.seq, r.encode_to_vec().as_slice())?;
            Ok(())
        })
    }

    /// Removes a job's record.
    pub fn remove(&self, seq: u64) -> Result<(), String> {
        self.write(|t| {
            t.remove(seq)?;
            Ok(())
        })
    }

    fn write(
        &self,
        f: impl FnOnce(&mut redb::Table<u64, &[u8]>) -> Result<(), redb::StorageError>,
    ) -> Result<(), String> {
        let fail = |e: String| format!("writing the job journal {}: {e}", self.path.display());
        let db = self.db.lock();
        let tx = db.begin_write().map_err(|e| fail(e.to_string()))?;
        {
            let mut t = tx.open_table(JOBS).map_err(|e| fail(e.to_string()))?;
            f(&mut t).map_err(|e| fail(e.to_string()))?;
        }
        tx.commit().map_err(|e| fail(e.to_string()))
    }
}
