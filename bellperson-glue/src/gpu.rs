//! Where a prove call runs: the Rust face of the core's `gpu_index`
//! convention. The integers stay at the C ABI; the layers above pass this
//! type, so a stray negative number cannot mean a device.

use crate::error::{Error, Result};

/// The device(s) one prove call runs on.
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
            cuda_prover_sys::GPU_AUTO => Ok(GpuIndex::Auto),
            cuda_prover_sys::GPU_BOUND => Ok(GpuIndex::Bound),
            v => Err(Error::Invalid(format!(
                "gpu_index {v}: expected a device ordinal >= 0, -1 (automatic) or -2 (the bound device)"
            ))),
        }
    }
}

impl GpuIndex {
    /// The C ABI's integer. An ordinal beyond `i32::MAX` becomes `i32::MAX`,
    /// which the core refuses as out of range, never another device.
    pub fn raw(self) -> i32 {
        match self {
            GpuIndex::Device(d) => i32::try_from(d).unwrap_or(i32::MAX),
            GpuIndex::Auto => cuda_prover_sys::GPU_AUTO,
            GpuIndex::Bound => cuda_prover_sys::GPU_BOUND,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn c_convention_round_trips_and_refuses_the_rest() {
        for v in [0, 1, 7, -1, -2] {
            assert_eq!(GpuIndex::try_from(v).unwrap().raw(), v);
        }
        for v in [-3, -100, i32::MIN] {
            assert!(GpuIndex::try_from(v).is_err(), "{v}");
        }
        assert_eq!(GpuIndex::Device(u32::MAX).raw(), i32::MAX);
        assert_eq!(GpuIndex::from(3u32), GpuIndex::Device(3));
    }
}
