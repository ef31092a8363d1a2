//! RAII types over the core's handles. Every call returns `Result`.

use std::ffi::CString;
use std::marker::PhantomData;
use std::path::Path;
use std::ptr;

use crate::error::{check, check_with_message, Error, ErrorCode, Result};
use crate::ffi;
use crate::placement::Placement;

pub use ffi::{
    cp_device_info as RawDeviceInfo, cp_device_stats as DeviceStats, cp_fr as Fr,
    cp_g1_affine as G1Affine, cp_g2_affine as G2Affine, cp_key_shape as KeyShape,
    cp_memory_estimate as MemoryEstimate, cp_timings as Timings,
};

/// Which backend a context runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Backend {
    #[default]
    Host,
    Cuda,
}

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
    fn from_raw(info: &ffi::cp_device_info) -> Self {
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

/// The core's per-device state: devices, their mutexes, caches and counters.
pub struct Context {
    pub(crate) raw: *mut ffi::cp_context,
}

// SAFETY: the core's context is internally synchronized (per-device mutexes);
// every entry point may be called from any thread.
unsafe impl Send for Context {}
unsafe impl Sync for Context {}

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
        check(unsafe { ffi::cp_device_count(self.raw, &mut n) })?;
        Ok(n.max(0) as usize)
    }

    pub fn device_info(&self, ordinal: u32) -> Result<DeviceInfo> {
        let mut info = ffi::cp_device_info::default();
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

    /// What device `ordinal` needs for proofs of `num_constraints`
    /// constraints with `key`, by its own backend's layout.
    pub fn memory_estimate(
        &self,
        ordinal: u32,
        key: &Key,
        num_constraints: u64,
    ) -> Result<MemoryEstimate> {
        let mut e = MemoryEstimate::default();
        let o = i32::try_from(ordinal).unwrap_or(i32::MAX);
        // SAFETY: a live context and key, and a valid out pointer.
        check(unsafe {
            ffi::cp_device_memory_estimate(self.raw, o, key.raw, num_constraints, &mut e)
        })?;
        Ok(e)
    }

    pub fn device_stats(&self, ordinal: u32) -> Result<DeviceStats> {
        let mut s = DeviceStats::default();
        check(unsafe { ffi::cp_device_stats_get(self.raw, ordinal as i32, &mut s) })?;
        Ok(s)
    }

    /// Frees the device's working cache; returns the bytes released.
    pub fn trim(&self, ordinal: u32) -> Result<u64> {
        let mut freed = 0u64;
        check(unsafe { ffi::cp_device_trim(self.raw, ordinal as i32, &mut freed) })?;
        Ok(freed)
    }

    /// Uploads `key` to `ordinal` and allocates the working cache for proofs
    /// of `num_constraints` constraints, so the first proof pays neither.
    pub fn prepare(&self, ordinal: u32, key: &Key, num_constraints: u64) -> Result<()> {
        check(unsafe { ffi::cp_device_prepare(self.raw, ordinal as i32, key.raw, num_constraints) })
    }

    /// Binds the calling thread to `ordinal` (`None` unbinds).
    pub fn select_gpu(&self, ordinal: Option<u32>) -> Result<()> {
        let o = ordinal.map(|o| o as i32).unwrap_or(-1);
        check(unsafe { ffi::cp_select_gpu(self.raw, o) })
    }

    /// The device bound to the calling thread.
    pub fn current_gpu(&self) -> Result<u32> {
        let mut o = -1i32;
        check(unsafe { ffi::cp_current_gpu(self.raw, &mut o) })?;
        Ok(o as u32)
    }

    /// Test hook: the next device part on `ordinal` whose circuit tag is `tag`
    /// (any tag when `None`) fails with [`ErrorCode::InjectedFault`].
    pub fn inject_fault(&self, ordinal: u32, tag: Option<i64>) -> Result<()> {
        check(unsafe { ffi::cp_inject_fault(self.raw, ordinal as i32, tag.unwrap_or(-1)) })
    }

    /// Clears every injected fault.
    pub fn clear_faults(&self) -> Result<()> {
        check(unsafe { ffi::cp_inject_fault(self.raw, -1, -1) })
    }

    /// Test hook (host backend): each device part on `ordinal` takes
    /// `extra` longer.
    pub fn set_device_delay(&self, ordinal: u32, extra: std::time::Duration) -> Result<()> {
        check(unsafe {
            ffi::cp_set_device_delay(self.raw, ordinal as i32, extra.as_nanos() as u64)
        })
    }

    /// Test hook: device parts of circuits tagged `tag` take `extra` longer
    /// on any device (uneven partitions); a zero duration removes it.
    pub fn set_tag_delay(&self, tag: i64, extra: std::time::Duration) -> Result<()> {
        check(unsafe { ffi::cp_set_tag_delay(self.raw, tag, extra.as_nanos() as u64) })
    }

    /// Caps the memory the core may use on `ordinal` (`None` removes the cap).
    pub fn set_memory_limit(&self, ordinal: u32, bytes: Option<u64>) -> Result<()> {
        check(unsafe {
            ffi::cp_set_device_memory_limit(self.raw, ordinal as i32, bytes.unwrap_or(0))
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
        // SAFETY: `self.raw` is a live context for the lifetime of `self`;
        // the core checks the ordinal and the mode.
        check(unsafe { ffi::cp_set_stream_sharing(self.raw, ordinal as i32, raw) })
    }

    /// Runs the device part of every circuit and returns once it is done.
    pub fn prove_start(
        &self,
        key: &Key,
        circuits: &[Circuit<'_>],
        place: &Placement<'_>,
    ) -> Result<Pending> {
        if circuits.is_empty() {
            return Err(Error::new(
                ErrorCode::InvalidArgument,
                "no circuits to prove",
            ));
        }
        let raw: Vec<ffi::cp_circuit> = circuits.iter().map(|c| c.raw).collect();
        let mut out = ptr::null_mut();
        // SAFETY: `raw` borrows slices that outlive the call (lifetime 'a of
        // each Circuit); the core does not keep them after returning.
        check(unsafe {
            ffi::cp_prove_start(
                self.raw,
                key.raw,
                raw.as_ptr(),
                raw.len(),
                place.gpu.raw(),
                place.raw_mutex(),
                &mut out,
            )
        })?;
        Ok(Pending { raw: out })
    }

    /// Device part and host epilogue in one call.
    pub fn prove(
        &self,
        key: &Key,
        circuits: &[Circuit<'_>],
        place: &Placement<'_>,
    ) -> Result<Vec<RawProof>> {
        self.prove_start(key, circuits, place)?.finish()
    }
}

impl Drop for Context {
    fn drop(&mut self) {
        // SAFETY: we own the handle.
        unsafe { ffi::cp_context_free(self.raw) }
    }
}

/// A mutex for one device, allocated by the caller and passed to every call
/// it routes to that device.
pub struct DeviceMutex {
    pub(crate) raw: *mut ffi::cp_mutex,
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

/// The points of a proving key, borrowed, in the core's layout.
pub struct KeyParts<'a> {
    pub alpha_g1: G1Affine,
    pub beta_g1: G1Affine,
    pub beta_g2: G2Affine,
    pub gamma_g2: G2Affine,
    pub delta_g1: G1Affine,
    pub delta_g2: G2Affine,
    pub ic: &'a [G1Affine],
    pub h: &'a [G1Affine],
    pub l: &'a [G1Affine],
    pub a: &'a [G1Affine],
    pub b_g1: &'a [G1Affine],
    pub b_g2: &'a [G2Affine],
}

/// The verifying-key points of a proving key.
#[derive(Debug, Clone)]
pub struct KeyVk {
    pub alpha_g1: G1Affine,
    pub beta_g1: G1Affine,
    pub beta_g2: G2Affine,
    pub gamma_g2: G2Affine,
    pub delta_g1: G1Affine,
    pub delta_g2: G2Affine,
    pub ic: Vec<G1Affine>,
}

/// How the points of a proving key are checked when it is loaded. Every
/// point is always checked to be canonically encoded, on its curve and not
/// the point at infinity; the variants decide the (costly) check of
/// prime-order subgroup membership.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum KeyCheck {
    /// Every point's subgroup is checked. A file's check is paid once: the
    /// core records the file's digest in `<path>.verified` and a later load
    /// with the same digest skips it.
    #[default]
    Full,
    /// Every point's subgroup is checked on every load; no digest record is
    /// read or written.
    FullNoDigest,
    /// No subgroup check: the caller vouches for the key (it generated it,
    /// or checked it before).
    TrustedUnchecked,
}

impl KeyCheck {
    pub(crate) fn flags(self) -> u32 {
        match self {
            KeyCheck::Full => ffi::CP_KEY_CHECKED,
            KeyCheck::FullNoDigest => ffi::CP_KEY_NO_DIGEST,
            KeyCheck::TrustedUnchecked => ffi::CP_KEY_TRUSTED_UNCHECKED,
        }
    }
}

/// Whether a load checked the subgroups.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SubgroupCheck {
    /// Every point was checked by this load.
    Checked,
    /// Skipped: the file's digest matched its `<path>.verified` record.
    DigestMatched,
    /// Skipped: [`KeyCheck::TrustedUnchecked`].
    Trusted,
}

/// What a load did and how long it took.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadReport {
    pub subgroup: SubgroupCheck,
    /// This load wrote `<path>.verified`.
    pub digest_written: bool,
    /// Bytes parsed (0 for parts).
    pub bytes: u64,
    pub points: u64,
    /// Reading, hashing, decoding and the cheap checks.
    pub read: std::time::Duration,
    /// The subgroup checks (zero when skipped).
    pub subgroup_time: std::time::Duration,
    pub total: std::time::Duration,
    /// Why the digest record could not be written, when it could not.
    pub note: Option<String>,
}

impl LoadReport {
    /// One line for logs: what happened to the subgroup checks.
    pub fn summary(&self) -> String {
        match self.subgroup {
            SubgroupCheck::Checked => format!(
                "{} points, subgroup checks {:.2} s{}",
                self.points,
                self.subgroup_time.as_secs_f64(),
                if self.digest_written {
                    ", digest recorded"
                } else {
                    ""
                }
            ),
            SubgroupCheck::DigestMatched => format!(
                "{} points, subgroup checks skipped: digest matches the verified record",
                self.points
            ),
            SubgroupCheck::Trusted => format!(
                "{} points, subgroup checks skipped: trusted by the caller",
                self.points
            ),
        }
    }

    pub(crate) fn from_raw(r: &ffi::cp_key_load_report, note: Option<String>) -> Self {
        let d = std::time::Duration::from_nanos;
        Self {
            subgroup: match r.subgroup as u32 {
                ffi::CP_SUBGROUP_DIGEST_MATCHED => SubgroupCheck::DigestMatched,
                ffi::CP_SUBGROUP_TRUSTED => SubgroupCheck::Trusted,
                _ => SubgroupCheck::Checked,
            },
            digest_written: r.digest_written != 0,
            bytes: r.bytes,
            points: r.points,
            read: d(r.read_ns),
            subgroup_time: d(r.subgroup_ns),
            total: d(r.total_ns),
            note,
        }
    }
}

/// A proving key held by the core (host copy; devices get theirs on use).
pub struct Key {
    pub(crate) raw: *mut ffi::cp_key,
}

// SAFETY: the core never mutates a key's host points after loading; its
// per-device copies are guarded by the key's own mutex.
unsafe impl Send for Key {}
unsafe impl Sync for Key {}

impl Key {
    /// From in-memory parts, every point checked ([`KeyCheck::Full`]).
    pub fn from_parts(p: &KeyParts<'_>) -> Result<Self> {
        Ok(Self::load_parts(p, KeyCheck::Full)?.0)
    }

    /// From in-memory parts, checked as `check` says.
    pub fn load_parts(p: &KeyParts<'_>, check: KeyCheck) -> Result<(Self, LoadReport)> {
        let parts = ffi::cp_key_parts {
            alpha_g1: p.alpha_g1,
            beta_g1: p.beta_g1,
            beta_g2: p.beta_g2,
            gamma_g2: p.gamma_g2,
            delta_g1: p.delta_g1,
            delta_g2: p.delta_g2,
            ic: p.ic.as_ptr(),
            ic_len: p.ic.len(),
            h: p.h.as_ptr(),
            h_len: p.h.len(),
            l: p.l.as_ptr(),
            l_len: p.l.len(),
            a: p.a.as_ptr(),
            a_len: p.a.len(),
            b_g1: p.b_g1.as_ptr(),
            b_g1_len: p.b_g1.len(),
            b_g2: p.b_g2.as_ptr(),
            b_g2_len: p.b_g2.len(),
        };
        let mut raw = ptr::null_mut();
        let mut rep = ffi::cp_key_load_report::default();
        // SAFETY: each pointer/length pair comes from a live slice valid for
        // the call; the core copies the points and keeps no pointer.
        let note = check_with_message(unsafe {
            ffi::cp_key_load_parts(&parts, check.flags(), &mut rep, &mut raw)
        })?;
        Ok((Self { raw }, LoadReport::from_raw(&rep, note)))
    }

    /// Reads a params file written by bellperson's `Parameters::write`,
    /// every point checked ([`KeyCheck::Full`]).
    pub fn from_file(path: &Path) -> Result<Self> {
        Ok(Self::load_file(path, KeyCheck::Full)?.0)
    }

    /// Reads a params file, checked as `check` says. The path is passed as
    /// its bytes: a name that is not UTF-8 is the same file.
    pub fn load_file(path: &Path, check: KeyCheck) -> Result<(Self, LoadReport)> {
        use std::os::unix::ffi::OsStrExt;
        let c = CString::new(path.as_os_str().as_bytes()).map_err(|_| {
            Error::new(
                ErrorCode::InvalidArgument,
                "params path contains a NUL byte",
            )
        })?;
        let mut raw = ptr::null_mut();
        let mut rep = ffi::cp_key_load_report::default();
        // SAFETY: `c` is a NUL-terminated string alive for the call; the out
        // pointers are valid.
        let note = check_with_message(unsafe {
            ffi::cp_key_load_file(c.as_ptr(), check.flags(), &mut rep, &mut raw)
        })?;
        Ok((Self { raw }, LoadReport::from_raw(&rep, note)))
    }

    /// A params file confined to a directory: `name` (one path component)
    /// of the directory open as `dir`, opened without following a link,
    /// its verified record read and written in that directory; `shown`
    /// names it in messages. With `on`, the subgroup checks (when made) run
    /// on that device of that context, else on the host.
    pub fn load_file_at(
        on: Option<(&Context, u32)>,
        dir: std::os::fd::BorrowedFd<'_>,
        name: &std::ffi::OsStr,
        shown: &Path,
        check: KeyCheck,
    ) -> Result<(Self, LoadReport)> {
        use std::os::fd::AsRawFd;
        use std::os::unix::ffi::OsStrExt;
        let nul = |_| {
            Error::new(
                ErrorCode::InvalidArgument,
                "params path contains a NUL byte",
            )
        };
        let c_name = CString::new(name.as_bytes()).map_err(nul)?;
        let c_shown = CString::new(shown.as_os_str().as_bytes()).map_err(nul)?;
        let (ctx, ordinal) = match on {
            Some((c, o)) => (c.raw, o as i32),
            None => (ptr::null_mut(), 0),
        };
        let mut raw = ptr::null_mut();
        let mut rep = ffi::cp_key_load_report::default();
        // SAFETY: both strings are NUL-terminated and alive for the call;
        // `dir` is an open descriptor borrowed for the call (the core opens
        // files relative to it and neither keeps nor closes it); `ctx` is a
        // live context or NULL; the out pointers are valid.
        let note = check_with_message(unsafe {
            ffi::cp_key_load_file_at(
                ctx,
                ordinal,
                dir.as_raw_fd(),
                c_name.as_ptr(),
                c_shown.as_ptr(),
                check.flags(),
                &mut rep,
                &mut raw,
            )
        })?;
        Ok((Self { raw }, LoadReport::from_raw(&rep, note)))
    }

    /// The same format from memory, every point checked.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self> {
        Ok(Self::load_bytes(bytes, KeyCheck::Full)?.0)
    }

    /// The same format from memory, checked as `check` says.
    pub fn load_bytes(bytes: &[u8], check: KeyCheck) -> Result<(Self, LoadReport)> {
        let mut raw = ptr::null_mut();
        let mut rep = ffi::cp_key_load_report::default();
        // SAFETY: `bytes` is valid for reads of its length for the call.
        let note = check_with_message(unsafe {
            ffi::cp_key_load_bytes(
                bytes.as_ptr(),
                bytes.len(),
                check.flags(),
                &mut rep,
                &mut raw,
            )
        })?;
        Ok((Self { raw }, LoadReport::from_raw(&rep, note)))
    }

    pub fn shape(&self) -> Result<KeyShape> {
        let mut s = KeyShape::default();
        check(unsafe { ffi::cp_key_shape_get(self.raw, &mut s) })?;
        Ok(s)
    }

    pub fn vk(&self) -> Result<KeyVk> {
        let shape = self.shape()?;
        let mut parts = ffi::cp_key_parts {
            ic: ptr::null(),
            h: ptr::null(),
            l: ptr::null(),
            a: ptr::null(),
            b_g1: ptr::null(),
            b_g2: ptr::null(),
            ..unsafe { std::mem::zeroed() }
        };
        let mut ic = vec![G1Affine::default(); shape.ic_len as usize];
        check(unsafe { ffi::cp_key_vk_get(self.raw, &mut parts, ic.as_mut_ptr(), ic.len()) })?;
        Ok(KeyVk {
            alpha_g1: parts.alpha_g1,
            beta_g1: parts.beta_g1,
            beta_g2: parts.beta_g2,
            gamma_g2: parts.gamma_g2,
            delta_g1: parts.delta_g1,
            delta_g2: parts.delta_g2,
            ic,
        })
    }

    /// Device memory a proof with `num_constraints` constraints needs.
    pub fn memory_estimate(&self, num_constraints: u64) -> Result<MemoryEstimate> {
        let mut e = MemoryEstimate::default();
        check(unsafe { ffi::cp_memory_estimate_get(self.raw, num_constraints, &mut e) })?;
        Ok(e)
    }
}

impl Drop for Key {
    fn drop(&mut self) {
        unsafe { ffi::cp_key_free(self.raw) }
    }
}

/// One synthesized circuit, borrowed for the duration of a prove call.
#[derive(Clone, Copy)]
pub struct Circuit<'a> {
    raw: ffi::cp_circuit,
    _borrow: PhantomData<&'a [Fr]>,
}

/// The slices that make up a [`Circuit`].
pub struct CircuitParts<'a> {
    pub a: &'a [Fr],
    pub b: &'a [Fr],
    pub c: &'a [Fr],
    pub inputs: &'a [Fr],
    pub aux: &'a [Fr],
    /// Bit i of word i/64 per variable.
    pub a_aux_density: &'a [u64],
    pub b_input_density: &'a [u64],
    pub b_aux_density: &'a [u64],
    pub r: Fr,
    pub s: Fr,
    pub tag: Option<i64>,
}

impl<'a> Circuit<'a> {
    /// Checks the lengths here so that the core never reads past a slice.
    pub fn new(p: CircuitParts<'a>) -> Result<Self> {
        let words = |bits: usize| bits.div_ceil(64);
        let bad = |what: &str| Err(Error::new(ErrorCode::InvalidArgument, what.to_string()));
        if p.a.len() != p.b.len() || p.a.len() != p.c.len() {
            return bad("a, b and c must have one evaluation per constraint");
        }
        if p.a_aux_density.len() < words(p.aux.len()) || p.b_aux_density.len() < words(p.aux.len())
        {
            return bad("aux density bitmaps are shorter than the aux assignment");
        }
        if p.b_input_density.len() < words(p.inputs.len()) {
            return bad("input density bitmap is shorter than the input assignment");
        }
        Ok(Self {
            raw: ffi::cp_circuit {
                a: p.a.as_ptr(),
                b: p.b.as_ptr(),
                c: p.c.as_ptr(),
                num_constraints: p.a.len(),
                inputs: p.inputs.as_ptr(),
                num_inputs: p.inputs.len(),
                aux: p.aux.as_ptr(),
                num_aux: p.aux.len(),
                a_aux_density: p.a_aux_density.as_ptr(),
                b_input_density: p.b_input_density.as_ptr(),
                b_aux_density: p.b_aux_density.as_ptr(),
                r: p.r,
                s: p.s,
                tag: p.tag.unwrap_or(-1),
            },
            _borrow: PhantomData,
        })
    }

    pub fn tag(&self) -> Option<i64> {
        (self.raw.tag >= 0).then_some(self.raw.tag)
    }
}

/// A proof as the core returns it, with the device that made it.
#[derive(Debug, Clone, Copy)]
pub struct RawProof {
    pub a: G1Affine,
    pub b: G2Affine,
    pub c: G1Affine,
    pub device: u32,
    pub timings: Timings,
}

/// Proofs whose device part is done; [`Pending::finish`] runs the host
/// epilogue.
pub struct Pending {
    pub(crate) raw: *mut ffi::cp_pending,
}

unsafe impl Send for Pending {}

impl Pending {
    pub fn len(&self) -> usize {
        unsafe { ffi::cp_pending_len(self.raw) }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The device that ran each circuit.
    pub fn devices(&self) -> Vec<u32> {
        (0..self.len())
            .map(|i| unsafe { ffi::cp_pending_device(self.raw, i) } as u32)
            .collect()
    }

    pub fn finish(self) -> Result<Vec<RawProof>> {
        let n = self.len();
        let mut out = vec![ffi::cp_proof::default(); n];
        let raw = self.raw;
        std::mem::forget(self);
        // SAFETY: cp_prove_finish consumes `raw` on success and on failure.
        check(unsafe { ffi::cp_prove_finish(raw, out.as_mut_ptr()) })?;
        Ok(out
            .into_iter()
            .map(|p| RawProof {
                a: p.a,
                b: p.b,
                c: p.c,
                device: p.device as u32,
                timings: p.timings,
            })
            .collect())
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        unsafe { ffi::cp_pending_free(self.raw) }
    }
}
