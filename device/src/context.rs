//! The core's context: its backend, the devices it opened, thread binding,
//! statistics and trimming. What a proof family runs on it is that family's
//! (`cp_prove*`, `cp_tower_*`, ...); the test hooks are `testing.rs`'s.

use std::ptr;

use cuda_prover_sys::ffi;

use crate::devices::{DeviceInfo, DeviceStats};
use crate::error::{check, Error, ErrorCode, Result};

/// Which backend a context runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Backend {
    #[default]
    Host,
    Cuda,
}

/// Options for [`Context::new`].
#[derive(Debug, Clone, Default)]
pub struct ContextOptions {
    pub backend: Backend,
    /// Host backend: simulated devices; 0 reads `CUDA_PROVER_HOST_DEVICES`.
    pub host_devices: u32,
    /// Host backend: threads per proof; 0 means all hardware threads.
    pub host_threads: u32,
    /// The ordinals the context opens (CUDA ordinals for the CUDA backend);
    /// empty opens every device. The others stay closed: the core never
    /// touches them. For CUDA the first context fixes the process's set.
    pub devices: Vec<u32>,
}

/// The core's per-device state: devices, their mutexes, caches and counters.
pub struct Context {
    raw: *mut ffi::cp_context,
}

// SAFETY: the core's context is internally synchronized (per-device mutexes);
// every entry point may be called from any thread.
unsafe impl Send for Context {}
unsafe impl Sync for Context {}

impl Context {
    pub fn new(options: ContextOptions) -> Result<Self> {
        // The C ABI holds these in i32: a larger value is refused here rather
        // than wrapped into a negative one.
        let c_int = |what: &str, v: u32| {
            i32::try_from(v).map_err(|_| {
                Error::new(
                    ErrorCode::InvalidArgument,
                    format!("{what} {v} is out of range (at most {})", i32::MAX),
                )
            })
        };
        let opts = ffi::cp_context_options {
            backend: match options.backend {
                Backend::Host => ffi::CP_BACKEND_HOST as i32,
                Backend::Cuda => ffi::CP_BACKEND_CUDA as i32,
            },
            host_devices: c_int("host_devices", options.host_devices)?,
            host_threads: c_int("host_threads", options.host_threads)?,
            devices: ptr::null(),
            num_devices: 0,
        };
        let devices = options
            .devices
            .iter()
            .map(|&d| c_int("device", d))
            .collect::<Result<Vec<i32>>>()?;
        let opts = ffi::cp_context_options {
            devices: if devices.is_empty() {
                ptr::null()
            } else {
                devices.as_ptr()
            },
            num_devices: devices.len(),
            ..opts
        };
        let mut raw = ptr::null_mut();
        // SAFETY: valid pointers (`devices` outlives the call, which copies
        // it); on success `raw` is owned by us.
        check(unsafe { ffi::cp_context_new(&opts, &mut raw) })?;
        Ok(Self { raw })
    }

    /// A host context with `n` simulated devices.
    pub fn host(n: u32) -> Result<Self> {
        Self::new(ContextOptions {
            backend: Backend::Host,
            host_devices: n,
            host_threads: 0,
            devices: Vec::new(),
        })
    }

    pub fn backend_name(&self) -> &'static str {
        // SAFETY: the core returns a static NUL-terminated string.
        let s = unsafe { std::ffi::CStr::from_ptr(ffi::cp_context_backend_name(self.raw)) };
        match s.to_str().unwrap_or("unknown") {
            "cuda" => "cuda",
            "host" => "host",
            _ => "unknown",
        }
    }

    pub fn device_count(&self) -> Result<usize> {
        let mut n = 0i32;
        // SAFETY: a live handle of `self` (or the caller's) and valid out
        // pointers for the call; the core checks ordinals and sizes.
        check(unsafe { ffi::cp_device_count(self.raw, &mut n) })?;
        Ok(n.max(0) as usize)
    }

    pub fn device_info(&self, ordinal: u32) -> Result<DeviceInfo> {
        let mut info = ffi::cp_device_info::default();
        // SAFETY: a live handle of `self` (or the caller's) and valid out
        // pointers for the call; the core checks ordinals and sizes.
        check(unsafe { ffi::cp_device_info_get(self.raw, ordinal as i32, &mut info) })?;
        Ok(DeviceInfo::from_raw(&info))
    }

    /// The ordinals this context opened, ascending (its device set).
    pub fn open_devices(&self) -> Result<Vec<u32>> {
        let mut len = 0usize;
        // SAFETY: a live context; a NULL buffer with capacity 0 asks for the
        // count only.
        check(unsafe { ffi::cp_context_devices(self.raw, ptr::null_mut(), 0, &mut len) })?;
        let mut v = vec![0i32; len];
        // SAFETY: `v` holds `v.len()` writable i32s.
        check(unsafe { ffi::cp_context_devices(self.raw, v.as_mut_ptr(), v.len(), &mut len) })?;
        v.truncate(len);
        Ok(v.into_iter().map(|d| d.max(0) as u32).collect())
    }

    /// Whether the core touched device `ordinal` (open or closed): bound a
    /// thread to it, allocated on it or created a context on it. For CUDA
    /// this is per process (see `cp_device_touched`).
    pub fn touched(&self, ordinal: u32) -> Result<bool> {
        let mut t = 0i32;
        let o = i32::try_from(ordinal).unwrap_or(i32::MAX);
        // SAFETY: a live context and a valid out pointer.
        check(unsafe { ffi::cp_device_touched(self.raw, o, &mut t) })?;
        Ok(t != 0)
    }

    pub fn device_stats(&self, ordinal: u32) -> Result<DeviceStats> {
        let mut s = DeviceStats::default();
        // SAFETY: a live handle of `self` (or the caller's) and valid out
        // pointers for the call; the core checks ordinals and sizes.
        check(unsafe { ffi::cp_device_stats_get(self.raw, ordinal as i32, &mut s) })?;
        Ok(s)
    }

    /// Frees the device's working cache; returns the bytes released.
    pub fn trim(&self, ordinal: u32) -> Result<u64> {
        let mut freed = 0u64;
        // SAFETY: a live handle of `self` (or the caller's) and valid out
        // pointers for the call; the core checks ordinals and sizes.
        check(unsafe { ffi::cp_device_trim(self.raw, ordinal as i32, &mut freed) })?;
        Ok(freed)
    }

    /// Binds the calling thread to `ordinal` (`None` unbinds).
    pub fn select_gpu(&self, ordinal: Option<u32>) -> Result<()> {
        let o = ordinal.map(|o| o as i32).unwrap_or(-1);
        // SAFETY: a live handle of `self` (or the caller's) and valid out
        // pointers for the call; the core checks ordinals and sizes.
        check(unsafe { ffi::cp_select_gpu(self.raw, o) })
    }

    /// The device bound to the calling thread.
    pub fn current_gpu(&self) -> Result<u32> {
        let mut o = -1i32;
        // SAFETY: a live handle of `self` (or the caller's) and valid out
        // pointers for the call; the core checks ordinals and sizes.
        check(unsafe { ffi::cp_current_gpu(self.raw, &mut o) })?;
        Ok(o as u32)
    }

    /// The core's handle, for a family crate's calls into the core. It
    /// stays valid while `self` lives; the caller must not free it.
    pub fn as_raw(&self) -> *mut ffi::cp_context {
        self.raw
    }
}

impl Drop for Context {
    fn drop(&mut self) {
        // SAFETY: we own the handle.
        unsafe { ffi::cp_context_free(self.raw) }
    }
}
