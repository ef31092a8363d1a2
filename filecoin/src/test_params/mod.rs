//! TEST parameters for small sectors: made locally with a seeded generator,
//! cached outside the source tree, generated once under a cross-process lock.
//!
//! These are NOT Filecoin's production parameters (those come from the
//! trusted setup and are downloaded). Proofs made with test parameters verify
//! only against test parameters. They exist so that tests, benches and the
//! demo can prove real Filecoin circuits without a 100 GB download.
//!
//! filecoin-proofs reads parameters from the directory of its setting
//! `FIL_PROOFS_PARAMETER_CACHE`, fixed the first time any of its functions
//! runs. [`use_test_parameter_dir`] points it at the test directory before
//! that, and fails if it is too late.

mod bellperson_gen;
mod files;
mod keygen;
mod marker;
mod shape_gen;

use std::fs::{self, File, OpenOptions};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Instant;

use fs2::FileExt;
use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};
use storage_proofs_core::parameter_cache::parameter_cache_dir;
use storage_proofs_core::settings::SETTINGS;

use crate::error::{FilecoinError, Result};
use crate::sector::SectorSize;

pub use files::{parameter_files, ParameterFiles};
pub use keygen::KeygenChoice;
pub use marker::{marker_path, TestMarker};

/// Overrides where test parameters live.
pub const TEST_PARAMS_ENV: &str = "CUDA_PROVER_FILECOIN_TEST_PARAMS";

/// filecoin-proofs' own setting for the parameter directory.
pub const PARAMETER_CACHE_ENV: &str = "FIL_PROOFS_PARAMETER_CACHE";

/// filecoin-proofs' setting for the SDR parent cache (sealing only).
pub const PARENT_CACHE_ENV: &str = "FIL_PROOFS_PARENT_CACHE";

/// One circuit family whose test parameters can be generated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TestCircuit {
    /// PoRep (commit phase 2), one partition's circuit.
    Porep(SectorSize),
    WinningPost(SectorSize),
    WindowPost(SectorSize),
    /// SnapDeals (empty-sector-update), one partition's circuit.
    SnapDeals(SectorSize),
}

/// A device of a context that computes a TEST key's points (the shape
/// generator only): its kernels instead of the host's cores.
#[derive(Clone, Copy)]
pub struct KeygenDevice<'a> {
    pub ctx: &'a cuda_prover_pipeline::Context,
    pub ordinal: u32,
}

/// Which generator makes TEST parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Generator {
    /// From the circuit's shape: QAP at tau and fixed-base multiplication
    /// on every core (seconds for a 2 KiB PoRep).
    #[default]
    Shape,
    /// bellperson's `generate_random_parameters` through filecoin-proofs
    /// (minutes), for comparison.
    Bellperson,
}

impl std::str::FromStr for Generator {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "shape" | "cuda-prover" => Ok(Self::Shape),
            "bellperson" => Ok(Self::Bellperson),
            o => Err(format!("unknown generator '{o}' (shape or bellperson)")),
        }
    }
}

impl TestCircuit {
    /// The sector size the circuit is for.
    pub fn size(self) -> SectorSize {
        match self {
            TestCircuit::Porep(s)
            | TestCircuit::WinningPost(s)
            | TestCircuit::WindowPost(s)
            | TestCircuit::SnapDeals(s) => s,
        }
    }

    /// A name for messages and lock files, e.g. `porep-2KiB`.
    pub fn label(self) -> String {
        match self {
            TestCircuit::Porep(s) => format!("porep-{s}"),
            TestCircuit::WinningPost(s) => format!("winning-post-{s}"),
            TestCircuit::WindowPost(s) => format!("window-post-{s}"),
            TestCircuit::SnapDeals(s) => format!("snapdeals-{s}"),
        }
    }

    /// A fixed seed per circuit: the same test parameters on every machine.
    fn seed(self) -> u64 {
        let family = match self {
            TestCircuit::Porep(_) => 1u64,
            TestCircuit::WinningPost(_) => 2,
            TestCircuit::WindowPost(_) => 3,
            TestCircuit::SnapDeals(_) => 4,
        };
        0x7e57_0000_0000_0000 ^ (family << 48) ^ self.size().bytes()
    }

    /// The 32-byte seed of the shape generator, drawn from [`Self::seed`].
    fn seed_bytes(self) -> [u8; 32] {
        let mut s = [0u8; 32];
        ChaCha20Rng::seed_from_u64(self.seed()).fill_bytes(&mut s);
        s
    }
}

/// The default test-parameter directory: `$CUDA_PROVER_FILECOIN_TEST_PARAMS`,
/// else `$XDG_CACHE_HOME/cuda-prover/filecoin-test-params`, else
/// `$HOME/.cache/cuda-prover/filecoin-test-params`.
pub fn default_test_parameter_dir() -> Result<PathBuf> {
    if let Some(d) = std::env::var_os(TEST_PARAMS_ENV).filter(|v| !v.is_empty()) {
        return Ok(PathBuf::from(d));
    }
    let base = match std::env::var_os("XDG_CACHE_HOME").filter(|v| !v.is_empty()) {
        Some(x) => PathBuf::from(x),
        None => match std::env::var_os("HOME").filter(|v| !v.is_empty()) {
            Some(h) => PathBuf::from(h).join(".cache"),
            None => {
                return Err(FilecoinError::TestParameters(format!(
                    "no cache directory: set {TEST_PARAMS_ENV}, XDG_CACHE_HOME or HOME"
                )))
            }
        },
    };
    Ok(base.join("cuda-prover").join("filecoin-test-params"))
}

static SELECTED: Mutex<Option<PathBuf>> = Mutex::new(None);

/// Points filecoin-proofs' parameter cache at `dir` (created if needed).
///
/// Must run before any other filecoin-proofs call of the process, because
/// filecoin-proofs reads its settings once. Calling it again with the same
/// directory is fine; with another one, or after filecoin-proofs has fixed
/// another directory, it is an error. Production-parameter verification
/// (`FIL_PROOFS_VERIFY_PRODUCTION_PARAMS`) must be off: test parameters are
/// not production parameters.
pub fn use_test_parameter_dir(dir: &Path) -> Result<PathBuf> {
    fs::create_dir_all(dir)
        .map_err(|e| FilecoinError::io(format!("creating {}", dir.display()), e))?;
    let dir = dir
        .canonicalize()
        .map_err(|e| FilecoinError::io(format!("resolving {}", dir.display()), e))?;
    let mut selected = SELECTED.lock().unwrap_or_else(|p| p.into_inner());
    match selected.as_ref() {
        Some(d) if *d == dir => return Ok(dir),
        Some(d) => {
            return Err(FilecoinError::TestParameters(format!(
                "this process already uses test parameters from {}, not {}",
                d.display(),
                dir.display()
            )))
        }
        None => {}
    }
    // The variables are read when filecoin-proofs first touches its
    // settings; every caller of this function is ordered by the lock above,
    // and the check below catches a process that touched them earlier.
    // Setting the environment is sound here as long as no other thread of
    // the process reads it concurrently: callers select the directory at
    // start-up, before they start proving threads. The sealing of test
    // sectors (parent cache) goes next to the test parameters unless the
    // user chose a place.
    std::env::set_var(PARAMETER_CACHE_ENV, &dir);
    if std::env::var_os(PARENT_CACHE_ENV).is_none() {
        std::env::set_var(PARENT_CACHE_ENV, dir.join("parents"));
    }
    let effective = parameter_cache_dir();
    let effective = effective.canonicalize().unwrap_or(effective);
    if effective != dir {
        return Err(FilecoinError::TestParameters(format!(
            "filecoin-proofs already reads parameters from {} (its settings were read before \
             the test parameter directory {} was selected)",
            effective.display(),
            dir.display()
        )));
    }
    if SETTINGS.verify_production_params {
        return Err(FilecoinError::TestParameters(
            "FIL_PROOFS_VERIFY_PRODUCTION_PARAMS is set: test parameters would be refused".into(),
        ));
    }
    *selected = Some(dir.clone());
    Ok(dir)
}

/// The directory [`use_test_parameter_dir`] selected.
fn selected_dir() -> Result<PathBuf> {
    SELECTED
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone()
        .ok_or_else(|| {
            FilecoinError::TestParameters(
                "no test parameter directory selected (call use_test_parameter_dir first)".into(),
            )
        })
}

/// Makes sure the test parameters of `circuits` exist in the selected
/// directory, generating the missing ones. One process generates a circuit
/// at a time (an exclusive `flock` on `.generate-<circuit>.lock`); the
/// others wait and then reuse its files. A stamp file marks a finished generation, so a
/// generation that died half way is redone rather than read.
/// `progress` hears one line per circuit.
pub fn ensure_test_parameters(circuits: &[TestCircuit], progress: impl FnMut(&str)) -> Result<()> {
    ensure_test_parameters_with(circuits, Generator::default(), progress)
}

/// [`ensure_test_parameters`] with the missing ones made by `generator`.
pub fn ensure_test_parameters_with(
    circuits: &[TestCircuit],
    generator: Generator,
    progress: impl FnMut(&str),
) -> Result<()> {
    ensure_test_parameters_on(circuits, generator, None, progress)
}

/// [`ensure_test_parameters_with`], the shape generator's points computed
/// on `device` when one is given.
pub fn ensure_test_parameters_on(
    circuits: &[TestCircuit],
    generator: Generator,
    device: Option<KeygenDevice<'_>>,
    mut progress: impl FnMut(&str),
) -> Result<()> {
    let dir = selected_dir()?;
    for &circuit in circuits {
        if is_complete(&dir, circuit, generator)? {
            continue;
        }
        let lock = lock_generation(&dir, circuit, &mut progress)?;
        // Another process may have finished it while this one waited.
        let result = if is_complete(&dir, circuit, generator)? {
            Ok(())
        } else {
            generate_one(&dir, circuit, generator, device, &mut progress)
        };
        // Closing the file releases the lock as well; unlocking first is
        // explicit about it.
        let _ = FileExt::unlock(&lock);
        result?;
    }
    Ok(())
}

/// One lock per circuit: processes generating different circuits do not
/// wait for each other.
fn lock_generation(
    dir: &Path,
    circuit: TestCircuit,
    progress: &mut impl FnMut(&str),
) -> Result<File> {
    let lock_path = dir.join(format!(".generate-{}.lock", circuit.label()));
    let lock = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .map_err(|e| FilecoinError::io(format!("opening {}", lock_path.display()), e))?;
    if lock.try_lock_exclusive().is_err() {
        progress(&format!(
            "waiting for another process generating the {} test parameters in {}",
            circuit.label(),
            dir.display()
        ));
        lock.lock_exclusive()
            .map_err(|e| FilecoinError::io(format!("locking {}", lock_path.display()), e))?;
    }
    Ok(lock)
}

fn stamp_path(dir: &Path, files: &ParameterFiles) -> PathBuf {
    dir.join(format!(".complete-{}", files.id))
}

/// Finished, and made by `generator`: parameters of the other generator are
/// made again (once), so that asking for one generator gets its key.
fn is_complete(dir: &Path, circuit: TestCircuit, generator: Generator) -> Result<bool> {
    let files = parameter_files(circuit)?;
    let made_by = TestMarker::read(&files.params).map(|m| m.generator);
    let by_generator = match generator {
        Generator::Shape => made_by.as_deref() == Some(shape_gen::NAME),
        // Files from before the marker existed came from bellperson.
        Generator::Bellperson => made_by.as_deref() != Some(shape_gen::NAME),
    };
    Ok(stamp_path(dir, &files).exists()
        && files.params.exists()
        && files.vk.exists()
        && by_generator)
}

/// `circuit`'s TEST key (the shape generator, the circuit's seed: the key
/// [`ensure_test_parameters`] writes) computed on `device` and kept in
/// memory, with its shape; only the `.vk` and `.meta` files go into the
/// selected directory (filecoin-proofs' verifier reads the `.vk`). For a
/// 32 GiB PoRep this skips a 50 GB file: give the key to
/// [`crate::FilecoinProver::with_key`] under [`parameter_files`]' params path.
pub fn make_test_key_in_memory(
    circuit: TestCircuit,
    device: KeygenDevice<'_>,
    progress: &mut dyn FnMut(&str),
) -> Result<(
    cuda_prover_pipeline::ProvingKey,
    cuda_prover_pipeline::ShapeData,
    cuda_prover_pipeline::setup::TestKeyReport,
)> {
    selected_dir()?;
    let files = parameter_files(circuit)?;
    shape_gen::make_in_memory(circuit, &files, circuit.seed_bytes(), device, progress)
}

/// Writes `circuit`'s TEST key (the shape generator, the circuit's seed)
/// to `out` without touching the parameter directory: the bytes of its
/// `.params` file.
pub fn write_test_parameters(
    circuit: TestCircuit,
    out: &mut impl std::io::Write,
) -> Result<cuda_prover_pipeline::setup::TestKeyReport> {
    shape_gen::write_key(circuit, circuit.seed_bytes(), out, &mut |_| {}).map(|(_, r, _)| r)
}

fn generate_one(
    dir: &Path,
    circuit: TestCircuit,
    generator: Generator,
    device: Option<KeygenDevice<'_>>,
    progress: &mut impl FnMut(&str),
) -> Result<()> {
    let files = parameter_files(circuit)?;
    let stamp = stamp_path(dir, &files);
    // Leftovers of an interrupted generation: filecoin-proofs takes an
    // existing file as "someone else is writing it", so remove them.
    for f in [
        &files.params,
        &files.vk,
        &files.meta,
        &marker_path(&files.params),
    ] {
        match fs::remove_file(f) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(FilecoinError::io(format!("removing {}", f.display()), e)),
        }
    }
    progress(&format!(
        "generating test parameters for {} ({generator:?} generator, seeded) into {}",
        circuit.label(),
        dir.display()
    ));
    let t = Instant::now();
    match generator {
        Generator::Shape => {
            let report =
                shape_gen::generate(circuit, &files, circuit.seed_bytes(), device, progress)?;
            let steps: Vec<String> = report
                .times
                .iter()
                .map(|(s, d)| format!("{s} {:.1} s", d.as_secs_f64()))
                .collect();
            progress(&format!(
                "{}: {} MiB written; {}",
                circuit.label(),
                report.bytes >> 20,
                steps.join(", ")
            ));
        }
        Generator::Bellperson => {
            let mut rng = ChaCha20Rng::seed_from_u64(circuit.seed());
            bellperson_gen::generate(circuit, &mut rng)?;
            let mut seed = [0u8; 32];
            seed[..8].copy_from_slice(&circuit.seed().to_le_bytes());
            TestMarker::new(circuit, "bellperson", seed).write(&files.params)?;
        }
    }
    File::create(&stamp)
        .map_err(|e| FilecoinError::io(format!("writing {}", stamp.display()), e))?;
    progress(&format!(
        "test parameters for {} ready in {:.1} s",
        circuit.label(),
        t.elapsed().as_secs_f64()
    ));
    Ok(())
}
