//! A job's id on the wire: 128 bits, never repeated across daemon runs.
//!
//! The high 64 bits are the daemon run's instance, drawn from the operating
//! system's randomness when the daemon starts; the low 64 bits are the run's
//! sequence number (1, 2, ...), which also orders jobs of one priority. A
//! client holding an id of an earlier run (the daemon restarted) gets
//! NOT_FOUND, never another job's result. Written as 32 hex digits.

use std::collections::hash_map::RandomState;
use std::fmt;
use std::hash::{BuildHasher, Hasher};
use std::str::FromStr;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct JobId {
    pub instance: u64,
    pub seq: u64,
}

/// A fresh instance for a daemon run: std's `RandomState` is keyed from the
/// operating system's randomness in each process; the clock and the process
/// id are mixed in as well, and 0 is never drawn.
pub fn new_instance() -> u64 {
    let mut h = RandomState::new().build_hasher();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    h.write_u128(now);
    h.write_u32(std::process::id());
    h.finish().max(1)
}

impl fmt::Display for JobId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:016x}{:016x}", self.instance, self.seq)
    }
}

/// Why a string is not a job id.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a job id is 1 to 32 hex digits")]
pub struct NotAJobId;

impl FromStr for JobId {
    type Err = NotAJobId;

    /// 1 to 32 hex digits (fewer than 32: leading zeros left out, as an id
    /// of no daemon run, which is then unknown).
    fn from_str(s: &str) -> Result<Self, NotAJobId> {
        if s.is_empty() || s.len() > 32 || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(NotAJobId);
        }
        let v = u128::from_str_radix(s, 16).map_err(|_| NotAJobId)?;
        Ok(JobId {
            instance: (v >> 64) as u64,
            seq: v as u64,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_refuses_what_is_not_hex() {
        let id = JobId {
            instance: 0xdead_beef_0123_4567,
            seq: 42,
        };
        let s = id.to_string();
        assert_eq!(s.len(), 32);
        assert_eq!(s.parse::<JobId>(), Ok(id));
        assert_eq!(
            "2a".parse::<JobId>(),
            Ok(JobId {
                instance: 0,
                seq: 42
            })
        );
        for bad in ["", "abc-1", "g", &"f".repeat(33), " 1"] {
            assert_eq!(bad.parse::<JobId>(), Err(NotAJobId), "{bad:?}");
        }
    }

    #[test]
    fn two_runs_draw_different_instances() {
        assert_ne!(new_instance(), new_instance());
        assert_ne!(new_instance(), 0);
    }
}
