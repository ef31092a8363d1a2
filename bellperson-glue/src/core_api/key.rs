//! Proving keys in the core (`cp_key`): loaded from their parts, a params
//! file or bytes, with the subgroup checks asked for; their shape, verifying
//! key and memory estimates; placed on a device ahead of the first proof.

use std::ffi::CString;
use std::path::Path;
use std::ptr;

use cuda_prover_device::{check, check_with_message, Context, Error, ErrorCode, Result};
use cuda_prover_sys::ffi;

pub use ffi::{
    cp_fr as Fr, cp_g1_affine as G1Affine, cp_g2_affine as G2Affine, cp_key_shape as KeyShape,
    cp_memory_estimate as MemoryEstimate,
};

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
            Some((c, o)) => (c.as_raw(), o as i32),
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
        // SAFETY: a live handle of `self` (or the caller's) and valid out
        // pointers for the call; the core checks ordinals and sizes.
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
            // SAFETY: cp_key_parts is plain C data (pointers, lengths, points),
            // for which all-zero bytes are a valid value.
            ..unsafe { std::mem::zeroed() }
        };
        let mut ic = vec![G1Affine::default(); shape.ic_len as usize];
        // SAFETY: a live handle of `self` (or the caller's) and valid out
        // pointers for the call; the core checks ordinals and sizes.
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
        // SAFETY: a live handle of `self` (or the caller's) and valid out
        // pointers for the call; the core checks ordinals and sizes.
        check(unsafe { ffi::cp_memory_estimate_get(self.raw, num_constraints, &mut e) })?;
        Ok(e)
    }

    /// What device `ordinal` of `ctx` needs for proofs of `num_constraints`
    /// constraints with this key, by its own backend's layout.
    pub fn device_memory_estimate(
        &self,
        ctx: &Context,
        ordinal: u32,
        num_constraints: u64,
    ) -> Result<MemoryEstimate> {
        let mut e = MemoryEstimate::default();
        let o = i32::try_from(ordinal).unwrap_or(i32::MAX);
        // SAFETY: a live context and key, and a valid out pointer.
        check(unsafe {
            ffi::cp_device_memory_estimate(ctx.as_raw(), o, self.raw, num_constraints, &mut e)
        })?;
        Ok(e)
    }

    /// Uploads this key to `ordinal` of `ctx` and allocates the working
    /// cache for proofs of `num_constraints` constraints, so the first
    /// proof pays neither.
    pub fn prepare(&self, ctx: &Context, ordinal: u32, num_constraints: u64) -> Result<()> {
        // SAFETY: the handles are live for the call; the core checks the ordinal.
        check(unsafe {
            ffi::cp_device_prepare(ctx.as_raw(), ordinal as i32, self.raw, num_constraints)
        })
    }
}

impl Drop for Key {
    fn drop(&mut self) {
        // SAFETY: we own the handle; nothing uses it after `self`.
        unsafe { ffi::cp_key_free(self.raw) }
    }
}
