//! Keys made in memory from their scalars ([`KeyBuilder`]) and keys loaded
//! with their subgroup checks on a device ([`Key::load_file_on`]).

use std::ffi::CString;
use std::path::Path;
use std::ptr;

use cuda_prover_device::{check, check_with_message, Context, Error, ErrorCode, Result};
use cuda_prover_sys::ffi;

use super::key::{Fr, Key, KeyShape, KeyVk, LoadReport};

/// A section of a proving key whose points are multiples of a generator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeySection {
    H,
    L,
    A,
    BG1,
    /// The only section in G2.
    BG2,
}

impl KeySection {
    fn raw(self) -> i32 {
        (match self {
            KeySection::H => ffi::CP_SECTION_H,
            KeySection::L => ffi::CP_SECTION_L,
            KeySection::A => ffi::CP_SECTION_A,
            KeySection::BG1 => ffi::CP_SECTION_B_G1,
            KeySection::BG2 => ffi::CP_SECTION_B_G2,
        }) as i32
    }
}

fn c_path(path: &Path) -> Result<CString> {
    use std::os::unix::ffi::OsStrExt;
    CString::new(path.as_os_str().as_bytes()).map_err(|_| {
        Error::new(
            ErrorCode::InvalidArgument,
            "params path contains a NUL byte",
        )
    })
}

/// A proving key being made from its scalars: the verifying key given, each
/// section's points the generator times a scalar, computed on a device of a
/// [`Context`] (the CUDA kernels, or the host backend's threads). Sections
/// are filled in order.
pub struct KeyBuilder {
    raw: *mut ffi::cp_key_builder,
}

// SAFETY: the builder is only used through `&mut self` or by value, so one
// thread at a time; the core keeps no thread affinity for it.
unsafe impl Send for KeyBuilder {}

impl KeyBuilder {
    /// Allocates a key with `vk`'s points and sections of `lens`' lengths
    /// (`ic_len` is `vk.ic`'s).
    pub fn new(vk: &KeyVk, lens: &KeyShape) -> Result<Self> {
        let parts = ffi::cp_key_parts {
            alpha_g1: vk.alpha_g1,
            beta_g1: vk.beta_g1,
            beta_g2: vk.beta_g2,
            gamma_g2: vk.gamma_g2,
            delta_g1: vk.delta_g1,
            delta_g2: vk.delta_g2,
            ic: vk.ic.as_ptr(),
            ic_len: vk.ic.len(),
            h: ptr::null(),
            h_len: lens.h_len as usize,
            l: ptr::null(),
            l_len: lens.l_len as usize,
            a: ptr::null(),
            a_len: lens.a_len as usize,
            b_g1: ptr::null(),
            b_g1_len: lens.b_g1_len as usize,
            b_g2: ptr::null(),
            b_g2_len: lens.b_g2_len as usize,
        };
        let mut raw = ptr::null_mut();
        // SAFETY: `parts.ic` points to `vk.ic`, alive for the call (the
        // core copies it); the section pointers are NULL and ignored.
        check(unsafe { ffi::cp_key_builder_new(&parts, &mut raw) })?;
        Ok(Self { raw })
    }

    /// Points `start..start + scalars.len()` of `section`, on device
    /// `ordinal` of `ctx`.
    pub fn fill(
        &mut self,
        ctx: &Context,
        ordinal: u32,
        section: KeySection,
        start: u64,
        scalars: &[Fr],
    ) -> Result<()> {
        // SAFETY: `self.raw` is a live builder used by this thread alone;
        // `scalars` is valid for reads of its length for the call.
        check(unsafe {
            ffi::cp_key_builder_fill(
                ctx.as_raw(),
                ordinal as i32,
                self.raw,
                section.raw(),
                start,
                scalars.as_ptr(),
                scalars.len(),
            )
        })
    }

    /// The key; with `path`, also written there in bellperson's params
    /// format with its verified record. The note says why a record could
    /// not be written.
    pub fn finish(self, path: Option<&Path>) -> Result<(Key, Option<String>)> {
        let c = path.map(c_path).transpose()?;
        let mut raw = ptr::null_mut();
        // SAFETY: `self.raw` is live; `c` (when given) is NUL-terminated and
        // alive for the call. `self` is dropped afterwards, freeing the
        // builder, whose key has moved into `raw`.
        let note = check_with_message(unsafe {
            ffi::cp_key_builder_finish(
                self.raw,
                c.as_ref().map_or(ptr::null(), |c| c.as_ptr()),
                &mut raw,
            )
        })?;
        Ok((Key { raw }, note))
    }
}

impl Drop for KeyBuilder {
    fn drop(&mut self) {
        // SAFETY: `self.raw` came from cp_key_builder_new and is freed once.
        unsafe { ffi::cp_key_builder_free(self.raw) }
    }
}

impl Key {
    /// [`Key::load_file`] with the subgroup checks, when it makes them, on
    /// device `ordinal` of `ctx`.
    pub fn load_file_on(
        ctx: &Context,
        ordinal: u32,
        path: &Path,
        check: super::key::KeyCheck,
    ) -> Result<(Self, LoadReport)> {
        let c = c_path(path)?;
        let mut raw = ptr::null_mut();
        let mut rep = ffi::cp_key_load_report::default();
        // SAFETY: `c` is NUL-terminated and alive for the call; the out
        // pointers are valid; `ctx.raw` is a live context.
        let note = check_with_message(unsafe {
            ffi::cp_key_load_file_on(
                ctx.as_raw(),
                ordinal as i32,
                c.as_ptr(),
                check.flags(),
                &mut rep,
                &mut raw,
            )
        })?;
        Ok((Self { raw }, LoadReport::from_raw(&rep, note)))
    }
}
