// The device memory a CUDA device may still use: the card's free memory,
// capped by the context's memory limit, and the out-of-memory error.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>

#include "device/errors.hpp"

namespace cp {
namespace cuda_dev {

struct memory_budget {
    int ordinal;     // the context's ordinal, for messages
    uint64_t limit;  // device::memory_limit()

    size_t free_bytes() const {
        size_t free_b = 0, total_b = 0;
        cuda_check(cudaMemGetInfo(&free_b, &total_b), "cudaMemGetInfo");
        return std::min<uint64_t>(free_b, limit);
    }

    [[noreturn]] void oom(uint64_t needed, uint64_t free_b) const {
        fail(CP_ERR_OUT_OF_MEMORY, "needs " + mib(needed) + " on device " +
                                       std::to_string(ordinal) + ", " + mib(free_b) + " free");
    }
};

}  // namespace cuda_dev
}  // namespace cp
