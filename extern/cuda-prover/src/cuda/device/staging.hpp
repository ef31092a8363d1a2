// Host to device copies through a ring of pinned buffers on a copy stream:
// the host threads of the gpu's pool fill one buffer while the copy stream
// drains the others.
#pragma once

#include <cstddef>

#include "device/raii.hpp"

namespace cp {
namespace cuda_dev {

constexpr size_t STAGE_CHUNK = 8 * MiB;
constexpr int STAGE_BUFS = 4;
constexpr size_t STAGE_PIECE = 512 * 1024;  // per host thread

class stager {
public:
    // The copy stream, the ring and its events; the thread is bound.
    void ensure();
    // Waits for the ring and frees it (the copy stream stays).
    void release();
    // Queues a host to device copy of `bytes` on the copy stream, filling
    // the pinned buffers with the threads of `gpu`'s pool. `src` may be
    // reused once this returns.
    void stage(const gpu_t &gpu, void *dst, const void *src, size_t bytes);
    cudaStream_t stream() const { return copy_.get(); }
    bool holds_anything() const;

private:
    cuda_stream copy_;
    pinned_buffer bufs_[STAGE_BUFS];
    cuda_event evs_[STAGE_BUFS];
    unsigned next_ = 0;
};

}  // namespace cuda_dev
}  // namespace cp
