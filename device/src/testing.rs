//! `testing.h`: the test hooks (faults and delays by device or tag) and the
//! tuning knobs (a device's memory limit, the sharing of streamed passes,
//! how many workers prove on a device at once).

use cuda_prover_sys::ffi;

use crate::context::Context;
use crate::error::{check, Result};

/// When proofs with the same streamed key share one pass over its chunks
/// (each chunk sent up once and summed for each proof). A pass copies the
/// next chunk while it sums the current one, so sharing pays while the
/// key's copy takes longer than one proof's sums. The proofs' scalars are
/// counted within the device's memory limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StreamSharing {
    /// Where it pays, by the device's last streamed pass of the same key
    /// (none before one was measured). The default.
    #[default]
    Auto,
    /// Whenever the device's memory holds the proofs' scalars.
    Always,
    /// Never: each proof streams the key alone.
    Never,
}

impl std::str::FromStr for StreamSharing {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "auto" => Ok(Self::Auto),
            "always" => Ok(Self::Always),
            "never" => Ok(Self::Never),
            other => Err(format!(
                "'{other}' is not a sharing mode: auto, always or never"
            )),
        }
    }
}

impl Context {
    /// Test hook: the next device part on `ordinal` whose circuit tag is `tag`
    /// (any tag when `None`) fails with [`ErrorCode::InjectedFault`].
    pub fn inject_fault(&self, ordinal: u32, tag: Option<i64>) -> Result<()> {
        // SAFETY: a live handle of `self` (or the caller's) and valid out
        // pointers for the call; the core checks ordinals and sizes.
        check(unsafe { ffi::cp_inject_fault(self.as_raw(), ordinal as i32, tag.unwrap_or(-1)) })
    }

    /// Clears every injected fault.
    pub fn clear_faults(&self) -> Result<()> {
        // SAFETY: a live handle of `self` (or the caller's) and valid out
        // pointers for the call; the core checks ordinals and sizes.
        check(unsafe { ffi::cp_inject_fault(self.as_raw(), -1, -1) })
    }

    /// Test hook (host backend): each device part on `ordinal` takes
    /// `extra` longer.
    pub fn set_device_delay(&self, ordinal: u32, extra: std::time::Duration) -> Result<()> {
        // SAFETY: a live handle of `self` (or the caller's) and valid out
        // pointers for the call; the core checks ordinals and sizes.
        check(unsafe {
            ffi::cp_set_device_delay(self.as_raw(), ordinal as i32, extra.as_nanos() as u64)
        })
    }

    /// Test hook: device parts of circuits tagged `tag` take `extra` longer
    /// on any device (uneven partitions); a zero duration removes it.
    pub fn set_tag_delay(&self, tag: i64, extra: std::time::Duration) -> Result<()> {
        // SAFETY: a live handle of `self` (or the caller's) and valid out
        // pointers for the call; the core checks ordinals and sizes.
        check(unsafe { ffi::cp_set_tag_delay(self.as_raw(), tag, extra.as_nanos() as u64) })
    }

    /// Caps the memory the core may use on `ordinal` (`None` removes the cap).
    pub fn set_memory_limit(&self, ordinal: u32, bytes: Option<u64>) -> Result<()> {
        // SAFETY: a live handle of `self` (or the caller's) and valid out
        // pointers for the call; the core checks ordinals and sizes.
        check(unsafe {
            ffi::cp_set_device_memory_limit(self.as_raw(), ordinal as i32, bytes.unwrap_or(0))
        })
    }

    /// When proofs with the same streamed key share one pass over its
    /// chunks on `ordinal` ([`StreamSharing`]; `Timings::stream_shared`).
    pub fn set_stream_sharing(&self, ordinal: u32, mode: StreamSharing) -> Result<()> {
        let raw = match mode {
            StreamSharing::Auto => ffi::CP_SHARE_AUTO,
            StreamSharing::Always => ffi::CP_SHARE_ALWAYS,
            StreamSharing::Never => ffi::CP_SHARE_NEVER,
        };
        // SAFETY: `self.as_raw()` is a live context for the lifetime of `self`;
        // the core checks the ordinal and the mode.
        check(unsafe { ffi::cp_set_stream_sharing(self.as_raw(), ordinal as i32, raw) })
    }

    /// How many callers run device parts on `ordinal` at once (an engine's
    /// workers there; 1 to [`MAX_DEVICE_WORKERS`]). A CUDA device with a
    /// resident key and no memory limit keeps a second pass lane, so that
    /// one proof's upload, evaluation and NTTs run while the last one's
    /// MSMs finish: with one worker it takes at most half of the memory
    /// left, with more whatever fits.
    pub fn set_workers(&self, ordinal: u32, workers: u32) -> Result<()> {
        // SAFETY: `self.as_raw()` is a live context for the lifetime of
        // `self`; the core checks the ordinal and the count.
        check(unsafe { ffi::cp_set_device_workers(self.as_raw(), ordinal as i32, workers) })
    }
}

/// The most workers [`Context::set_workers`] takes.
pub const MAX_DEVICE_WORKERS: u32 = ffi::CP_MAX_DEVICE_WORKERS;
