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
    int ordinal;      // the context's ordinal, for messages
    uint64_t limit;   // device::memory_limit()
    unsigned workers; // device::workers(): callers running passes at once

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

    // The card's free memory on the current device, counting what the
    // default pool holds and does not use as free: a freed MSM context
    // stays there (its release threshold keeps sppark's temporaries
    // mapped), ready for the next context, and trim_pool gives it back
    // to the card for an allocation that needs it (device_buffer). Not
    // counting it, a plan made beside a held context and then carried out
    // after dropping it fell short by the context: the 32 GiB C2 on an
    // 80 GB H100 failed as "needs 71354 MiB on device 0, 66689 MiB free".
    static size_t card_free() {
        size_t free_b = 0, total_b = 0;
        cuda_check(cudaMemGetInfo(&free_b, &total_b), "cudaMemGetInfo");
        return free_b + pool_idle();
    }

    // What the current device's default pool reserves and does not use.
    static size_t pool_idle() {
        int dev = 0;
        cudaMemPool_t pool = nullptr;
        uint64_t reserved = 0, used = 0;
        if (cudaGetDevice(&dev) != cudaSuccess ||
            cudaDeviceGetDefaultMemPool(&pool, dev) != cudaSuccess ||
            cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &reserved) !=
                cudaSuccess ||
            cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used) != cudaSuccess) {
            (void)cudaGetLastError();
            return 0;
        }
        return reserved > used ? size_t(reserved - used) : 0;
    }

    [[noreturn]] void oom(uint64_t needed, uint64_t free_b) const {
        fail(CP_ERR_OUT_OF_MEMORY, "needs " + mib(needed) + " on device " +
                                       std::to_string(ordinal) + ", " + mib(free_b) + " free");
    }
};

}  // namespace cuda_dev
}  // namespace cp
