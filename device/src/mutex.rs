//! The caller's mutex for one device (`cp_mutex`): made here, passed in a
//! [`crate::Placement`] to every call the caller routes to that device.

use std::ptr;

use cuda_prover_sys::ffi;

use crate::error::{check, Result};

/// A mutex for one device, allocated by the caller and passed to every call
/// it routes to that device.
pub struct DeviceMutex {
    raw: *mut ffi::cp_mutex,
}

// SAFETY: the core's mutex is made to be locked from any thread (a
// std::mutex behind the handle); the handle itself never changes.
unsafe impl Send for DeviceMutex {}
// SAFETY: as above; every use through `&self` is a lock or unlock inside
// the core.
unsafe impl Sync for DeviceMutex {}

impl DeviceMutex {
    pub fn new() -> Result<Self> {
        let mut raw = ptr::null_mut();
        // SAFETY: `raw` is a valid out-pointer; on success it is ours.
        check(unsafe { ffi::cp_mutex_new(&mut raw) })?;
        Ok(Self { raw })
    }

    /// The core's handle, for calls that take the caller's mutex. It stays
    /// valid while `self` lives.
    pub fn as_raw(&self) -> *mut ffi::cp_mutex {
        self.raw
    }
}

impl std::fmt::Debug for DeviceMutex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceMutex").finish_non_exhaustive()
    }
}

impl Drop for DeviceMutex {
    fn drop(&mut self) {
        // SAFETY: we own the handle; no call can hold it past `self`.
        unsafe { ffi::cp_mutex_free(self.raw) }
    }
}
