//! What several files use: the bounds on the sizes the tests prove
//! (`CP_CUDA_MIN_LOG`, `CP_CUDA_MAX_LOG`).

pub fn max_log() -> u32 {
    std::env::var("CP_CUDA_MAX_LOG")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(16)
}

pub fn min_log() -> u32 {
    std::env::var("CP_CUDA_MIN_LOG")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10)
}
