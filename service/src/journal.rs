//! The daemon's job journal (`--state-dir`): every accepted job is written
//! (its request, kind and inputs) before its submission answers, and its
//! end (state, proof, error, timings, when it ended) when it ends, each in
//! one fsync'd redb transaction. A daemon started on the same state
//! directory after a crash or kill -9 runs the jobs that were queued or
//! running again, with the same job ids, and keeps the finished ones'
//! results for AwaitProof until their retention time has passed.
//!
//! The file is `<state-dir>/jobs.redb`. A record that cannot be decoded is
//! skipped with a warning naming the file and the job. A file that cannot
//! be read as a journal (truncated, corrupted, not a redb file) is moved
//! aside to `jobs.redb.corrupt-<unix seconds>` with an error naming both
//! files, and a new journal starts with the records that could be read
//! before the damage, under a new id instance (so that no id of the old
//! file can name another job; request ids still name their jobs). A
//! journal that another daemon holds, or that the file system refuses,
//! stops the start with an error naming the file.

use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};

use parking_lot::Mutex;
use prost::Message;
use redb::{Database, ReadableTable, TableDefinition};

use crate::proto;

const JOBS: TableDefinition<u64, &[u8]> = TableDefinition::new("jobs");
const META: TableDefinition<&str, u64> = TableDefinition::new("meta");
const INSTANCE: &str = "instance";
/// One above the largest sequence number ever journaled: ids are never
/// issued twice, even once every record has been dropped.
const NEXT_SEQ: &str = "next_seq";

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
    /// When the job ended, in ms since the Unix epoch (0: not ended, or
    /// ended before the journal kept it).
    #[prost(uint64, tag = "11")]
    pub finished_ms: u64,
}

/// What a daemon reads back at start.
pub struct Restored {
    /// The job id instance of the first run on this state directory (a
    /// new one after a journal was set aside).
    pub instance: u64,
    /// The sequence numbers below this one were issued already.
    pub next_seq: u64,
    pub records: Vec<Record>,
    /// An unreadable journal moved aside: where to, and why.
    pub set_aside: Option<(PathBuf, String)>,
}

pub struct Journal {
    db: Mutex<Database>,
    path: PathBuf,
}

/// Why a journal could not be read.
enum ReadError {
    /// The file is damaged: it is set aside, with the records read before
    /// the damage.
    Unreadable(String, Vec<Record>),
    /// Anything else (held by another daemon, refused by the file system):
    /// the start stops.
    Fatal(String),
}

fn classify(e: impl Into<redb::Error>, salvaged: &mut Vec<Record>) -> ReadError {
    let e: redb::Error = e.into();
    let damaged = match &e {
        redb::Error::DatabaseAlreadyOpen => false,
        redb::Error::Io(io) => matches!(
            io.kind(),
            std::io::ErrorKind::UnexpectedEof | std::io::ErrorKind::InvalidData
        ),
        _ => true,
    };
    if damaged {
        ReadError::Unreadable(e.to_string(), std::mem::take(salvaged))
    } else if matches!(e, redb::Error::DatabaseAlreadyOpen) {
        ReadError::Fatal("another daemon has it open (one daemon per state directory)".into())
    } else {
        ReadError::Fatal(e.to_string())
    }
}

/// Opens `path` and reads every record; a new journal gets `fresh` as its
/// instance.
fn read(path: &Path, fresh: u64) -> Result<(Database, u64, u64, Vec<Record>), ReadError> {
    let mut got = Vec::new();
    let db = Database::create(path).map_err(|e| classify(e, &mut got))?;
    let tx = db.begin_write().map_err(|e| classify(e, &mut got))?;
    let (instance, next_seq) = {
        tx.open_table(JOBS).map_err(|e| classify(e, &mut got))?;
        let mut meta = tx.open_table(META).map_err(|e| classify(e, &mut got))?;
        let known = meta
            .get(INSTANCE)
            .map_err(|e| classify(e, &mut got))?
            .map(|v| v.value());
        let next_seq = meta
            .get(NEXT_SEQ)
            .map_err(|e| classify(e, &mut got))?
            .map(|v| v.value())
            .unwrap_or(1);
        let instance = match known {
            Some(i) => i,
            None => {
                meta.insert(INSTANCE, fresh)
                    .map_err(|e| classify(e, &mut got))?;
                fresh
            }
        };
        (instance, next_seq)
    };
    tx.commit().map_err(|e| classify(e, &mut got))?;
    {
        let rx = db.begin_read().map_err(|e| classify(e, &mut got))?;
        let jobs = rx.open_table(JOBS).map_err(|e| classify(e, &mut got))?;
        for row in jobs.iter().map_err(|e| classify(e, &mut got))? {
            let (k, v) = row.map_err(|e| classify(e, &mut got))?;
            match Record::decode(v.value()) {
                Ok(r) if r.seq == k.value() => got.push(r),
                Ok(_) | Err(_) => log::warn!(
                    "skipping job {} of the journal {}: its record does not decode",
                    k.value(),
                    path.display()
                ),
            }
        }
    }
    Ok((db, instance, next_seq, got))
}

/// A name beside `path` for a journal that could not be read.
fn aside_name(path: &Path) -> PathBuf {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let mut name = path.as_os_str().to_owned();
    name.push(format!(".corrupt-{secs}"));
    let mut aside = PathBuf::from(&name);
    let mut n = 1;
    while aside.exists() {
        aside = PathBuf::from(format!("{}-{n}", name.to_string_lossy()));
        n += 1;
    }
    aside
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
        if std::fs::metadata(&path).is_ok_and(|m| m.len() == 0) {
            log::warn!(
                "the job journal {} is empty (a first start that died before writing it, or a \
                 file truncated to nothing): starting a new journal in it",
                path.display()
            );
        }
        // A damaged file can make the database library panic rather than
        // return an error: that, too, is an unreadable journal.
        let read = std::panic::catch_unwind(AssertUnwindSafe(|| read(&path, fresh_instance)))
            .unwrap_or_else(|p| {
                let why = p
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| p.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "no message".into());
                Err(ReadError::Unreadable(
                    format!("reading it panicked: {why}"),
                    Vec::new(),
                ))
            });
        let (why, salvaged) = match read {
            Ok((db, instance, next_seq, records)) => {
                return Ok((
                    Self {
                        db: Mutex::new(db),
                        path,
                    },
                    Restored {
                        instance,
                        next_seq,
                        records,
                        set_aside: None,
                    },
                ))
            }
            Err(ReadError::Fatal(e)) => return Err(bad(e)),
            Err(ReadError::Unreadable(why, salvaged)) => (why, salvaged),
        };
        let aside = aside_name(&path);
        std::fs::rename(&path, &aside).map_err(|e| {
            bad(format!(
                "{why}; moving it aside to {} failed: {e}",
                aside.display()
            ))
        })?;
        log::error!(
            "the job journal {} cannot be read ({why}): moved it aside to {} and started a \
             new journal with the {} jobs read before the damage (their ids change; their \
             request ids still name them)",
            path.display(),
            aside.display(),
            salvaged.len()
        );
        let db = Database::create(&path).map_err(|e| bad(e.to_string()))?;
        let next_seq = salvaged.iter().map(|r| r.seq + 1).max().unwrap_or(1);
        let journal = Self {
            db: Mutex::new(db),
            path: path.clone(),
        };
        journal.write(|t| {
            for r in &salvaged {
                t.insert(r.seq, r.encode_to_vec().as_slice())?;
            }
            Ok(())
        })?;
        journal.set_meta(INSTANCE, fresh_instance)?;
        journal.set_meta(NEXT_SEQ, next_seq)?;
        Ok((
            journal,
            Restored {
                instance: fresh_instance,
                next_seq,
                records: salvaged,
                set_aside: Some((aside, why)),
            },
        ))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn set_meta(&self, key: &str, value: u64) -> Result<(), String> {
        let fail = |e: String| format!("writing the job journal {}: {e}", self.path.display());
        let db = self.db.lock();
        let tx = db.begin_write().map_err(|e| fail(e.to_string()))?;
        {
            let mut t = tx.open_table(META).map_err(|e| fail(e.to_string()))?;
            t.insert(key, value).map_err(|e| fail(e.to_string()))?;
        }
        tx.commit().map_err(|e| fail(e.to_string()))
    }

    /// Writes (or replaces) a job's record, and raises the journal's next
    /// sequence number past it; durable when this returns.
    pub fn put(&self, r: &Record) -> Result<(), String> {
        let fail = |e: String| format!("writing the job journal {}: {e}", self.path.display());
        let db = self.db.lock();
        let tx = db.begin_write().map_err(|e| fail(e.to_string()))?;
        {
            let mut t = tx.open_table(JOBS).map_err(|e| fail(e.to_string()))?;
            t.insert(r.seq, r.encode_to_vec().as_slice())
                .map_err(|e| fail(e.to_string()))?;
            let mut m = tx.open_table(META).map_err(|e| fail(e.to_string()))?;
            let next = m
                .get(NEXT_SEQ)
                .map_err(|e| fail(e.to_string()))?
                .map(|v| v.value())
                .unwrap_or(1);
            if r.seq >= next {
                m.insert(NEXT_SEQ, r.seq + 1)
                    .map_err(|e| fail(e.to_string()))?;
            }
        }
        tx.commit().map_err(|e| fail(e.to_string()))
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

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!(
            "cuda-prover-journal-{tag}-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos()
        ));
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn record(seq: u64) -> Record {
        Record {
            seq,
            request_id: format!("r{seq}"),
            digest: seq * 7,
            state: if seq.is_multiple_of(2) {
                "done".into()
            } else {
                String::new()
            },
            proofs: vec![vec![seq as u8; 192]],
            partitions: 1,
            finished_ms: seq * 1000,
            ..Default::default()
        }
    }

    /// A journal of `n` records, closed.
    fn journal_with(d: &Path, n: u64) -> Vec<Record> {
        let (j, r) = Journal::open(d, 77).unwrap();
        assert!(r.records.is_empty() && r.set_aside.is_none());
        let all: Vec<Record> = (1..=n).map(record).collect();
        for r in &all {
            j.put(r).unwrap();
        }
        all
    }

    #[test]
    fn records_and_the_sequence_floor_come_back() {
        let d = dir("plain");
        let all = journal_with(&d, 5);
        let (j, r) = Journal::open(&d, 99).unwrap();
        assert_eq!(r.instance, 77, "the first run's instance");
        assert_eq!(r.records, all);
        assert_eq!(r.next_seq, 6);
        // Every record dropped: the floor stays, so ids are not issued twice.
        for seq in 1..=5 {
            j.remove(seq).unwrap();
        }
        drop(j);
        let (_, r) = Journal::open(&d, 99).unwrap();
        assert!(r.records.is_empty());
        assert_eq!(r.next_seq, 6);
        std::fs::remove_dir_all(&d).ok();
    }

    /// Truncated at every eighth of its length, or with a run of bytes
    /// overwritten at every eighth: the open never fails and never panics;
    /// a damaged file is set aside under a name that says so, keeping its
    /// bytes; what is read back is some of the records, unchanged; the new
    /// journal takes writes and reads back.
    #[test]
    fn a_damaged_journal_is_set_aside_and_what_can_be_read_is_kept() {
        let base = dir("damaged");
        let mut set_aside = 0;
        for cut in 0..16u64 {
            let d = base.join(format!("case-{cut}"));
            let all = journal_with(&d, 40);
            let path = journal_path(&d);
            let mut bytes = std::fs::read(&path).unwrap();
            let at = (bytes.len() as u64 * (cut % 8) / 8) as usize;
            if cut < 8 {
                bytes.truncate(at);
            } else {
                let end = (at + 4096).min(bytes.len());
                for b in &mut bytes[at..end] {
                    *b = 0xa5;
                }
            }
            std::fs::write(&path, &bytes).unwrap();
            let (j, r) = Journal::open(&d, 1234).unwrap_or_else(|e| panic!("case {cut}: {e}"));
            for rec in &r.records {
                assert_eq!(Some(rec), all.get(rec.seq as usize - 1), "case {cut}");
            }
            eprintln!(
                "case {cut}: {} of 40 records read{}",
                r.records.len(),
                match &r.set_aside {
                    Some((_, why)) => format!(", set aside: {why}"),
                    None => String::new(),
                }
            );
            if let Some((aside, why)) = &r.set_aside {
                set_aside += 1;
                assert!(!why.is_empty());
                assert!(
                    aside
                        .file_name()
                        .unwrap()
                        .to_string_lossy()
                        .starts_with("jobs.redb.corrupt-"),
                    "{}",
                    aside.display()
                );
                assert_eq!(
                    std::fs::read(aside).unwrap(),
                    bytes,
                    "case {cut}: kept as it was"
                );
                assert_eq!(r.instance, 1234, "case {cut}: a new instance");
            }
            let next = r.next_seq.max(41);
            j.put(&record(next)).unwrap();
            drop(j);
            let (_, again) = Journal::open(&d, 5).unwrap();
            assert!(
                again.set_aside.is_none(),
                "case {cut}: the new journal reads back"
            );
            assert!(again.records.iter().any(|x| x.seq == next));
        }
        assert!(
            set_aside >= 8,
            "{set_aside} of 16 damaged files were set aside"
        );
        std::fs::remove_dir_all(&base).ok();
    }

    #[test]
    fn a_journal_another_daemon_holds_stops_the_start() {
        let d = dir("held");
        let (_held, _) = Journal::open(&d, 1).unwrap();
        let e = Journal::open(&d, 2).err().expect("the second open fails");
        assert!(
            e.contains("jobs.redb") && e.contains("another daemon"),
            "{e}"
        );
        assert!(!std::fs::read_dir(&d).unwrap().any(|e| e
            .unwrap()
            .file_name()
            .to_string_lossy()
            .contains("corrupt")));
        std::fs::remove_dir_all(&d).ok();
    }
}
