//! The journal's tests: records and the sequence floor read back,
//! compaction, damaged and foreign files kept aside with every intact
//! record recovered, the lock, and the conversion of earlier builds'
//! journals.

use super::frame::HEADER;
use super::*;
use crate::job_id::JobId;

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
