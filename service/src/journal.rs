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

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::os::unix::fs::FileExt;
use std::os::unix::io::AsRawFd;
use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};

use parking_lot::Mutex;
use prost::Message;

use crate::job_id::JobId;
use crate::proto;

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

/// The file's first bytes.
const HEADER: &[u8; 16] = b"cuda-prover-jnl1";
/// The first bytes of every frame.
const FRAME_MAGIC: [u8; 4] = [0xc5, b'J', b'R', 0x9e];
/// Marker, payload length (u32 LE), CRC-32C of the length and payload.
const FRAME_HEAD: u64 = 12;
/// Larger payloads are damage (requests are at most 256 MiB).
const MAX_PAYLOAD: u64 = 1 << 30;
/// Bytes of replaced or removed records past which (and past the live
/// records' bytes) the file is rewritten with the live records alone.
const COMPACT_AFTER: u64 = 64 << 20;

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

/// The journal's instance and sequence floor, written first.
#[derive(Clone, PartialEq, Message)]
struct Meta {
    #[prost(uint64, tag = "1")]
    instance: u64,
    /// One above the largest sequence number ever journaled: ids are never
    /// issued twice, even once every record has been dropped.
    #[prost(uint64, tag = "2")]
    next_seq: u64,
}

/// A frame's payload.
#[derive(Clone, PartialEq, Message)]
struct Entry {
    #[prost(oneof = "Op", tags = "1, 2, 3")]
    op: Option<Op>,
}

#[derive(Clone, PartialEq, prost::Oneof)]
#[allow(clippy::large_enum_variant)]
enum Op {
    /// A job's record (it replaces the job's earlier one).
    #[prost(message, tag = "1")]
    Put(Record),
    /// A job's record is dropped.
    #[prost(uint64, tag = "2")]
    Remove(u64),
    #[prost(message, tag = "3")]
    Meta(Meta),
}

const TAG_PUT: u32 = 1;
const TAG_REMOVE: u32 = 2;
const TAG_META: u32 = 3;

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

// CRC-32C (Castagnoli), the reflected polynomial.
const CRC_TABLE: [u32; 256] = {
    let mut t = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 {
                (c >> 1) ^ 0x82f6_3b78
            } else {
                c >> 1
            };
            k += 1;
        }
        t[i] = c;
        i += 1;
    }
    t
};

fn crc32c(parts: &[&[u8]]) -> u32 {
    let mut c = !0u32;
    for p in parts {
        for &b in *p {
            c = CRC_TABLE[((c ^ b as u32) & 0xff) as usize] ^ (c >> 8);
        }
    }
    !c
}

/// A frame around `payload`.
fn frame(payload: &[u8]) -> Vec<u8> {
    let len = (payload.len() as u32).to_le_bytes();
    let mut f = Vec::with_capacity(FRAME_HEAD as usize + payload.len());
    f.extend_from_slice(&FRAME_MAGIC);
    f.extend_from_slice(&len);
    f.extend_from_slice(&crc32c(&[&len, payload]).to_le_bytes());
    f.extend_from_slice(payload);
    f
}

fn put_frame(r: &Record) -> Vec<u8> {
    let mut p = Vec::with_capacity(prost::encoding::message::encoded_len(TAG_PUT, r));
    prost::encoding::message::encode(TAG_PUT, r, &mut p);
    frame(&p)
}

fn remove_frame(seq: u64) -> Vec<u8> {
    let mut p = Vec::new();
    prost::encoding::uint64::encode(TAG_REMOVE, &seq, &mut p);
    frame(&p)
}

fn meta_frame(instance: u64, next_seq: u64) -> Vec<u8> {
    let mut p = Vec::new();
    prost::encoding::message::encode(TAG_META, &Meta { instance, next_seq }, &mut p);
    frame(&p)
}

/// What the first bytes of a frame's payload seem to be about (from a
/// frame that does not check out: a guess, unless only its end is lost).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum About {
    Record(u64),
    Removal(u64),
    Meta,
}

fn varint(b: &[u8]) -> Option<(u64, usize)> {
    let mut v = 0u64;
    for (i, &x) in b.iter().enumerate().take(10) {
        v |= ((x & 0x7f) as u64) << (7 * i);
        if x & 0x80 == 0 {
            return Some((v, i + 1));
        }
    }
    None
}

fn about(payload: &[u8]) -> Option<About> {
    match *payload.first()? {
        // Field 1, a message: its length, then the record's field 1 (seq).
        0x0a => {
            let (_, n) = varint(&payload[1..])?;
            let rest = &payload[1 + n..];
            if *rest.first()? != 0x08 {
                return None;
            }
            varint(&rest[1..]).map(|(seq, _)| About::Record(seq))
        }
        0x10 => varint(&payload[1..]).map(|(seq, _)| About::Removal(seq)),
        0x1a => Some(About::Meta),
        _ => None,
    }
}

/// A frame read at an offset.
#[allow(clippy::large_enum_variant)]
enum Frame {
    Ok(Op, u64),
    /// Not an intact frame: what it seems to be about, and whether it is
    /// whole up to the file's end, which comes inside it (a truncation, or
    /// a write cut short: its bytes are as written, so what it is about is
    /// known, not guessed).
    Bad(Option<About>, bool),
}

fn frame_at(file: &File, pos: u64, len: u64) -> std::io::Result<Frame> {
    if len - pos < FRAME_HEAD {
        return Ok(Frame::Bad(None, false));
    }
    let mut head = [0u8; FRAME_HEAD as usize];
    file.read_exact_at(&mut head, pos)?;
    if head[..4] != FRAME_MAGIC {
        return Ok(Frame::Bad(None, false));
    }
    let n = u32::from_le_bytes(head[4..8].try_into().unwrap()) as u64;
    let crc = u32::from_le_bytes(head[8..12].try_into().unwrap());
    if n > MAX_PAYLOAD {
        return Ok(Frame::Bad(None, false));
    }
    let end = pos + FRAME_HEAD + n;
    if end > len {
        // Cut short: what is there of its payload says what it was.
        let mut part = vec![0u8; (len - pos - FRAME_HEAD).min(64) as usize];
        file.read_exact_at(&mut part, pos + FRAME_HEAD)?;
        return Ok(Frame::Bad(about(&part), true));
    }
    let mut payload = vec![0u8; n as usize];
    file.read_exact_at(&mut payload, pos + FRAME_HEAD)?;
    if crc32c(&[&head[4..8], &payload]) != crc {
        return Ok(Frame::Bad(about(&payload), false));
    }
    match Entry::decode(payload.as_slice()) {
        Ok(Entry { op: Some(op) }) => Ok(Frame::Ok(op, FRAME_HEAD + n)),
        _ => Ok(Frame::Bad(about(&payload), false)),
    }
}

/// The offset of the next frame marker at or after `from` (`len`: none).
fn next_marker(file: &File, from: u64, len: u64) -> std::io::Result<u64> {
    const CHUNK: u64 = 1 << 16;
    let mut at = from;
    let mut buf = vec![0u8; (CHUNK + 3) as usize];
    while at + 4 <= len {
        let n = (CHUNK + 3).min(len - at) as usize;
        file.read_exact_at(&mut buf[..n], at)?;
        if let Some(i) = buf[..n].windows(4).position(|w| w == FRAME_MAGIC) {
            return Ok(at + i as u64);
        }
        at += CHUNK;
    }
    Ok(len)
}

/// A damaged byte range.
#[derive(Debug, Clone)]
struct Damage {
    at: u64,
    bytes: u64,
    /// The file ends in it.
    at_end: bool,
    /// It is one frame cut short by the file's end (a truncation, or a
    /// write the daemon did not finish), whose bytes are as written.
    cut_short: bool,
    about: Option<About>,
}

impl Damage {
    /// The job its frame is about, when that is known for sure.
    fn known_job(&self) -> Option<u64> {
        match (self.cut_short, self.about) {
            (true, Some(About::Record(seq) | About::Removal(seq))) => Some(seq),
            _ => None,
        }
    }
}

/// Every intact frame of a journal file (past its header), in order, and
/// the damaged ranges between them.
struct Scan {
    frames: Vec<(u64, u64, Op)>,
    damage: Vec<Damage>,
}

fn scan(file: &File, len: u64) -> std::io::Result<Scan> {
    let mut frames = Vec::new();
    let mut damage = Vec::new();
    let mut pos = HEADER.len() as u64;
    // Where the damage being passed over starts, what its first frame
    // seems to be about, and whether that frame is cut short.
    let mut bad: Option<(u64, Option<About>, bool)> = None;
    while pos < len {
        match frame_at(file, pos, len)? {
            Frame::Ok(op, n) => {
                if let Some((at, about, _)) = bad.take() {
                    damage.push(Damage {
                        at,
                        bytes: pos - at,
                        at_end: false,
                        cut_short: false,
                        about,
                    });
                }
                frames.push((pos, n, op));
                pos += n;
            }
            Frame::Bad(about, cut) => {
                if bad.is_none() {
                    bad = Some((pos, about, cut));
                }
                pos = next_marker(file, pos + 1, len)?;
            }
        }
    }
    if let Some((at, about, cut)) = bad {
        damage.push(Damage {
            at,
            bytes: len - at,
            at_end: true,
            cut_short: cut,
            about,
        });
    }
    Ok(Scan { frames, damage })
}

/// Where each intact frame of a journal file lies and the job it is about
/// (None: the journal's own), in file order; for tools and tests that
/// look into a journal.
pub fn frame_spans(path: &Path) -> std::io::Result<Vec<(std::ops::Range<u64>, Option<u64>)>> {
    let file = File::open(path)?;
    let len = file.metadata()?.len();
    Ok(scan(&file, len)?
        .frames
        .into_iter()
        .map(|(at, n, op)| {
            let seq = match op {
                Op::Put(r) => Some(r.seq),
                Op::Remove(seq) => Some(seq),
                Op::Meta(_) => None,
            };
            (at..at + n, seq)
        })
        .collect())
}

/// The journal's state after its frames.
struct Replay {
    instance: Option<u64>,
    next_seq: u64,
    records: HashMap<u64, Record>,
    live: HashMap<u64, (u64, u64)>,
}

fn replay(frames: Vec<(u64, u64, Op)>) -> Replay {
    let mut r = Replay {
        instance: None,
        next_seq: 1,
        records: HashMap::new(),
        live: HashMap::new(),
    };
    for (at, n, op) in frames {
        match op {
            Op::Put(rec) => {
                r.next_seq = r.next_seq.max(rec.seq.saturating_add(1));
                r.live.insert(rec.seq, (at, n));
                r.records.insert(rec.seq, rec);
            }
            Op::Remove(seq) => {
                r.next_seq = r.next_seq.max(seq.saturating_add(1));
                r.live.remove(&seq);
                r.records.remove(&seq);
            }
            Op::Meta(m) => {
                r.instance = Some(m.instance);
                r.next_seq = r.next_seq.max(m.next_seq);
            }
        }
    }
    r
}

/// A name beside `path` for a file kept aside.
fn aside_name(path: &Path, why: &str) -> PathBuf {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let mut name = path.as_os_str().to_owned();
    name.push(format!(".{why}-{secs}"));
    let mut aside = PathBuf::from(&name);
    let mut n = 1;
    while aside.exists() {
        aside = PathBuf::from(format!("{}-{n}", name.to_string_lossy()));
        n += 1;
    }
    aside
}

fn sync_dir(path: &Path) -> std::io::Result<()> {
    match path.parent() {
        Some(d) => File::open(d)?.sync_all(),
        None => Ok(()),
    }
}

/// A frame to write, and the job it is about.
type NewFrame = std::io::Result<(Option<u64>, Vec<u8>)>;

/// A file written: its path, where each job's frame landed (offset,
/// length) and its length.
type Written = (PathBuf, HashMap<u64, (u64, u64)>, u64);

/// `<path>.new`, written with a header and `frames` (made one at a time)
/// and synced.
fn write_new(path: &Path, frames: impl Iterator<Item = NewFrame>) -> std::io::Result<Written> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".new");
    let tmp = PathBuf::from(tmp);
    let file = File::create(&tmp)?;
    let mut out = BufWriter::new(&file);
    out.write_all(HEADER)?;
    let mut at = HEADER.len() as u64;
    let mut live = HashMap::new();
    for f in frames {
        let (seq, f) = f?;
        out.write_all(&f)?;
        if let Some(seq) = seq {
            live.insert(seq, (at, f.len() as u64));
        }
        at += f.len() as u64;
    }
    out.flush()?;
    drop(out);
    file.sync_all()?;
    Ok((tmp, live, at))
}

fn open_append(path: &Path) -> std::io::Result<File> {
    OpenOptions::new().read(true).append(true).open(path)
}

/// Holds the state directory's lock file, or says who holds it.
fn lock(state_dir: &Path, journal: &Path) -> Result<File, String> {
    let path = lock_path(state_dir);
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .map_err(|e| format!("cannot open {}: {e}", path.display()))?;
    // SAFETY: flock on a descriptor this function owns.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
        let e = std::io::Error::last_os_error();
        return Err(if e.kind() == std::io::ErrorKind::WouldBlock {
            format!(
                "cannot read the job journal {}: another daemon has it open (one daemon per \
                 state directory)",
                journal.display()
            )
        } else {
            format!("cannot lock {}: {e}", path.display())
        });
    }
    Ok(file)
}

/// Reads a redb journal of earlier builds: its instance, sequence floor
/// and records (those read before an error, with the error).
type Legacy = (Option<u64>, u64, Vec<Record>, Option<String>);

fn read_legacy(path: &Path) -> Legacy {
    use redb::{Database, ReadableTable, TableDefinition};
    const JOBS: TableDefinition<u64, &[u8]> = TableDefinition::new("jobs");
    const META: TableDefinition<&str, u64> = TableDefinition::new("meta");
    let mut records = Vec::new();
    let mut instance = None;
    let mut next_seq = 1;
    let mut read = || -> Result<(), String> {
        let s = |e: &dyn std::fmt::Display| e.to_string();
        let db = Database::open(path).map_err(|e| s(&e))?;
        let rx = db.begin_read().map_err(|e| s(&e))?;
        if let Ok(meta) = rx.open_table(META) {
            instance = meta.get("instance").map_err(|e| s(&e))?.map(|v| v.value());
            if let Some(n) = meta.get("next_seq").map_err(|e| s(&e))? {
                next_seq = n.value();
            }
        }
        let jobs = match rx.open_table(JOBS) {
            Ok(t) => t,
            Err(redb::TableError::TableDoesNotExist(_)) => return Ok(()),
            Err(e) => return Err(s(&e)),
        };
        for row in jobs.iter().map_err(|e| s(&e))? {
            let (k, v) = row.map_err(|e| s(&e))?;
            match Record::decode(v.value()) {
                Ok(r) if r.seq == k.value() => records.push(r),
                _ => log::warn!(
                    "skipping job {} of the journal {}: its record does not decode",
                    k.value(),
                    path.display()
                ),
            }
        }
        Ok(())
    };
    // A damaged file can make the database library panic rather than
    // return an error.
    let err = match std::panic::catch_unwind(AssertUnwindSafe(&mut read)) {
        Ok(r) => r.err(),
        Err(p) => Some(format!(
            "reading it panicked: {}",
            cuda_prover_pipeline::panic_message(&*p)
        )),
    };
    (instance, next_seq, records, err)
}

impl Journal {
    /// Opens (or creates) the journal of `state_dir`; `fresh_instance` is
    /// the instance a new journal records, and that of the new jobs after
    /// a damaged one.
    pub fn open(state_dir: &Path, fresh_instance: u64) -> Result<(Self, Restored), String> {
        std::fs::create_dir_all(state_dir).map_err(|e| {
            format!(
                "cannot create the state directory {}: {e}",
                state_dir.display()
            )
        })?;
        let path = journal_path(state_dir);
        let lock = lock(state_dir, &path)?;
        let bad =
            |e: std::io::Error| format!("cannot read the job journal {}: {e}", path.display());
        let legacy = legacy_path(state_dir);
        if !path.exists() && legacy.exists() {
            return Self::convert(&path, &legacy, fresh_instance, lock);
        }
        let len = match std::fs::metadata(&path) {
            Ok(m) => m.len(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Self::start(&path, fresh_instance, 1, Vec::new(), None, lock)
            }
            Err(e) => return Err(bad(e)),
        };
        if len == 0 {
            log::warn!(
                "the job journal {} is empty (a first start that died before writing it, or a \
                 file truncated to nothing): starting a new journal in it",
                path.display()
            );
            return Self::start(&path, fresh_instance, 1, Vec::new(), None, lock);
        }
        let file = open_append(&path).map_err(bad)?;
        let mut header = [0u8; HEADER.len()];
        let has_header = len >= HEADER.len() as u64
            && file.read_exact_at(&mut header, 0).is_ok()
            && header == *HEADER;
        if !has_header {
            let why = format!(
                "is not a job journal (its {len} bytes do not start with the journal's header)"
            );
            return Self::start(
                &path,
                fresh_instance,
                1,
                Vec::new(),
                Some((why, 0, false)),
                lock,
            );
        }
        let scanned = scan(&file, len).map_err(bad)?;
        let damage = scanned.damage;
        let readable = scanned
            .frames
            .iter()
            .filter(|(_, _, op)| !matches!(op, Op::Meta(_)))
            .count();
        let replayed = replay(scanned.frames);
        let mut records: Vec<Record> = replayed.records.into_values().collect();
        records.sort_by_key(|r| r.seq);
        match (replayed.instance, damage.is_empty()) {
            (Some(instance), true) => {
                let live_bytes = replayed.live.values().map(|&(_, n)| n).sum();
                let state = State {
                    file,
                    len,
                    live: replayed.live,
                    live_bytes,
                    dead_bytes: len - HEADER.len() as u64 - live_bytes,
                    instance,
                    next_seq: replayed.next_seq,
                };
                let journal = Self {
                    path: path.clone(),
                    state: Mutex::new(state),
                    _lock: lock,
                };
                journal.compact_if_due();
                Ok((
                    journal,
                    Restored {
                        instance,
                        journal_instance: instance,
                        next_seq: replayed.next_seq,
                        records,
                        set_aside: None,
                    },
                ))
            }
            (instance, _) => {
                // Ids go on under the journal's instance when every damaged
                // frame is known to be about one job (a cut-short last
                // record), whose sequence number is then not issued again;
                // else new jobs get a new instance, so that no id whose
                // record was lost can name another job.
                let known: Option<Vec<u64>> = damage.iter().map(Damage::known_job).collect();
                let (new_instance, next_seq) = match (instance, known) {
                    (Some(i), Some(seqs)) => (
                        i,
                        seqs.iter()
                            .map(|s| s.saturating_add(1))
                            .fold(replayed.next_seq, u64::max),
                    ),
                    _ => (fresh_instance, replayed.next_seq),
                };
                // Records that name no instance have the old journal's (or,
                // with its first frame lost, a new one: their old ids are
                // then unknown, their request ids still name them).
                let old = instance.unwrap_or(fresh_instance);
                for r in &mut records {
                    if r.instance == 0 {
                        r.instance = old;
                    }
                }
                let mut places: Vec<String> = damage
                    .iter()
                    .map(|d| describe(d, instance.unwrap_or(0)))
                    .collect();
                if instance.is_none() && !damage.iter().any(|d| d.about == Some(About::Meta)) {
                    places.push("its first record (the id instance) is missing".into());
                }
                let why = format!(
                    "is damaged: {}. {} jobs recovered from the {readable} records that \
                     check out; what the damaged bytes held is lost (a job whose acceptance was \
                     there is gone, one whose end was there runs again, a finished job whose \
                     removal was there is kept again for its retention time)",
                    places.join("; "),
                    records.len()
                );
                let n = records.len();
                Self::start(
                    &path,
                    new_instance,
                    next_seq,
                    records,
                    Some((why, n, new_instance != fresh_instance)),
                    lock,
                )
            }
        }
    }

    /// A journal written anew at `path` with `records`, under `instance`
    /// for the jobs to come; with `damaged` (why, jobs recovered, whether
    /// the journal's instance is kept), the file there is kept aside first
    /// and the reason logged.
    fn start(
        path: &Path,
        instance: u64,
        next_seq: u64,
        records: Vec<Record>,
        damaged: Option<(String, usize, bool)>,
        lock: File,
    ) -> Result<(Self, Restored), String> {
        let fail = |e: std::io::Error| format!("writing the job journal {}: {e}", path.display());
        let frames = std::iter::once::<NewFrame>(Ok((None, meta_frame(instance, next_seq))))
            .chain(records.iter().map(|r| Ok((Some(r.seq), put_frame(r)))));
        let (tmp, live, len) = write_new(path, frames).map_err(fail)?;
        let set_aside = match damaged {
            Some((why, recovered, same_instance)) => {
                let aside = aside_name(path, "damaged");
                std::fs::hard_link(path, &aside)
                    .or_else(|_| std::fs::copy(path, &aside).map(|_| ()))
                    .map_err(|e| {
                        format!(
                            "the job journal {} {why}; keeping it as {} failed: {e}",
                            path.display(),
                            aside.display()
                        )
                    })?;
                let message = format!(
                    "the job journal {} {why}. The file is kept as {}; the journal now holds \
                     the {recovered} jobs recovered, under their ids, and {}",
                    path.display(),
                    aside.display(),
                    if same_instance {
                        "ids go on (the damaged record's job id is not issued again)"
                    } else {
                        "new jobs get ids of a new instance"
                    }
                );
                log::error!("{message}");
                Some(SetAside {
                    aside,
                    message,
                    recovered,
                })
            }
            None => None,
        };
        std::fs::rename(&tmp, path).map_err(fail)?;
        sync_dir(path).map_err(fail)?;
        let file = open_append(path).map_err(fail)?;
        let live_bytes = live.values().map(|&(_, n)| n).sum();
        let journal = Self {
            path: path.to_path_buf(),
            state: Mutex::new(State {
                file,
                len,
                live,
                live_bytes,
                dead_bytes: 0,
                instance,
                next_seq,
            }),
            _lock: lock,
        };
        let journal_instance = records
            .iter()
            .map(|r| r.instance)
            .find(|&i| i != 0)
            .unwrap_or(instance);
        Ok((
            journal,
            Restored {
                instance,
                journal_instance,
                next_seq,
                records,
                set_aside,
            },
        ))
    }

    /// Converts the redb journal of an earlier build: its records are
    /// written to a new journal under their ids, and the old file is
    /// removed (kept aside when it could not all be read).
    fn convert(
        path: &Path,
        legacy: &Path,
        fresh_instance: u64,
        lock: File,
    ) -> Result<(Self, Restored), String> {
        let (instance, next_seq, mut records, err) = read_legacy(legacy);
        let old = instance.unwrap_or(fresh_instance);
        for r in &mut records {
            r.instance = old;
        }
        let n = records.len();
        let (instance, next_seq) = match (&err, instance) {
            (None, Some(i)) => (i, next_seq),
            // Some records may be lost: new jobs get a new instance.
            _ => (
                fresh_instance,
                records.iter().map(|r| r.seq + 1).fold(next_seq, u64::max),
            ),
        };
        let (journal, restored) = Self::start(path, instance, next_seq, records, None, lock)?;
        match err {
            None => {
                std::fs::remove_file(legacy).map_err(|e| {
                    format!("removing the converted journal {}: {e}", legacy.display())
                })?;
                log::info!(
                    "converted the job journal {} ({n} jobs) to {}",
                    legacy.display(),
                    path.display()
                );
            }
            Some(e) => {
                let aside = aside_name(legacy, "damaged");
                std::fs::rename(legacy, &aside).map_err(|e| {
                    format!("moving {} to {}: {e}", legacy.display(), aside.display())
                })?;
                log::error!(
                    "the job journal {} cannot all be read ({e}): the {n} jobs read before the \
                     damage are in {}, the file is kept as {}, and new jobs get ids of a new \
                     instance",
                    legacy.display(),
                    path.display(),
                    aside.display()
                );
            }
        }
        Ok((journal, restored))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends a frame, durable when this returns; the offset it landed
    /// at. A failed write is cut off again, so the file ends with whole
    /// frames.
    fn append(&self, s: &mut State, f: &[u8]) -> Result<u64, String> {
        let at = s.len;
        let r = s.file.write_all(f).and_then(|_| s.file.sync_data());
        if let Err(e) = r {
            let _ = s.file.set_len(at);
            return Err(format!(
                "writing the job journal {}: {e}",
                self.path.display()
            ));
        }
        s.len += f.len() as u64;
        Ok(at)
    }

    /// Writes (or replaces) a job's record, and raises the journal's next
    /// sequence number past it; durable when this returns.
    pub fn put(&self, r: &Record) -> Result<(), String> {
        let f = put_frame(r);
        let mut s = self.state.lock();
        let at = self.append(&mut s, &f)?;
        let n = f.len() as u64;
        if let Some((_, old)) = s.live.insert(r.seq, (at, n)) {
            s.live_bytes -= old;
            s.dead_bytes += old;
        }
        s.live_bytes += n;
        s.next_seq = s.next_seq.max(r.seq.saturating_add(1));
        drop(s);
        self.compact_if_due();
        Ok(())
    }

    /// Removes a job's record.
    pub fn remove(&self, seq: u64) -> Result<(), String> {
        let mut s = self.state.lock();
        let Some(&(_, old)) = s.live.get(&seq) else {
            return Ok(());
        };
        let f = remove_frame(seq);
        self.append(&mut s, &f)?;
        s.live.remove(&seq);
        s.live_bytes -= old;
        s.dead_bytes += old + f.len() as u64;
        drop(s);
        self.compact_if_due();
        Ok(())
    }

    /// Rewrites the file with the live records alone once replaced and
    /// removed ones are most of it (and past [`COMPACT_AFTER`]). A failure
    /// is logged: the file as it is stays the journal.
    fn compact_if_due(&self) {
        let mut s = self.state.lock();
        if s.dead_bytes < COMPACT_AFTER || s.dead_bytes < s.live_bytes {
            return;
        }
        if let Err(e) = self.compact(&mut s) {
            log::error!(
                "rewriting the job journal {} without its replaced records: {e} (it keeps them)",
                self.path.display()
            );
        }
    }

    fn compact(&self, s: &mut State) -> std::io::Result<()> {
        let mut live: Vec<(u64, u64, u64)> =
            s.live.iter().map(|(&seq, &(at, n))| (at, n, seq)).collect();
        live.sort_unstable();
        // The live frames are copied as they are, one at a time.
        let file = &s.file;
        let frames = std::iter::once::<NewFrame>(Ok((None, meta_frame(s.instance, s.next_seq))))
            .chain(live.iter().map(|&(at, n, seq)| -> NewFrame {
                let mut f = vec![0u8; n as usize];
                file.read_exact_at(&mut f, at)?;
                Ok((Some(seq), f))
            }));
        let (tmp, new_live, len) = write_new(&self.path, frames)?;
        std::fs::rename(&tmp, &self.path)?;
        sync_dir(&self.path)?;
        s.file = open_append(&self.path)?;
        log::info!(
            "rewrote the job journal {} with its {} live records ({} bytes, was {})",
            self.path.display(),
            new_live.len(),
            len,
            s.len
        );
        s.len = len;
        s.live_bytes = new_live.values().map(|&(_, n)| n).sum();
        s.live = new_live;
        s.dead_bytes = 0;
        Ok(())
    }
}

/// A damaged range, for the log.
fn describe(d: &Damage, instance: u64) -> String {
    let job = |seq: u64| JobId { instance, seq }.to_string();
    let what = match d.about {
        Some(About::Record(seq)) => format!("the record of job {}", job(seq)),
        Some(About::Removal(seq)) => format!("the removal of job {}", job(seq)),
        Some(About::Meta) => "the journal's id instance".into(),
        None => "nothing recognizable".into(),
    };
    if d.at_end {
        format!(
            "{} bytes at offset {} up to its end are cut short or unreadable (they begin with \
             {what})",
            d.bytes, d.at
        )
    } else {
        format!(
            "{} bytes at offset {} do not check out (they begin with what seems to be {what})",
            d.bytes, d.at
        )
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
            instance: 77,
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
    fn crc32c_is_castagnolis() {
        assert_eq!(crc32c(&[b"123456789"]), 0xe306_9283);
        assert_eq!(crc32c(&[b"1234", b"56789"]), 0xe306_9283);
    }

    #[test]
    fn records_and_the_sequence_floor_come_back() {
        let d = dir("plain");
        let all = journal_with(&d, 5);
        let (j, r) = Journal::open(&d, 99).unwrap();
        assert_eq!(r.instance, 77, "the first run's instance");
        assert_eq!(r.records, all);
        assert_eq!(r.next_seq, 6);
        // A record replaced: the last one is read back.
        let mut done = record(3);
        done.state = "failed".into();
        j.put(&done).unwrap();
        // Every record dropped: the floor stays, so ids are not issued twice.
        for seq in [1, 2, 4, 5] {
            j.remove(seq).unwrap();
        }
        drop(j);
        let (j, r) = Journal::open(&d, 99).unwrap();
        assert_eq!(r.records, vec![done]);
        j.remove(3).unwrap();
        drop(j);
        let (_, r) = Journal::open(&d, 99).unwrap();
        assert!(r.records.is_empty());
        assert_eq!(r.next_seq, 6);
        std::fs::remove_dir_all(&d).ok();
    }

    /// Replaced and removed records past the threshold: the file is
    /// rewritten with the live ones, which read back unchanged, and the
    /// sequence floor is kept.
    #[test]
    fn replaced_records_are_compacted_away() {
        let d = dir("compact");
        let (j, _) = Journal::open(&d, 5).unwrap();
        let big = |seq: u64, tag: u8| Record {
            seq,
            instance: 5,
            proofs: vec![vec![tag; 1 << 20]],
            ..Default::default()
        };
        for round in 0..80u8 {
            j.put(&big(1, round)).unwrap();
            j.put(&big(2, round)).unwrap();
        }
        j.put(&big(9, 1)).unwrap();
        j.remove(9).unwrap();
        let len = std::fs::metadata(journal_path(&d)).unwrap().len();
        assert!(len < 100 << 20, "not compacted: {len} bytes");
        drop(j);
        let (_, r) = Journal::open(&d, 6).unwrap();
        assert_eq!(r.records, vec![big(1, 79), big(2, 79)]);
        assert_eq!(r.next_seq, 10);
        assert!(r.set_aside.is_none());
        std::fs::remove_dir_all(&d).ok();
    }

    /// Truncated at every sixteenth of its length, or with a run of bytes
    /// overwritten at every sixteenth: the open never fails and never
    /// panics; the damaged file is kept aside under a name that says so,
    /// with its bytes; every record whose frame is intact is read back,
    /// unchanged, and no other; the message names the file; recovered
    /// records keep their instance, new jobs get the fresh one; the new
    /// journal takes writes and reads back.
    #[test]
    fn a_damaged_journal_keeps_every_intact_record() {
        let base = dir("damaged");
        for case in 0..32u64 {
            let d = base.join(format!("case-{case}"));
            let all = journal_with(&d, 40);
            let path = journal_path(&d);
            let spans = frame_spans(&path).unwrap();
            let mut bytes = std::fs::read(&path).unwrap();
            let mut cut = (bytes.len() as u64 * (case % 16 + 1) / 17) as usize;
            // Mid-frame (a cut between two frames looks like a journal
            // that ends there).
            if spans.iter().any(|(s, _)| s.start as usize == cut) {
                cut += 5;
            }
            let damaged = if case < 16 {
                bytes.truncate(cut);
                cut as u64..u64::MAX
            } else {
                let end = (cut + 300).min(bytes.len());
                for b in &mut bytes[cut..end] {
                    *b ^= 0xa5;
                }
                cut as u64..end as u64
            };
            std::fs::write(&path, &bytes).unwrap();
            let intact: Vec<u64> = spans
                .iter()
                .filter(|(s, _)| s.end <= damaged.start || s.start >= damaged.end)
                .filter_map(|(_, seq)| *seq)
                .collect();
            let (j, r) = Journal::open(&d, 1234).unwrap_or_else(|e| panic!("case {case}: {e}"));
            let got: Vec<u64> = r.records.iter().map(|x| x.seq).collect();
            assert_eq!(got, intact, "case {case}: the intact records");
            for rec in &r.records {
                assert_eq!(Some(rec), all.get(rec.seq as usize - 1), "case {case}");
            }
            let s = r
                .set_aside
                .as_ref()
                .unwrap_or_else(|| panic!("case {case}: not set aside"));
            eprintln!("case {case}: {}", s.message);
            assert_eq!(s.recovered, intact.len());
            assert!(
                s.message.contains(&path.display().to_string())
                    && s.message.contains(&s.aside.display().to_string())
                    && s.message
                        .contains(&format!("{} jobs recovered", intact.len())),
                "case {case}: {}",
                s.message
            );
            assert!(
                s.aside
                    .file_name()
                    .unwrap()
                    .to_string_lossy()
                    .starts_with("jobs.journal.damaged-"),
                "{}",
                s.aside.display()
            );
            assert_eq!(std::fs::read(&s.aside).unwrap(), bytes, "case {case}: kept");
            assert!(!intact.is_empty(), "case {case}");
            assert_eq!(r.journal_instance, 77, "case {case}: records keep theirs");
            assert!(r.next_seq > *intact.last().unwrap());
            if case >= 16 {
                // Overwritten bytes: what they held is not known for sure.
                assert_eq!(r.instance, 1234, "case {case}: new jobs, a new instance");
            } else if r.instance == 77 {
                // Cut short: the cut record's job is known, its id not
                // issued again.
                let cut_seq = spans
                    .iter()
                    .find(|(s, _)| s.contains(&(cut as u64)))
                    .and_then(|(_, seq)| *seq)
                    .unwrap();
                assert!(r.next_seq > cut_seq, "case {case}");
                assert!(s.message.contains(&format!(
                    "the record of job {}",
                    JobId {
                        instance: 77,
                        seq: cut_seq
                    }
                )));
            } else {
                assert_eq!(r.instance, 1234, "case {case}");
            }
            j.put(&record(41)).unwrap();
            drop(j);
            let (_, again) = Journal::open(&d, 5).unwrap();
            assert!(again.set_aside.is_none(), "case {case}: reads back");
            assert_eq!(again.instance, r.instance);
            assert_eq!(again.records.len(), intact.len() + 1);
        }
        std::fs::remove_dir_all(&base).ok();
    }

    /// A file that is not a journal, and one cut inside its header: kept
    /// aside, a new journal starts.
    #[test]
    fn a_file_that_is_not_a_journal_is_kept_aside() {
        for bytes in [vec![0x5a; 8192], HEADER[..7].to_vec()] {
            let d = dir("foreign");
            std::fs::write(journal_path(&d), &bytes).unwrap();
            let (_, r) = Journal::open(&d, 3).unwrap();
            let s = r.set_aside.expect("set aside");
            assert!(s.message.contains("is not a job journal"), "{}", s.message);
            assert_eq!(std::fs::read(&s.aside).unwrap(), bytes);
            assert!(r.records.is_empty());
            assert_eq!(r.instance, 3);
            std::fs::remove_dir_all(&d).ok();
        }
    }

    #[test]
    fn a_journal_another_daemon_holds_stops_the_start() {
        let d = dir("held");
        let (_held, _) = Journal::open(&d, 1).unwrap();
        let e = Journal::open(&d, 2).err().expect("the second open fails");
        assert!(
            e.contains("jobs.journal") && e.contains("another daemon"),
            "{e}"
        );
        assert!(!std::fs::read_dir(&d).unwrap().any(|e| e
            .unwrap()
            .file_name()
            .to_string_lossy()
            .contains("damaged")));
        std::fs::remove_dir_all(&d).ok();
    }

    /// A redb journal of an earlier build is converted: its records come
    /// back under its instance, and the file is gone.
    #[test]
    fn an_earlier_builds_journal_is_converted() {
        use redb::{Database, TableDefinition};
        const JOBS: TableDefinition<u64, &[u8]> = TableDefinition::new("jobs");
        const META: TableDefinition<&str, u64> = TableDefinition::new("meta");
        let d = dir("legacy");
        let old: Vec<Record> = (1..=3)
            .map(|seq| Record {
                instance: 0,
                ..record(seq)
            })
            .collect();
        {
            let db = Database::create(legacy_path(&d)).unwrap();
            let tx = db.begin_write().unwrap();
            {
                let mut t = tx.open_table(JOBS).unwrap();
                for r in &old {
                    t.insert(r.seq, r.encode_to_vec().as_slice()).unwrap();
                }
                let mut m = tx.open_table(META).unwrap();
                m.insert("instance", 42u64).unwrap();
                m.insert("next_seq", 9u64).unwrap();
            }
            tx.commit().unwrap();
        }
        let (_, r) = Journal::open(&d, 7).unwrap();
        assert_eq!(r.instance, 42);
        assert_eq!(r.next_seq, 9);
        assert_eq!(r.records.len(), 3);
        assert!(r.records.iter().all(|x| x.instance == 42));
        assert!(!legacy_path(&d).exists());
        std::fs::remove_dir_all(&d).ok();
    }
}
