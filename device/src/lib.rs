//! `cuda-prover-device`: the devices every proof family runs on.
//!
//! This layer owns what the families share in the core: the context and its
//! backend ([`Context`]), the devices it opens and what they are
//! ([`DeviceInfo`], [`DeviceStats`], the CUDA queries that need no context),
//! where a call runs ([`Placement`]: a [`GpuIndex`] and the caller's
//! [`DeviceMutex`]), the core's errors with their codes ([`Error`],
//! [`ErrorCode`], and [`check`], which every call into the core passes
//! through), the test hooks and tuning knobs of `testing.h`, and the text
//! of a caught panic ([`panic_message`]), which no error may carry across
//! the FFI or out of a worker. It mirrors
//! the C header `include/cuda_prover/core.h` (and `testing.h`); a proof
//! family (Groth16 in `cuda-prover-bellperson`, GKR in `cuda-prover-gkr`)
//! calls its own part of the C ABI through `cuda-prover-sys`'s bindings and
//! this crate for the rest. It calls only `cuda-prover-sys` and knows no
//! proof family.

mod context;
mod devices;
mod error;
mod mutex;
mod panic;
mod placement;
mod testing;

pub use context::{Backend, Context, ContextOptions};
pub use devices::{
    built_with_cuda, cuda_device_count, cuda_device_info, cuda_usable_devices, DeviceInfo,
    DeviceStats,
};
pub use error::{check, check_with_message, Error, ErrorCode, Result};
pub use mutex::DeviceMutex;
pub use panic::panic_message;
pub use placement::{GpuIndex, Placement, GPU_AUTO, GPU_BOUND};
pub use testing::{StreamSharing, MAX_DEVICE_WORKERS};
