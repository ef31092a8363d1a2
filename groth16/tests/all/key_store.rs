//! The key store: one load per key however many callers ask at once, LRU
//! eviction of unpinned keys under the byte budget, pinned keys kept, and
//! an evicted key valid while a job holds it.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Barrier};

use cuda_prover_engine::{Engine, EngineConfig};
use cuda_prover_groth16::key_store::shape_path;
use cuda_prover_groth16::KeyStore;
use cuda_prover_pipeline::circuits::{BuiltIn, Kind};
use cuda_prover_pipeline::{Context, KeyCheck};

fn temp_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("cp-store-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn engine() -> Engine {
    Engine::new(Arc::new(Context::host(1).unwrap()), EngineConfig::default()).unwrap()
}

/// Key files of chain circuits 2^7, 2^8, 2^9 (with their shapes beside).
fn key_files(dir: &Path) -> Vec<PathBuf> {
    (7..=9)
        .map(|log| {
            let c = BuiltIn::new(Kind::Chain, log, 0).unwrap();
            cuda_prover_groth16::params::load_or_create(dir, &c, &|_| {}).unwrap();
            cuda_prover_groth16::params::key_path(dir, &c)
        })
        .collect()
}

fn name(p: &Path) -> String {
    p.display().to_string()
}

#[test]
fn two_callers_of_one_key_load_it_once() {
    let dir = temp_dir("once");
    let files = key_files(&dir);
    let engine = engine();
    let store = KeyStore::unbounded();
    let barrier = Barrier::new(2);
    let loaded: Vec<_> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..2)
            .map(|_| {
                s.spawn(|| {
                    barrier.wait();
                    store
                        .load_key(&engine, &files[2], KeyCheck::TrustedUnchecked, false)
                        .unwrap()
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert!(
        Arc::ptr_eq(&loaded[0].key, &loaded[1].key),
        "one key, shared"
    );
    assert!(Arc::ptr_eq(loaded[0].key.key(), loaded[1].key.key()));
    // One of them waited for the other's load and found it resident.
    assert_eq!(
        loaded.iter().filter(|l| l.took.is_zero()).count(),
        1,
        "exactly one load"
    );
    assert_eq!(store.list().len(), 1);
    assert!(loaded[0].key.shape().is_some(), "the shape beside the key");
    assert!(shape_path(&files[2]).exists());
    assert_eq!(store.loaded_files(), vec![files[2].clone()]);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn the_budget_evicts_the_least_recently_used_unpinned_key() {
    let dir = temp_dir("lru");
    let files = key_files(&dir);
    let engine = engine();
    let probe = KeyStore::unbounded();
    let bytes: Vec<u64> = files
        .iter()
        .map(|f| {
            probe
                .load_key(&engine, f, KeyCheck::TrustedUnchecked, false)
                .unwrap()
                .key
                .bytes()
        })
        .collect();
    assert!(bytes.iter().all(|&b| b > 0), "{bytes:?}");
    // Room for keys 0 and 1, or for 0 and 2, not for all three.
    let budget = bytes[0] + bytes[1].max(bytes[2]);
    let store = KeyStore::new(budget);
    let load = |i: usize, pin: bool| {
        store
            .load_key(&engine, &files[i], KeyCheck::TrustedUnchecked, pin)
            .unwrap()
    };
    // Pinned: never evicted, though it is the least recently used.
    load(0, true);
    let one = load(1, false);
    assert!(one.evicted.is_empty());
    let held = one.key.clone();
    drop(one);
    let two = load(2, false);
    assert_eq!(two.evicted, vec![name(&files[1])], "the unpinned key goes");
    let listed: Vec<String> = store.list().into_iter().map(|k| k.name).collect();
    assert_eq!(listed, vec![name(&files[2]), name(&files[0])]);
    let u = store.usage();
    assert_eq!((u.used, u.evictions), (bytes[0] + bytes[2], 1));

    // The evicted key a job holds stays valid, counted apart until dropped.
    assert_eq!(u.evicted_in_use, bytes[1]);
    assert!(held.key().domain_size().unwrap() > 0);
    assert!(held.key().check_shape(&held.shape().unwrap()).is_ok());
    // Asked for again while held: taken back, not loaded a second time.
    let again = load(1, false);
    assert!(Arc::ptr_eq(&again.key, &held));
    assert_eq!(again.evicted, vec![name(&files[2])]);
    drop((again, held, two));
    store.evict(&name(&files[1]));
    assert_eq!(
        store.usage().evicted_in_use,
        0,
        "dropped: no longer counted"
    );

    // A pinned key is never evicted; once unpinned it may be.
    load(2, false);
    assert!(store
        .list()
        .iter()
        .any(|k| k.name == name(&files[0]) && k.pinned));
    assert!(store.unpin(&name(&files[0])));
    load(1, false);
    let left: Vec<String> = store.list().into_iter().map(|k| k.name).collect();
    assert!(!left.contains(&name(&files[0])), "{left:?}");
    // More than the budget with a pinned key in it: refused, nothing evicted.
    assert!(store.pin(&name(&files[1])));
    let before = store.list();
    let big = KeyStore::new(bytes[0]);
    big.load_key(&engine, &files[0], KeyCheck::TrustedUnchecked, true)
        .unwrap();
    assert!(big
        .load_key(&engine, &files[2], KeyCheck::TrustedUnchecked, false)
        .is_err());
    assert_eq!(store.list(), before);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn built_in_keys_are_generated_once_and_named_by_dir() {
    let dir = temp_dir("built-in");
    let pd = cuda_prover_groth16::params_dir::ParamsDir::open(&dir).unwrap();
    let c = BuiltIn::new(Kind::Chain, 7, 0).unwrap();
    let store = KeyStore::unbounded();
    let a = store.load_built_in(&pd, &c, true, &|_| {}).unwrap();
    let b = store.load_built_in(&pd, &c, false, &|_| {}).unwrap();
    assert!(Arc::ptr_eq(&a.key, &b.key));
    assert!(b.took.is_zero());
    let name = cuda_prover_groth16::key_store::built_in_name(Kind::Chain, 7, pd.path());
    assert_eq!(store.list()[0].name, name);
    assert!(store.list()[0].pinned);
    assert!(
        store.loaded_files().is_empty(),
        "built-in keys are not files"
    );
    assert_eq!(store.list_built_in().len(), 1);
    assert!(shape_path(a.key.file()).exists());
    std::fs::remove_dir_all(&dir).ok();
}
