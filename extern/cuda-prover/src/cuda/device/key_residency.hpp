// A proving key's point arrays resident on one device: their layout in one
// device allocation and the upload on first use (kept in srs::copies, by
// CUDA ordinal, until the key is freed or trimmed).
#pragma once

#include <atomic>
#include <cstddef>

#include "backend.hpp"
#include "device/budget.hpp"
#include "device/raii.hpp"

namespace cp {
namespace cuda_dev {

struct srs_sizes {
    size_t h, l, a, b_g1, b_g2, total;
};

// H and L are adjacent (no padding between them) so that one MSM covers
// both: h + l enter the proof only through their sum.
srs_sizes srs_layout(const srs &key);

// The proving key's point arrays in one device allocation.
struct srs_copy final : srs_device_copy {
    device_buffer buf;
    const void *h = nullptr, *l = nullptr, *a = nullptr, *b_g1 = nullptr, *b_g2 = nullptr;

    uint64_t bytes() const override { return buf.size(); }
};

// The key's copy on `cuda_id`, or NULL when none is resident.
const srs_copy *resident_key(const srs &key, int cuda_id);

// The key's copy on `cuda_id` (the thread is bound), uploaded on `stream`
// when none is resident yet: the key and `extra_needed` more bytes must fit
// the budget. A first upload adds to t.upload_ns and `uploads`.
const srs_copy &ensure_key(const srs &key, int cuda_id, const memory_budget &budget,
                           size_t extra_needed, cudaStream_t stream, cp_timings &t,
                           std::atomic<uint64_t> &uploads);

}  // namespace cuda_dev
}  // namespace cp
