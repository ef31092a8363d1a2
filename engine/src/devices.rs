//! Device discovery and validation, before any work starts. The engine is
//! the one place that decides which devices a job uses.

use cuda_prover_pipeline::{Backend, Context, ContextOptions, DeviceInfo};

use crate::error::EngineError;

/// Which devices to use.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum DeviceSelection {
    /// Every visible device.
    #[default]
    All,
    /// The first `n` devices.
    Count(usize),
    /// Exactly these ordinals.
    List(Vec<u32>),
}

impl DeviceSelection {
    /// Parses `--gpu-devices 0,2`.
    pub fn parse_list(s: &str) -> Result<Self, String> {
        let mut v = Vec::new();
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            v.push(
                part.parse::<u32>()
                    .map_err(|_| format!("'{part}' is not a device ordinal"))?,
            );
        }
        if v.is_empty() {
            return Err("empty device list".into());
        }
        Ok(Self::List(v))
    }
}

/// Which backend a context should use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BackendChoice {
    /// CUDA when built with it and a GPU is visible, otherwise host.
    Auto,
    Host,
    Cuda,
}

/// Opens a context. `Auto` falls back to the host backend, with one log line,
/// when this build has no CUDA backend or finds no GPU.
pub fn open_context(choice: BackendChoice, host_devices: u32) -> Result<Context, EngineError> {
    let host = || {
        Context::new(ContextOptions {
            backend: Backend::Host,
            host_devices,
            host_threads: 0,
        })
        .map_err(|e| EngineError::Setup(e.to_string()))
    };
    match choice {
        BackendChoice::Host => host(),
        BackendChoice::Cuda => Context::new(ContextOptions {
            backend: Backend::Cuda,
            host_devices: 0,
            host_threads: 0,
        })
        .map_err(|e| EngineError::Setup(format!("cannot use the CUDA backend: {e}"))),
        BackendChoice::Auto => {
            let (n, why) = cuda_prover_pipeline::cuda_device_count()
                .map_err(|e| EngineError::Setup(e.to_string()))?;
            if n > 0 {
                Context::new(ContextOptions {
                    backend: Backend::Cuda,
                    host_devices: 0,
                    host_threads: 0,
                })
                .map_err(|e| EngineError::Setup(e.to_string()))
            } else {
                log::warn!(
                    "no CUDA device ({}); proving on the host backend",
                    why.unwrap_or_else(|| "none visible".into())
                );
                host()
            }
        }
    }
}

/// Resolves a selection against the context's devices: unknown ordinals,
/// duplicates and empty selections are errors that name the device.
pub fn resolve(ctx: &Context, sel: &DeviceSelection) -> Result<Vec<DeviceInfo>, EngineError> {
    let available = ctx
        .device_count()
        .map_err(|e| EngineError::Setup(e.to_string()))?;
    let ordinals: Vec<u32> = match sel {
        DeviceSelection::All => (0..available as u32).collect(),
        DeviceSelection::Count(n) => {
            if *n == 0 {
                return Err(EngineError::Setup("--gpu-count must be at least 1".into()));
            }
            if *n > available {
                return Err(EngineError::Setup(format!(
                    "{n} devices requested but the {} backend has {available}",
                    ctx.backend_name()
                )));
            }
            (0..*n as u32).collect()
        }
        DeviceSelection::List(v) => {
            let mut seen = std::collections::HashSet::new();
            for &d in v {
                if d as usize >= available {
                    return Err(EngineError::Setup(format!(
                        "device {d} does not exist: the {} backend has {available} device(s) (0..{})",
                        ctx.backend_name(),
                        available.saturating_sub(1)
                    )));
                }
                if !seen.insert(d) {
                    return Err(EngineError::Setup(format!("device {d} is listed twice")));
                }
            }
            v.clone()
        }
    };
    if ordinals.is_empty() {
        return Err(EngineError::Setup("no devices to prove on".into()));
    }
    ordinals
        .into_iter()
        .map(|d| {
            ctx.device_info(d)
                .map_err(|e| EngineError::Setup(e.to_string()))
        })
        .collect()
}
