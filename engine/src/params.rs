//! Proving keys for the built-in circuits, cached on disk: made once (with
//! progress shown, since 2^20 takes minutes), then loaded by the core.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use cuda_prover_pipeline::circuits::BuiltIn;
use cuda_prover_pipeline::ProvingKey;
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;

use crate::error::EngineError;

/// The cache file of a circuit shape.
pub fn cache_path(dir: &Path, c: &BuiltIn) -> PathBuf {
    dir.join(format!("{}-2^{}.params", c.kind.name(), c.log_constraints))
}

/// Loads the key for `c`'s shape from `dir`, generating and writing it first
/// when it is missing. `log` receives progress lines.
pub fn load_or_create(
    dir: &Path,
    c: &BuiltIn,
    log: &(dyn Fn(&str) + Sync),
) -> Result<ProvingKey, EngineError> {
    let path = cache_path(dir, c);
    if !path.exists() {
        create(dir, &path, c, log)?;
    }
    let t = Instant::now();
    let key = ProvingKey::from_file(&path).map_err(|e| {
        EngineError::Params(format!(
            "{}: {e} (delete the file to make it again)",
            path.display()
        ))
    })?;
    log(&format!(
        "loaded {} in {:.2} s",
        path.display(),
        t.elapsed().as_secs_f64()
    ));
    Ok(key)
}

fn create(
    dir: &Path,
    path: &Path,
    c: &BuiltIn,
    log: &(dyn Fn(&str) + Sync),
) -> Result<(), EngineError> {
    std::fs::create_dir_all(dir)
        .map_err(|e| EngineError::Params(format!("cannot create {}: {e}", dir.display())))?;
    log(&format!(
        "generating params for {} 2^{} (one time; 2^20 takes minutes) -> {}",
        c.kind.name(),
        c.log_constraints,
        path.display()
    ));
    let t = Instant::now();
    let finished = AtomicBool::new(false);
    let params = std::thread::scope(|s| {
        s.spawn(|| {
            let mut last = Instant::now();
            while !finished.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(200));
                if last.elapsed() >= Duration::from_secs(10) {
                    log(&format!(
                        "  still generating params: {:.0} s elapsed",
                        t.elapsed().as_secs_f64()
                    ));
                    last = Instant::now();
                }
            }
        });
        let mut rng = ChaCha20Rng::from_entropy();
        let r = c.generate_params(&mut rng);
        finished.store(true, Ordering::SeqCst);
        r
    })
    .map_err(|e| EngineError::Params(format!("parameter generation failed: {e}")))?;
    log(&format!(
        "  generated in {:.1} s; writing",
        t.elapsed().as_secs_f64()
    ));
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    let write = || -> std::io::Result<()> {
        let f = std::fs::File::create(&tmp)?;
        let mut w = std::io::BufWriter::with_capacity(1 << 20, f);
        params.write(&mut w)?;
        w.flush()?;
        w.get_ref().sync_all()?;
        std::fs::rename(&tmp, path)
    };
    write().map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        EngineError::Params(format!("cannot write {}: {e}", path.display()))
    })
}
