//! The `.test` marker beside a TEST key: a small JSON file saying that the
//! params are TEST parameters (toxic waste from a published seed: anyone
//! can forge proofs against them), which generator made them and from what
//! seed. `c2` without `--test-params` warns loudly when the key it proves
//! with has one.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::TestCircuit;
use crate::error::{FilecoinError, Result};

/// What the marker file holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TestMarker {
    /// Always true: the field a reader checks.
    pub test_parameters: bool,
    /// The circuit, e.g. `porep-2KiB`.
    pub circuit: String,
    /// `cuda-prover` (from the shape) or `bellperson`.
    pub generator: String,
    /// The seed, hex.
    pub seed: String,
    pub note: String,
}

/// `<params>.test`.
pub fn marker_path(params: &Path) -> PathBuf {
    let mut s = params.as_os_str().to_owned();
    s.push(".test");
    PathBuf::from(s)
}

impl TestMarker {
    pub(super) fn new(circuit: TestCircuit, generator: &str, seed: [u8; 32]) -> Self {
        Self {
            test_parameters: true,
            circuit: circuit.label(),
            generator: generator.into(),
            seed: seed.iter().map(|b| format!("{b:02x}")).collect(),
            note: "TEST parameters: the toxic waste comes from this seed, so anyone can forge \
                   proofs against them. Never use them for a network."
                .into(),
        }
    }

    pub(super) fn write(&self, params: &Path) -> Result<()> {
        let path = marker_path(params);
        let bytes = serde_json::to_vec_pretty(self)
            .map_err(|e| FilecoinError::TestParameters(format!("encoding the marker: {e}")))?;
        std::fs::write(&path, bytes)
            .map_err(|e| FilecoinError::io(format!("writing {}", path.display()), e))
    }

    /// The marker beside `params`, if there is one that says TEST.
    pub fn read(params: &Path) -> Option<Self> {
        let bytes = std::fs::read(marker_path(params)).ok()?;
        let m: Self = serde_json::from_slice(&bytes).ok()?;
        m.test_parameters.then_some(m)
    }
}
