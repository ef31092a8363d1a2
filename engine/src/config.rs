//! How an engine is set up: its devices, ownership policy, worker CPU sets
//! and thread counts, and the device knobs it sets on them.

use cuda_prover_device::StreamSharing;

use crate::devices::DeviceSelection;

/// Which device proves which item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    /// Item k on device k % n: deterministic.
    RoundRobin,
    /// The next item to the device expected to be free first.
    LeastLoaded,
}

impl Policy {
    pub fn name(self) -> &'static str {
        match self {
            Policy::RoundRobin => "round-robin",
            Policy::LeastLoaded => "least-loaded",
        }
    }
}

impl std::str::FromStr for Policy {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "round-robin" | "rr" => Ok(Policy::RoundRobin),
            "least-loaded" | "ll" => Ok(Policy::LeastLoaded),
            o => Err(format!(
                "unknown policy '{o}' (expected round-robin or least-loaded)"
            )),
        }
    }
}

#[derive(Debug, Clone)]
pub struct EngineConfig {
    pub devices: DeviceSelection,
    pub policy: Policy,
    /// One CPU set per device, in device order; its workers run there.
    pub worker_cpus: Option<Vec<Vec<usize>>>,
    /// Threads that prepare items (a partition's synthesis); 0
    /// means one per worker.
    pub synthesis_threads: usize,
    /// Items prepared ahead, beside the workers' running and queued ones:
    /// each adds a preparing thread and one item to the in-flight bound (0
    /// by default). For preparations that use every core each (a PoRep
    /// partition's parallel witness), one lets the next start while the
    /// last pieces of one finish.
    pub prepare_ahead: usize,
    /// Workers per device (at least 1). Workers of one device share its
    /// mutex: device parts stay serialized while hand-offs and epilogues
    /// overlap. Each worker adds one queue slot and one running item to
    /// the in-flight bound (2 x workers, plus
    /// `prepare_ahead`).
    pub workers_per_device: usize,
    /// A cap on the memory the core may use on each of the engine's devices
    /// (bytes; `--device-memory-limit`). A key that does not fit next to a
    /// proof's working set is streamed through the device in chunks. `None`
    /// leaves the context's limits as they are.
    pub device_memory_limit: Option<u64>,
    /// When device parts with the same streamed key share one pass over
    /// its chunks on the engine's devices (`--stream-sharing`). `None` leaves
    /// the context's setting as it is (by default `Auto`).
    pub stream_sharing: Option<StreamSharing>,
}

impl Default for EngineConfig {
    fn default() -> Self {
        Self {
            devices: DeviceSelection::All,
            policy: Policy::RoundRobin,
            worker_cpus: None,
            synthesis_threads: 0,
            prepare_ahead: 0,
            workers_per_device: 1,
            device_memory_limit: None,
            stream_sharing: None,
        }
    }
}

/// The most workers a device takes (`--workers-per-device` of `prove` and
/// `serve`): past it a value is a mistake and costs threads before any work.
pub const MAX_WORKERS_PER_DEVICE: i64 = cuda_prover_device::MAX_DEVICE_WORKERS as i64;

/// The most simulated devices of the host backend (the core's own limit).
pub const MAX_HOST_DEVICES: i64 = 64;

/// A memory size for `--device-memory-limit`, in MiB: a bare number is
/// MiB; `MiB`, `GiB` and `TiB` (any case) scale it. At least 1 MiB, at
/// most what fits in bytes.
pub fn parse_memory_mib(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let lower = t.to_ascii_lowercase();
    let (num, scale) = [("tib", 1u64 << 20), ("gib", 1 << 10), ("mib", 1)]
        .iter()
        .find_map(|(u, k)| lower.strip_suffix(u).map(|n| (n.trim().to_string(), *k)))
        .unwrap_or((lower.clone(), 1));
    let n: u64 = num
        .parse()
        .map_err(|_| format!("'{t}' is not a size (MiB, or a number with MiB, GiB or TiB)"))?;
    let mib = n
        .checked_mul(scale)
        .filter(|m| (1..=(u64::MAX >> 20)).contains(m))
        .ok_or_else(|| format!("'{t}' is out of range (1 MiB to 2^44 MiB)"))?;
    Ok(mib)
}

#[cfg(test)]
mod size_tests {
    use super::parse_memory_mib as parse_mib;

    #[test]
    fn sizes_with_and_without_units() {
        assert_eq!(parse_mib("22528"), Ok(22528));
        assert_eq!(parse_mib("22GiB"), Ok(22528));
        assert_eq!(parse_mib("14gib"), Ok(14336));
        assert_eq!(parse_mib("512MiB"), Ok(512));
        assert_eq!(parse_mib("1TiB"), Ok(1 << 20));
        assert!(parse_mib("0").is_err());
        assert!(parse_mib("22GB").is_err());
        assert!(parse_mib("-1").is_err());
        assert!(parse_mib(&format!("{}TiB", u64::MAX)).is_err());
    }
}
