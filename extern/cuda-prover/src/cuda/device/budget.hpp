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

    // The card's free memory, capped by the limit.
    size_t free_bytes() const { return std::min<uint64_t>(card_free(), limit); }

    // Left free when the card, not the limit, bounds what the core may use:
    // plans fill what they are given to the byte (stream_plan.hpp searches
    // the largest chunk buffers that fit), and the allocations that follow
    // round up (the default pool's granularity, the MSM context's parts).
    // Without it the 32 GiB C2's streamed plan on an 80 GB H100 failed as
    // "needs 71848 MiB on device 0, 71848 MiB free".
    static constexpr uint64_t CARD_SLACK = uint64_t(512) << 20;

    // What the core may use in all, holding `held` bytes now: the card's
    // free memory plus what is held, less CARD_SLACK, capped by the limit.
    uint64_t usable(uint64_t held) const {
        const uint64_t card = card_free() + held;
        return std::min<uint64_t>(card > CARD_SLACK ? card - CARD_SLACK : 0, limit);
    }

    static size_t card_free() {
        size_t free_b = 0, total_b = 0;
        cuda_check(cudaMemGetInfo(&free_b, &total_b), "cudaMemGetInfo");
        return free_b;
    }

    [[noreturn]] void oom(uint64_t needed, uint64_t free_b) const {
        fail(CP_ERR_OUT_OF_MEMORY, "needs " + mib(needed) + " on device " +
                                       std::to_string(ordinal) + ", " + mib(free_b) + " free");
    }
};

}  // namespace cuda_dev
}  // namespace cp
