//! Where the shape generator computes a TEST key's points: `--keygen-device`.

use cuda_prover_engine::{open_context, BackendChoice, DeviceSelection};
use cuda_prover_pipeline::Context;

use crate::error::{FilecoinError, Result};

/// `auto`, `host` or a CUDA device ordinal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum KeygenChoice {
    /// The first usable CUDA device when this build has CUDA and one is
    /// visible, else the host's cores (the default).
    #[default]
    Auto,
    /// The host's cores, the key streamed to its file.
    Host,
    /// This CUDA device.
    Cuda(u32),
}

impl std::str::FromStr for KeygenChoice {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "auto" => Ok(Self::Auto),
            "host" => Ok(Self::Host),
            n => n.parse().map(Self::Cuda).map_err(|_| {
                format!("'{n}' is not a keygen device: auto, host or a CUDA device ordinal")
            }),
        }
    }
}

impl KeygenChoice {
    /// A context holding the one device to compute on (with its ordinal),
    /// or `None` for the host's cores.
    pub fn open(self) -> Result<Option<(Context, u32)>> {
        let ordinal = match self {
            Self::Host => return Ok(None),
            Self::Cuda(n) => n,
            Self::Auto => {
                if !cuda_prover_pipeline::built_with_cuda() {
                    return Ok(None);
                }
                match cuda_prover_pipeline::cuda_usable_devices() {
                    Ok(v) if !v.is_empty() => v[0],
                    _ => return Ok(None),
                }
            }
        };
        let ctx = open_context(
            BackendChoice::Cuda,
            0,
            &DeviceSelection::List(vec![ordinal]),
        )
        .map_err(|e| {
            FilecoinError::TestParameters(format!(
                "opening CUDA device {ordinal} for key generation: {e}"
            ))
        })?;
        Ok(Some((ctx, ordinal)))
    }
}
