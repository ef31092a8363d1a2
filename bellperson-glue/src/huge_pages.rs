//! Assignment vectors backed by transparent huge pages where the kernel
//! allows them on request (Linux, `madvise` mode, Ubuntu's default).
//!
//! A synthesis writes its assignment once, front to back, into vectors
//! reserved from the size hint. With 4 KiB pages every 4 KiB of that first
//! write is a page fault; a 2 MiB page takes one. Chain 2^20 (32 MiB of
//! aux; a, b and c as much again on the full path), ms per synthesis:
//! - a 2-core host, whose squarings alone take 52-58 ms: witness 55-58
//!   with the advice against 82-83 without, full 270-350 against 400-520;
//! - an H200 host (16 cores): witness 56-62 against 62-73, full 241-309
//!   against 256-344, and no slower first run in a process
//!   (`tests/benches/results/h200-synthesis-huge-pages-2026-12-01.txt`).

/// Allocations below this stay on ordinary pages.
const MIN_BYTES: usize = 4 << 20;
const HUGE_PAGE: usize = 2 << 20;

/// An empty vector with room for `n` elements, its reservation advised for
/// huge pages when it spans at least `MIN_BYTES`.
pub(crate) fn vec_with_capacity<T>(n: usize) -> Vec<T> {
    let mut v = Vec::with_capacity(n);
    advise(&mut v);
    v
}

#[cfg(target_os = "linux")]
fn advise<T>(v: &mut Vec<T>) {
    let bytes = v.capacity().saturating_mul(std::mem::size_of::<T>());
    if bytes < MIN_BYTES {
        return;
    }
    let start = v.as_mut_ptr() as usize;
    let lo = start.next_multiple_of(HUGE_PAGE);
    let hi = (start + bytes) / HUGE_PAGE * HUGE_PAGE;
    if hi <= lo {
        return;
    }
    // SAFETY: [lo, hi) lies inside the vector's own allocation (its
    // capacity, owned by `v` and not yet handed out); MADV_HUGEPAGE only
    // changes how the kernel backs those pages, never their contents or
    // mapping, and its failure (e.g. huge pages disabled) is harmless, so
    // the result is ignored.
    unsafe {
        libc::madvise(lo as *mut libc::c_void, hi - lo, libc::MADV_HUGEPAGE);
    }
}

#[cfg(not(target_os = "linux"))]
fn advise<T>(_: &mut Vec<T>) {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reserves_what_was_asked_and_stays_empty() {
        for n in [0usize, 1, 1000, (MIN_BYTES / 32) + 17, 3 << 20] {
            let mut v: Vec<[u64; 4]> = vec_with_capacity(n);
            assert!(v.capacity() >= n);
            assert!(v.is_empty());
            // The advised range is written and read back like any other.
            v.extend((0..n as u64).map(|i| [i, i ^ 1, i + 2, !i]));
            assert!(v
                .iter()
                .enumerate()
                .all(|(i, x)| x[0] == i as u64 && x[3] == !(i as u64)));
        }
    }
}
