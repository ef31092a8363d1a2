//! The journal of earlier builds, a redb database (`jobs.redb`): read
//! once at start and converted to a journal file.

use std::fs::File;
use std::panic::AssertUnwindSafe;
use std::path::Path;

use prost::Message;

use super::files::aside_name;
use super::{Journal, Record, Restored};

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
    /// Converts the redb journal of an earlier build: its records are
    /// written to a new journal under their ids, and the old file is
    /// removed (kept aside when it could not all be read).
    pub(super) fn convert(
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
}
