//! Status codes from the core become typed errors here, and nowhere else.

use std::ffi::CStr;

use cuda_prover_sys::ffi;

/// What went wrong, as the core classifies it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    InvalidArgument,
    DeviceIndex,
    NoDeviceBound,
    ParamsIo,
    ParamsFormat,
    ShapeMismatch,
    Unsatisfied,
    OutOfMemory,
    Device,
    InjectedFault,
    Unsupported,
    Internal,
    /// A code this version of the bindings does not know.
    Unknown(i32),
}

impl ErrorCode {
    pub fn from_raw(code: i32) -> Self {
        match code as u32 {
            ffi::CP_ERR_INVALID_ARGUMENT => Self::InvalidArgument,
            ffi::CP_ERR_DEVICE_INDEX => Self::DeviceIndex,
            ffi::CP_ERR_NO_DEVICE_BOUND => Self::NoDeviceBound,
            ffi::CP_ERR_PARAMS_IO => Self::ParamsIo,
            ffi::CP_ERR_PARAMS_FORMAT => Self::ParamsFormat,
            ffi::CP_ERR_SHAPE_MISMATCH => Self::ShapeMismatch,
            ffi::CP_ERR_UNSATISFIED => Self::Unsatisfied,
            ffi::CP_ERR_OUT_OF_MEMORY => Self::OutOfMemory,
            ffi::CP_ERR_DEVICE => Self::Device,
            ffi::CP_ERR_INJECTED_FAULT => Self::InjectedFault,
            ffi::CP_ERR_UNSUPPORTED => Self::Unsupported,
            ffi::CP_ERR_INTERNAL => Self::Internal,
            _ => Self::Unknown(code),
        }
    }
}

/// An error reported by the core: its code and its message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message} ({code:?})")]
pub struct Error {
    pub code: ErrorCode,
    pub message: String,
}

pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }
}

/// Takes ownership of a status: frees its message and turns a failure into an
/// [`Error`]. Every call into the core, in this crate or a family's, ends
/// here.
pub fn check(status: ffi::cp_status) -> Result<()> {
    let message = take_message(status.message);
    if status.code == ffi::CP_OK as i32 {
        Ok(())
    } else {
        Err(Error {
            code: ErrorCode::from_raw(status.code),
            message: message.unwrap_or_else(|| format!("core error {}", status.code)),
        })
    }
}

/// Like [`check`], but keeps the message of a successful call.
pub fn check_with_message(status: ffi::cp_status) -> Result<Option<String>> {
    let message = take_message(status.message);
    if status.code == ffi::CP_OK as i32 {
        Ok(message)
    } else {
        Err(Error {
            code: ErrorCode::from_raw(status.code),
            message: message.unwrap_or_else(|| format!("core error {}", status.code)),
        })
    }
}

fn take_message(ptr: *mut std::os::raw::c_char) -> Option<String> {
    if ptr.is_null() {
        return None;
    }
    // SAFETY: the core hands over a NUL-terminated string it allocated; we
    // copy it and give it back to cp_string_free exactly once.
    let s = unsafe { CStr::from_ptr(ptr) }
        .to_string_lossy()
        .into_owned();
    unsafe { ffi::cp_string_free(ptr) };
    Some(s)
}
