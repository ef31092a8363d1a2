//! C1 files are parsed with bounded memory: `C1File::parse` keeps no copy
//! of the output (it counts the vanilla proofs and skips them), the
//! lotus / Curio wrapper's base64 is decoded as it is read (no decoded
//! copy), and `output` builds the typed output straight from the bytes (no
//! `serde_json::Value`, which cost about 16 times the file). Measured by
//! this binary's allocator, so this file holds one test.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use cuda_prover_filecoin::c1::{C1File, Expected};
use cuda_prover_filecoin::test_c1::generate_test_c1;
use cuda_prover_filecoin::test_c1::wrapper::wrap;
use cuda_prover_filecoin::{RegisteredSeal, SealVersion, SectorSize};
use filecoin_proofs::constants::SectorShape8MiB;

/// The system allocator, counting the bytes held and their peak.
struct Counting;

static HELD: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

fn add(n: usize) {
    let now = HELD.fetch_add(n, Ordering::Relaxed) + n;
    PEAK.fetch_max(now, Ordering::Relaxed);
}

// SAFETY: every call is forwarded to `System` with the same arguments, so
// `System`'s guarantees hold; the counters only observe the sizes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded as received (the caller's contract).
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            add(layout.size());
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded as received (the caller's contract).
        unsafe { System.dealloc(ptr, layout) };
        HELD.fetch_sub(layout.size(), Ordering::Relaxed);
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded as received (the caller's contract).
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            HELD.fetch_sub(layout.size(), Ordering::Relaxed);
            add(new_size);
        }
        p
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// Bytes allocated at the peak of `f`, beyond what was held before it.
fn peak_of<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let base = HELD.load(Ordering::Relaxed);
    PEAK.store(base, Ordering::Relaxed);
    let out = f();
    (out, PEAK.load(Ordering::Relaxed).saturating_sub(base))
}

#[test]
fn c1_files_are_parsed_with_bounded_memory() {
    let registered = RegisteredSeal::new(SectorSize::new(8 << 20).unwrap(), SealVersion::V1_1);
    let c1 = generate_test_c1(registered, 3).unwrap();
    let plain = c1.c1_json.clone();
    let wrapped = wrap(
        &plain,
        c1.identity.sector_id,
        SectorSize::new(8 << 20).unwrap(),
    )
    .unwrap();
    let expected = Expected {
        size: Some(SectorSize::new(8 << 20).unwrap()),
        ..Default::default()
    };
    for (form, bytes) in [("plain", &plain), ("wrapper", &wrapped)] {
        let (file, parse) = peak_of(|| C1File::parse(bytes).unwrap());
        assert_eq!(file.resolve(&expected).unwrap(), registered);
        let (out, typed) = peak_of(|| file.output::<SectorShape8MiB>().unwrap());
        assert_eq!(out.comm_r, c1.comm_r);
        let n = bytes.len();
        eprintln!(
            "{form}: {n} bytes; parse peak {parse} bytes ({:.2}x), typed output peak {typed} \
             bytes ({:.2}x)",
            parse as f64 / n as f64,
            typed as f64 / n as f64
        );
        // The parse keeps no copy: a few buffers (the base64 reader's 64 KiB).
        assert!(
            parse < n / 4 + (128 << 10),
            "{form}: parse peak {parse} for {n} bytes"
        );
        // The typed output is smaller than its JSON (32-byte values written
        // as lists of numbers); a JSON value tree was about 16 times it.
        assert!(
            typed < 2 * n,
            "{form}: typed output peak {typed} for {n} bytes"
        );
    }
}
