//! The TEST parameters the bench proves with: files in the parameter
//! directory (made on first use), or a key made on the GPU and kept in
//! memory (`--key-in-memory`).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use cuda_prover_filecoin::test_params::{
    ensure_test_parameters_on, make_test_key_in_memory, parameter_files, Generator, KeygenDevice,
    TestCircuit,
};
use cuda_prover_filecoin::FilecoinError;
use cuda_prover_pipeline::{ProvingKey, Shape};

use crate::args::Args;

/// A key made in this process, given to every prover.
pub struct Preloaded {
    pub params: PathBuf,
    pub key: Arc<ProvingKey>,
    pub shape: Arc<Shape>,
}

/// Makes the sector size's TEST parameters ready (or the key in memory);
/// returns the seconds it took and the preloaded key, if one was made.
pub fn ready(a: &Args) -> Result<(f64, Option<Preloaded>), FilecoinError> {
    let t = Instant::now();
    let circuit = TestCircuit::Porep(a.sector_size);
    // The key's points on a GPU when there is one (the context is
    // closed on return, before the backends open theirs).
    let opened = a.keygen_device.open()?;
    let device = opened.as_ref().map(|(ctx, ordinal)| KeygenDevice {
        ctx,
        ordinal: *ordinal,
    });
    let preloaded = if a.key_in_memory {
        let device = device.ok_or_else(|| {
            FilecoinError::Input("--key-in-memory needs a CUDA device to make the key on".into())
        })?;
        let (key, shape, report) =
            make_test_key_in_memory(circuit, device, &mut |m| println!("{m}"))?;
        let steps: Vec<String> = report
            .times
            .iter()
            .map(|(s, d)| format!("{s} {:.1} s", d.as_secs_f64()))
            .collect();
        println!(
            "key made in memory on device {}: {}",
            device.ordinal,
            steps.join(", ")
        );
        let shape = Shape::new(&shape).map_err(|e| FilecoinError::TestParameters(e.to_string()))?;
        Some(Preloaded {
            params: parameter_files(circuit)?.params,
            key: Arc::new(key),
            shape: Arc::new(shape),
        })
    } else {
        ensure_test_parameters_on(&[circuit], Generator::Shape, device, |m| println!("{m}"))?;
        None
    };
    Ok((t.elapsed().as_secs_f64(), preloaded))
}
