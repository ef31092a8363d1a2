//! What the devices are: the CUDA queries that need no context (count,
//! usable ordinals, name and memory), a device's description and its
//! statistics.

use std::ptr;

use cuda_prover_sys::ffi;

use crate::error::{check, check_with_message, Result};

pub use ffi::cp_device_stats as DeviceStats;

/// Whether this build contains the CUDA backend.
pub fn built_with_cuda() -> bool {
    // SAFETY: no arguments, no state.
    unsafe { ffi::cp_built_with_cuda() != 0 }
}

/// CUDA devices visible to the runtime, and why there are none when the
/// count is 0 (no GPU, no driver, or a build without CUDA).
pub fn cuda_device_count() -> Result<(usize, Option<String>)> {
    let mut n = 0i32;
    // SAFETY: `n` is a valid out pointer.
    let why = check_with_message(unsafe { ffi::cp_cuda_device_count(&mut n) })?;
    Ok((n.max(0) as usize, why))
}

/// The CUDA ordinals of the usable GPUs, without creating a CUDA context.
pub fn cuda_usable_devices() -> Result<Vec<u32>> {
    let mut len = 0usize;
    // SAFETY: a NULL buffer with capacity 0 asks for the count only.
    check(unsafe { ffi::cp_cuda_usable_devices(ptr::null_mut(), 0, &mut len) })?;
    let mut v = vec![0i32; len];
    // SAFETY: `v` holds `v.len()` writable i32s.
    check(unsafe { ffi::cp_cuda_usable_devices(v.as_mut_ptr(), v.len(), &mut len) })?;
    v.truncate(len);
    Ok(v.into_iter().map(|d| d.max(0) as u32).collect())
}

/// A GPU's name, compute capability and total memory, without creating a
/// CUDA context (`free_bytes` is 0: unknown).
pub fn cuda_device_info(ordinal: u32) -> Result<DeviceInfo> {
    let mut info = ffi::cp_device_info::default();
    let o = i32::try_from(ordinal).unwrap_or(i32::MAX);
    // SAFETY: `info` is a valid out pointer.
    check(unsafe { ffi::cp_cuda_device_info(o, &mut info) })?;
    Ok(DeviceInfo::from_raw(&info))
}

/// Description of one device of a context.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceInfo {
    pub ordinal: u32,
    pub simulated: bool,
    pub name: String,
    pub compute_capability: (i32, i32),
    pub free_bytes: u64,
    pub total_bytes: u64,
}

impl DeviceInfo {
    pub(crate) fn from_raw(info: &ffi::cp_device_info) -> Self {
        let name_bytes: Vec<u8> = info
            .name
            .iter()
            .take_while(|&&c| c != 0)
            .map(|&c| c as u8)
            .collect();
        DeviceInfo {
            ordinal: info.ordinal as u32,
            simulated: info.simulated != 0,
            name: String::from_utf8_lossy(&name_bytes).into_owned(),
            compute_capability: (info.cc_major, info.cc_minor),
            free_bytes: info.free_bytes,
            total_bytes: info.total_bytes,
        }
    }
}
