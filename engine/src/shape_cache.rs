//! Shapes of the built-in circuits, cached next to their params: loaded and
//! checked against the key, or recorded (structure only, no witness) and
//! written when missing or unusable. The check is also what tells a cached
//! key of another circuit: its shape does not fit.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use cuda_prover_pipeline::circuits::BuiltIn;
use cuda_prover_pipeline::{shape_file, ProvingKey, Shape, ShapeData};

use crate::error::EngineError;
use crate::params::{cache_path, key_error};

/// The shape file beside a built-in circuit's params file.
pub fn shape_path(dir: &Path, c: &BuiltIn) -> PathBuf {
    cache_path(dir, c).with_extension("shape")
}

/// The shape of `c`'s circuit for `key`: from its file when that is there
/// and fits the key, else recorded and saved (a failed save is only logged:
/// the job can go on with the shape in memory).
pub fn load_or_record(
    dir: &Path,
    c: &BuiltIn,
    key: &ProvingKey,
    log: &(dyn Fn(&str) + Sync),
) -> Result<Arc<Shape>, EngineError> {
    let path = shape_path(dir, c);
    let t = Instant::now();
    if path.exists() {
        let loaded = shape_file::load(&path, key).and_then(|data| {
            let shape = Shape::new(&data)?;
            key.check_shape(&shape)?;
            Ok(shape)
        });
        match loaded {
            Ok(shape) => {
                log(&format!(
                    "loaded shape {} ({} nonzeros) in {:.2} s",
                    path.display(),
                    shape.info().nonzeros,
                    t.elapsed().as_secs_f64()
                ));
                return Ok(Arc::new(shape));
            }
            Err(e) => log(&format!(
                "not using {}: {e}; recording it again",
                path.display()
            )),
        }
    }
    let data = ShapeData::record(*c).map_err(|e| {
        EngineError::Setup(format!("recording the shape of {}: {e}", c.kind.name()))
    })?;
    let shape = Shape::new(&data).map_err(|e| EngineError::Setup(e.to_string()))?;
    key.check_shape(&shape).map_err(|e| {
        key_error(
            &cache_path(dir, c),
            &format!(
                "made for another circuit than {} 2^{} ({e})",
                c.kind.name(),
                c.log_constraints
            ),
            e.code(),
        )
    })?;
    match shape_file::save(&data, key, &path) {
        Ok(()) => log(&format!(
            "recorded shape -> {} in {:.2} s",
            path.display(),
            t.elapsed().as_secs_f64()
        )),
        Err(e) => log(&format!("recorded the shape but could not save it: {e}")),
    }
    Ok(Arc::new(shape))
}
