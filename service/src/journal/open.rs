//! Opening a journal at start: the lock taken, the file read back (or
//! one of earlier builds converted), and a damaged or foreign file kept
//! aside with the journal written anew from the jobs recovered.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;

use parking_lot::Mutex;

use super::files::{aside_name, lock, open_append, sync_dir, write_new, NewFrame};
use super::frame::{meta_frame, put_frame, About, Op, HEADER};
use super::scan::{describe, replay, scan, Damage};
use super::{journal_path, legacy_path, Journal, Record, Restored, SetAside, State};

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
    pub(super) fn start(
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
}
