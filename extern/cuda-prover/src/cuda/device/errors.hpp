// CUDA and sppark failures as cp::error, and the small helpers (time, byte
// counts) the CUDA device files share. Header only: the CUDA libraries are
// linked one per .cu file, so shared inline helpers avoid link-order ties.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include <cuda_runtime.h>

#include "backend.hpp"
#include "gpu_ops.hpp"
#include "registry.hpp"

namespace cp {
namespace cuda_dev {

constexpr uint64_t MiB = 1ull << 20;

inline uint64_t now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

inline size_t align256(size_t x) { return (x + 255) & ~size_t(255); }

inline std::string mib(uint64_t b) { return std::to_string((b + MiB - 1) / MiB) + " MiB"; }

[[noreturn]] inline void cuda_fail(cudaError_t e, const std::string &what) {
    (void)cudaGetLastError();
    const cp_code code = e == cudaErrorMemoryAllocation ? CP_ERR_OUT_OF_MEMORY : CP_ERR_DEVICE;
    fail(code, what + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")");
}

inline void cuda_check(cudaError_t e, const std::string &what) {
    if (e != cudaSuccess)
        cuda_fail(e, what);
}

// sppark reports failures as cuda_error carrying -cudaError_t.
[[noreturn]] inline void rethrow_sppark(const cuda_error &e, int cuda_id) {
    (void)cudaGetLastError();
    const cp_code code =
        e.code() == -(int)cudaErrorMemoryAllocation ? CP_ERR_OUT_OF_MEMORY : CP_ERR_DEVICE;
    fail(code, "CUDA device " + std::to_string(cuda_id) + ": " + e.what());
}

}  // namespace cuda_dev
}  // namespace cp
