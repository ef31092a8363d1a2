//! CPU sets for workers: `--worker-cpus 0-7,8-15` gives worker i the i-th set,
//! applied to the worker's thread with sched_setaffinity.

/// Parses one set per worker: sets separated by commas, each a CPU or a
/// range `a-b`; `+` joins parts of one set (`0-3+8-11`).
pub fn parse_cpu_sets(s: &str) -> Result<Vec<Vec<usize>>, String> {
    let mut sets = Vec::new();
    for set in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let mut cpus = Vec::new();
        for part in set.split('+') {
            let (a, b) = match part.split_once('-') {
                Some((a, b)) => (a, b),
                None => (part, part),
            };
            let a: usize = a
                .trim()
                .parse()
                .map_err(|_| format!("bad CPU '{a}' in '{set}'"))?;
            let b: usize = b
                .trim()
                .parse()
                .map_err(|_| format!("bad CPU '{b}' in '{set}'"))?;
            if a > b || b >= 1024 {
                return Err(format!("bad CPU range '{part}'"));
            }
            cpus.extend(a..=b);
        }
        sets.push(cpus);
    }
    if sets.is_empty() {
        return Err("empty CPU set list".into());
    }
    Ok(sets)
}

/// Pins the calling thread to `cpus`.
pub fn pin_current_thread(cpus: &[usize]) -> Result<(), String> {
    // SAFETY: cpu_set_t is plain data; CPU_SET stays within its bounds
    // (checked against CPU_SETSIZE).
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for &c in cpus {
            if c >= libc::CPU_SETSIZE as usize {
                return Err(format!("CPU {c} is beyond CPU_SETSIZE"));
            }
            libc::CPU_SET(c, &mut set);
        }
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(format!(
                "sched_setaffinity({cpus:?}) failed: {}",
                std::io::Error::last_os_error()
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_sets() {
        assert_eq!(
            parse_cpu_sets("0-1,2-3").unwrap(),
            vec![vec![0, 1], vec![2, 3]]
        );
        assert_eq!(
            parse_cpu_sets("0+4-5,7").unwrap(),
            vec![vec![0, 4, 5], vec![7]]
        );
        assert!(parse_cpu_sets("3-1").is_err());
        assert!(parse_cpu_sets("x").is_err());
    }
}
