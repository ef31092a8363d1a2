// Host to device copies through a ring of pinned buffers on a copy stream:
// the host threads of the gpu's pool fill one buffer while the copy stream
// drains the others.
#pragma once

#include <cstddef>

#include "device/raii.hpp"

namespace cp {
namespace cuda_dev {

// Buffers of 16 MiB, pieces of 1 MiB per host thread. Measured on an H200
// host (16 threads; `cuda_selftest stage`, tests/results/h200-stage.txt),
// 83 MB from pageable memory: 2.71 ms (30.7 GB/s), against 2.85 with 8 MiB
// and 512 KiB, 6.07 with 2 MiB and 256 KiB, 10.0 by cudaMemcpy from the
// pageable buffer; one DMA from pinned memory alone 1.51 ms (55 GB/s).
constexpr size_t STAGE_CHUNK = 16 * MiB;
constexpr int STAGE_BUFS = 4;
constexpr size_t STAGE_PIECE = 1024 * 1024;  // per host thread

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
    // Measurements only: the size of each pinned buffer and of a host
    // thread's piece of it (0 keeps the default); takes effect at the next
    // ensure (the ring is released).
    void tune(size_t chunk, size_t piece);

private:
    size_t chunk_ = STAGE_CHUNK, piece_ = STAGE_PIECE;
    cuda_stream copy_;
    pinned_buffer bufs_[STAGE_BUFS];
    cuda_event evs_[STAGE_BUFS];
    unsigned next_ = 0;
};

}  // namespace cuda_dev
}  // namespace cp
