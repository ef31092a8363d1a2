//! Shapes of the built-in circuits, cached next to their keys: loaded and
//! checked against the key, or recorded (structure only, no witness) and
//! written when missing or unusable. The check is also what tells a cached
//! key of another circuit: its shape does not fit. Shape files are opened
//! in the params dir's handle, no link followed ([`ParamsDir`]).

use std::ffi::OsString;
use std::io::{Read, Write};
use std::sync::Arc;
use std::time::Instant;

use cuda_prover_pipeline::circuits::BuiltIn;
use cuda_prover_pipeline::{shape_file, ProvingKey, Shape, ShapeData};

use cuda_prover_engine::EngineError;

use crate::cause::cause;
use crate::params::{key_error, key_name, key_path, write_then_rename};
use crate::params_dir::{Entry, Open, ParamsDir};

/// The name of a built-in circuit's shape file in its params dir: beside
/// its key file, as every key's ([`crate::key_store::shape_path`]).
pub fn shape_name(c: &BuiltIn) -> OsString {
    crate::key_store::shape_name(&key_name(c))
}

/// Reads the shape file of `c` and checks it against `key`.
fn load(dir: &ParamsDir, c: &BuiltIn, key: &ProvingKey) -> Result<Shape, String> {
    let mut f = dir
        .open_file(&shape_name(c), Open::Read)
        .map_err(|e| e.to_string())?;
    let mut bytes = Vec::new();
    f.read_to_end(&mut bytes).map_err(|e| e.to_string())?;
    let data = shape_file::decode(&bytes, key)?;
    let shape = Shape::new(&data).map_err(|e| e.to_string())?;
    key.check_shape(&shape).map_err(|e| e.to_string())?;
    Ok(shape)
}

/// Saves `data`, tied to the key of fingerprint `fp`, as `c`'s shape file
/// (through a temporary file and a rename, so a reader never sees half a
/// file).
pub(crate) fn save(
    dir: &ParamsDir,
    c: &BuiltIn,
    data: &ShapeData,
    fp: &[u8; 32],
) -> Result<(), EngineError> {
    let bytes = shape_file::encode_for(data, fp).map_err(|e| EngineError::Prepare(cause(e)))?;
    let name = shape_name(c);
    let mut tmp = name.clone();
    tmp.push(format!("-tmp{}", std::process::id()));
    write_then_rename(dir, &tmp, &name, |w| {
        w.write_all(&bytes).map_err(|e| {
            EngineError::Params(format!("cannot write {}: {e}", dir.shown(&name).display()))
        })
    })
}

/// The shape of `c`'s circuit for `key`: from its file when that is there
/// and fits the key, else recorded and saved (a failed save is only logged:
/// the job can go on with the shape in memory).
pub fn load_or_record(
    dir: &ParamsDir,
    c: &BuiltIn,
    key: &ProvingKey,
    log: &(dyn Fn(&str) + Sync),
) -> Result<Arc<Shape>, EngineError> {
    let path = dir.shown(&shape_name(c));
    let t = Instant::now();
    if !matches!(dir.entry(&shape_name(c)), Ok(Entry::Missing)) {
        match load(dir, c, key) {
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
                "not using shape file {}: {e}; recording it again",
                path.display()
            )),
        }
    }
    let data = ShapeData::record(*c).map_err(|e| EngineError::PrepareFor {
        what: format!("recording the shape of {}", c.kind.name()),
        source: cause(e),
    })?;
    let shape = Shape::new(&data).map_err(|e| EngineError::Prepare(cause(e)))?;
    key.check_shape(&shape).map_err(|e| {
        key_error(
            &key_path(dir.path(), c),
            &format!(
                "made for another circuit than {} 2^{} ({e})",
                c.kind.name(),
                c.log_constraints
            ),
            e.code(),
        )
    })?;
    match save(dir, c, &data, &key.fingerprint()) {
        Ok(()) => log(&format!(
            "recorded shape -> {} in {:.2} s",
            path.display(),
            t.elapsed().as_secs_f64()
        )),
        Err(e) => log(&format!("recorded the shape but could not save it: {e}")),
    }
    Ok(Arc::new(shape))
}
