//! Writing to an open journal: a job's record or its removal appended
//! and synced, and the file rewritten with the live records alone once
//! replaced and removed ones are most of it.

use std::io::Write;
use std::os::unix::fs::FileExt;

use super::files::{open_append, sync_dir, write_new, NewFrame};
use super::frame::{meta_frame, put_frame, remove_frame};
use super::{Journal, Record, State};

/// Bytes of replaced or removed records past which (and past the live
/// records' bytes) the file is rewritten with the live records alone.
const COMPACT_AFTER: u64 = 64 << 20;

impl Journal {
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
    pub(super) fn compact_if_due(&self) {
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
