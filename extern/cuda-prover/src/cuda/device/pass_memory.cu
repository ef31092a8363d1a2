// What a pass measures of the device's memory (pass_memory.hpp).
#include "device/pass_memory.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace cp {
namespace cuda_dev {

void trace_memory(const device_state &d, const char *where) {
    if (std::getenv("CP_TRACE_MEMORY") == nullptr)
        return;
    uint64_t used = 0, high = 0, reserved = 0;
    cudaMemPool_t pool = nullptr;
    if (cudaDeviceGetDefaultMemPool(&pool, d.cuda_id) == cudaSuccess) {
        (void)cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used);
        (void)cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemHigh, &high);
        (void)cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &reserved);
    }
    size_t free_b = 0, total_b = 0;
    (void)cudaMemGetInfo(&free_b, &total_b);
    (void)cudaGetLastError();
    auto mb = [](uint64_t b) { return b / 1048576.0; };
    std::fprintf(stderr,
                 "cp memory %s: buffers %.1f sets %.1f caches %.1f + %.1f msm %.1f + %.1f shape "
                 "%.1f | pool used %.1f high %.1f reserved %.1f | card used %.1f MiB\n",
                 where, mb(d.streamer.buffer_bytes() * 2), mb(d.streamer.sets_bytes()),
                 mb(d.lanes[0].cache.bytes.load()), mb(d.lanes[1].cache.bytes.load()),
                 mb(d.lanes[0].msm_bytes()), mb(d.lanes[1].msm_bytes()), mb(d.shape.bytes()),
                 mb(used), mb(high), mb(reserved), mb(total_b - free_b));
}

void peak_probe::record(cp_timings &t) const {
    uint64_t pool_high = 0;
    if (pool) {
        uint64_t high = 0, used = 0;
        if (cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemHigh, &high) == cudaSuccess &&
            cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used) ==
                cudaSuccess)
            pool_high = std::max<uint64_t>(high, used);
        (void)cudaGetLastError();
    }
    t.peak_device_bytes = std::max<uint64_t>(t.peak_device_bytes, held + pool_high);
    if (std::getenv("CP_TRACE_MEMORY"))
        std::fprintf(stderr,
                     "cp memory recorded: held %.1f + pool high %.1f = %.1f MiB, estimated "
                     "%.1f MiB\n",
                     held / 1048576.0, pool_high / 1048576.0,
                     (held + pool_high) / 1048576.0, estimated / 1048576.0);
    t.estimated_device_bytes = std::max<uint64_t>(t.estimated_device_bytes, estimated);
}

}  // namespace cuda_dev
}  // namespace cp
