//! Where a call runs: the Rust face of the core's `gpu_index` convention
//! ([`GpuIndex`]) and, with the caller's device mutex, one value that
//! travels by reference from the engine down to the core ([`Placement`]).
//! The integers stay at the C ABI, so a stray negative number cannot mean
//! a device.

use crate::error::{Error, ErrorCode, Result};
use cuda_prover_sys::ffi;

use crate::mutex::DeviceMutex;

/// The device(s) one call runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GpuIndex {
    /// Every circuit of the call on this device ordinal.
    Device(u32),
    /// Circuits split in contiguous ranges over min(devices, circuits)
    /// devices of the context's set.
    Auto,
    /// The device bound to the calling thread (`Context::select_gpu`); an
    /// error on a thread with none.
    Bound,
}

/// [`GpuIndex::Auto`].
pub const GPU_AUTO: GpuIndex = GpuIndex::Auto;
/// [`GpuIndex::Bound`].
pub const GPU_BOUND: GpuIndex = GpuIndex::Bound;

impl From<u32> for GpuIndex {
    fn from(ordinal: u32) -> Self {
        GpuIndex::Device(ordinal)
    }
}

/// The C convention: k >= 0 a device, -1 automatic, -2 the bound device.
impl TryFrom<i32> for GpuIndex {
    type Error = Error;
    fn try_from(v: i32) -> Result<Self> {
        match v {
            v if v >= 0 => Ok(GpuIndex::Device(v as u32)),
            ffi::CP_GPU_AUTO => Ok(GpuIndex::Auto),
            ffi::CP_GPU_BOUND => Ok(GpuIndex::Bound),
            v => Err(Error::new(
                ErrorCode::InvalidArgument,
                format!(
                    "gpu_index {v}: expected a device ordinal >= 0, -1 (automatic) or -2 (the \
                     bound device)"
                ),
            )),
        }
    }
}

impl GpuIndex {
    /// The C ABI's integer. An ordinal beyond `i32::MAX` becomes `i32::MAX`,
    /// which the core refuses as out of range, never another device.
    pub fn raw(self) -> i32 {
        match self {
            GpuIndex::Device(d) => i32::try_from(d).unwrap_or(i32::MAX),
            GpuIndex::Auto => ffi::CP_GPU_AUTO,
            GpuIndex::Bound => ffi::CP_GPU_BOUND,
        }
    }
}

/// Where one call runs: the device(s) and the mutex that serializes the
/// device work of every caller on that device (none: the core's own
/// per-device lock). Made once by whoever decides the device (the engine's
/// worker, a test) and passed by reference through every layer.
#[derive(Debug, Clone, Copy)]
pub struct Placement<'a> {
    pub gpu: GpuIndex,
    pub mutex: Option<&'a DeviceMutex>,
}

impl<'a> Placement<'a> {
    /// The core's automatic split, no caller mutex.
    pub const AUTO: Placement<'static> = Placement {
        gpu: GpuIndex::Auto,
        mutex: None,
    };

    /// On `gpu` under `mutex`.
    pub fn new(gpu: impl Into<GpuIndex>, mutex: Option<&'a DeviceMutex>) -> Self {
        Placement {
            gpu: gpu.into(),
            mutex,
        }
    }

    /// On `gpu`, no caller mutex.
    pub fn on(gpu: impl Into<GpuIndex>) -> Self {
        Placement::new(gpu, None)
    }

    /// The mutex's handle for the C ABI (null: none), for a family crate's
    /// calls into the core.
    pub fn raw_mutex(&self) -> *mut ffi::cp_mutex {
        self.mutex
            .map(|m| m.as_raw())
            .unwrap_or(std::ptr::null_mut())
    }
}
