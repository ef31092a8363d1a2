//! Reading a journal file back: the frame at an offset, the next marker
//! past damage, every intact frame and the damaged ranges between them
//! (`scan`, `frame_spans`), the records they leave (`replay`), and a
//! damaged range said for the log (`describe`).

use std::collections::HashMap;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;

use prost::Message;

use super::frame::{about, crc32c, About, Entry, Op, FRAME_HEAD, FRAME_MAGIC, HEADER, MAX_PAYLOAD};
use super::Record;
use crate::job_id::JobId;

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
pub(super) struct Damage {
    at: u64,
    bytes: u64,
    /// The file ends in it.
    at_end: bool,
    /// It is one frame cut short by the file's end (a truncation, or a
    /// write the daemon did not finish), whose bytes are as written.
    cut_short: bool,
    pub(super) about: Option<About>,
}

impl Damage {
    /// The job its frame is about, when that is known for sure.
    pub(super) fn known_job(&self) -> Option<u64> {
        match (self.cut_short, self.about) {
            (true, Some(About::Record(seq) | About::Removal(seq))) => Some(seq),
            _ => None,
        }
    }
}

/// Every intact frame of a journal file (past its header), in order, and
/// the damaged ranges between them.
pub(super) struct Scan {
    pub(super) frames: Vec<(u64, u64, Op)>,
    pub(super) damage: Vec<Damage>,
}

pub(super) fn scan(file: &File, len: u64) -> std::io::Result<Scan> {
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
pub(super) struct Replay {
    pub(super) instance: Option<u64>,
    pub(super) next_seq: u64,
    pub(super) records: HashMap<u64, Record>,
    pub(super) live: HashMap<u64, (u64, u64)>,
}

pub(super) fn replay(frames: Vec<(u64, u64, Op)>) -> Replay {
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

/// A damaged range, for the log.
pub(super) fn describe(d: &Damage, instance: u64) -> String {
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
