//! Device discovery and validation, before any work starts. The engine is
//! the one place that decides which devices a job uses.

use cuda_prover_device::{Backend, Context, ContextOptions, DeviceInfo};

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

/// Which backend a context should use (also the CLIs' `--backend` values:
/// auto, host, cuda).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum BackendChoice {
    /// CUDA when built with it and a GPU is visible, otherwise host.
    Auto,
    Host,
    Cuda,
}

/// The ordinals a context should open for `sel`: the selection is passed
/// down to the core, which then touches no other device. `Count(n)` means
/// the first n usable devices.
fn context_devices(backend: Backend, sel: &DeviceSelection) -> Result<Vec<u32>, EngineError> {
    Ok(match sel {
        DeviceSelection::All => Vec::new(),
        DeviceSelection::List(v) => v.clone(),
        DeviceSelection::Count(0) => {
            return Err(EngineError::Setup("--gpu-count must be at least 1".into()))
        }
        DeviceSelection::Count(n) => match backend {
            Backend::Host => (0..*n as u32).collect(),
            Backend::Cuda => {
                let usable = cuda_prover_device::cuda_usable_devices()
                    .map_err(|e| EngineError::Prepare(e.into()))?;
                if usable.len() < *n {
                    return Err(EngineError::Setup(format!(
                        "{n} devices requested but the cuda backend has {}",
                        usable.len()
                    )));
                }
                usable[..*n].to_vec()
            }
        },
    })
}

/// Opens a context on the devices of `sel` only. `Auto` falls back to the
/// host backend, with one log line, when this build has no CUDA backend or
/// finds no GPU (counting GPUs creates no CUDA context).
pub fn open_context(
    choice: BackendChoice,
    host_devices: u32,
    sel: &DeviceSelection,
) -> Result<Context, EngineError> {
    let open = |backend: Backend| -> Result<Context, EngineError> {
        Context::new(ContextOptions {
            backend,
            host_devices: if backend == Backend::Host {
                host_devices
            } else {
                0
            },
            host_threads: 0,
            devices: context_devices(backend, sel)?,
        })
        .map_err(|e| match backend {
            Backend::Cuda if choice == BackendChoice::Cuda => EngineError::PrepareFor {
                what: "cannot use the CUDA backend".into(),
                source: e.into(),
            },
            _ => EngineError::Prepare(e.into()),
        })
    };
    match choice {
        BackendChoice::Host => open(Backend::Host),
        BackendChoice::Cuda => open(Backend::Cuda),
        BackendChoice::Auto => {
            let (n, why) = cuda_prover_device::cuda_device_count()
                .map_err(|e| EngineError::Prepare(e.into()))?;
            if n > 0 {
                open(Backend::Cuda)
            } else {
                log::warn!(
                    "no CUDA device ({}); proving on the host backend",
                    why.unwrap_or_else(|| "none visible".into())
                );
                open(Backend::Host)
            }
        }
    }
}

/// The devices a backend would use, for listing: GPUs are described
/// without creating a CUDA context (their free memory is then unknown, 0).
pub fn list_devices(
    choice: BackendChoice,
    host_devices: u32,
) -> Result<(&'static str, Vec<DeviceInfo>), EngineError> {
    let gpus = match choice {
        BackendChoice::Host => Vec::new(),
        _ => {
            cuda_prover_device::cuda_usable_devices().map_err(|e| EngineError::Prepare(e.into()))?
        }
    };
    if gpus.is_empty() && choice == BackendChoice::Cuda {
        return Err(EngineError::Setup(
            "cannot use the CUDA backend: no usable CUDA device".into(),
        ));
    }
    if gpus.is_empty() {
        let ctx = open_context(BackendChoice::Host, host_devices, &DeviceSelection::All)?;
        let infos = resolve(&ctx, &DeviceSelection::All)?;
        return Ok(("host", infos));
    }
    let infos = gpus
        .into_iter()
        .map(|d| {
            cuda_prover_device::cuda_device_info(d).map_err(|e| EngineError::Prepare(e.into()))
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(("cuda", infos))
}

/// Resolves a selection against the context's devices: unknown ordinals,
/// duplicates and empty selections are errors that name the device.
pub fn resolve(ctx: &Context, sel: &DeviceSelection) -> Result<Vec<DeviceInfo>, EngineError> {
    let open = ctx
        .open_devices()
        .map_err(|e| EngineError::Prepare(e.into()))?;
    let ordinals: Vec<u32> = match sel {
        DeviceSelection::All => open.clone(),
        DeviceSelection::Count(n) => {
            if *n == 0 {
                return Err(EngineError::Setup("--gpu-count must be at least 1".into()));
            }
            if *n > open.len() {
                return Err(EngineError::Setup(format!(
                    "{n} devices requested but the {} backend has {}",
                    ctx.backend_name(),
                    open.len()
                )));
            }
            open[..*n].to_vec()
        }
        DeviceSelection::List(v) => {
            let mut seen = std::collections::HashSet::new();
            for &d in v {
                if !open.contains(&d) {
                    let available = ctx
                        .device_count()
                        .map_err(|e| EngineError::Prepare(e.into()))?;
                    return Err(EngineError::Setup(if (d as usize) < available {
                        format!(
                            "device {d} is not in the context's device set {open:?}: open the context with it"
                        )
                    } else {
                        format!(
                            "device {d} does not exist: the {} backend has {available} device(s) (0..{})",
                            ctx.backend_name(),
                            available.saturating_sub(1)
                        )
                    }));
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
                .map_err(|e| EngineError::Prepare(e.into()))
        })
        .collect()
}
