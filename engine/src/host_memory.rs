//! How much host memory this process may still take: the kernel's estimate
//! of available memory (`MemAvailable`), lowered to what the process's
//! cgroup (v2) still allows. A job checks its largest host allocations
//! against it before making them, so that a size the machine cannot hold is
//! a clear error instead of an abort in the allocator.

use std::fs;

/// Bytes this process may still allocate, or `None` where the system does
/// not say (not Linux, no `/proc`).
pub fn available_bytes() -> Option<u64> {
    let mem = fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|t| meminfo_available(&t));
    let cgroup = cgroup_room();
    match (mem, cgroup) {
        (Some(m), Some(c)) => Some(m.min(c)),
        (m, c) => m.or(c),
    }
}

/// `MemAvailable` of a `/proc/meminfo` text, in bytes.
fn meminfo_available(text: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

/// What the process's cgroup v2 still allows: `memory.max` minus
/// `memory.current`, or `None` without a limit.
fn cgroup_room() -> Option<u64> {
    let own = fs::read_to_string("/proc/self/cgroup").ok()?;
    // cgroup v2: one line "0::/path".
    let path = own.lines().find_map(|l| l.strip_prefix("0::"))?;
    let dir = format!("/sys/fs/cgroup{}", path.trim_end());
    let max = fs::read_to_string(format!("{dir}/memory.max")).ok()?;
    let max: u64 = max.trim().parse().ok()?; // "max": no limit
    let current: u64 = fs::read_to_string(format!("{dir}/memory.current"))
        .ok()?
        .trim()
        .parse()
        .ok()?;
    Some(max.saturating_sub(current))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_mem_available() {
        let t = "MemTotal:       24000000 kB\nMemFree:  100 kB\nMemAvailable:   2048 kB\n";
        assert_eq!(meminfo_available(t), Some(2048 * 1024));
        assert_eq!(meminfo_available("MemTotal: 1 kB\n"), None);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn this_machine_reports_some_memory() {
        let a = available_bytes().expect("Linux reports available memory");
        assert!(a > 0);
    }
}
