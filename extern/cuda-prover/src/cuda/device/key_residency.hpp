// A proving key's point arrays resident on one device: their layout in one
// device allocation and the upload on first use (kept in srs::copies, by
// CUDA ordinal, until the key is freed or trimmed). Where memory allows, each
// array comes with its table of multiples (msm_build_table: about 13 times
// the array at 2^20 bases), so its MSMs run with fewer, wider windows.
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
    // Table widths (msm_table_window_bits), 0 where an array has no table.
    uint32_t hl_wbits = 0, a_wbits = 0, b_wbits = 0;
};

// H and L are adjacent (no padding between them) so that one MSM covers
// both: h + l enter the proof only through their sum. With tables, each
// array (h + l as one) is the first row of its table and l's slot runs to
// the end of the h + l table.
srs_sizes srs_layout(const srs &key, bool tables = false);

// The proving key's point arrays in one device allocation.
struct srs_copy final : srs_device_copy {
    device_buffer buf;
    const void *h = nullptr, *l = nullptr, *a = nullptr, *b_g1 = nullptr, *b_g2 = nullptr;
    // The widths of the tables h (with l), a, and b_g1 and b_g2 start;
    // 0: no table.
    uint32_t hl_wbits = 0, a_wbits = 0, b_wbits = 0;
    bool tables() const { return hl_wbits || a_wbits || b_wbits; }

    uint64_t bytes() const override { return buf.size(); }
};

// The key's copy on `cuda_id`, or NULL when none is resident.
const srs_copy *resident_key(const srs &key, int cuda_id);

// The key's copy on `cuda_id` (the thread is bound), uploaded on `stream`
// when none is resident yet: the key and `extra_needed` more bytes must fit
// the budget. With `tables`, the copy has tables when they and
// `extra_tables` more bytes fit too (the tables are built on the device).
// A first upload (and its tables) adds to t.upload_ns and `uploads`.
const srs_copy &ensure_key(const srs &key, int cuda_id, const memory_budget &budget,
                           size_t extra_needed, bool tables, size_t extra_tables,
                           cudaStream_t stream, cp_timings &t, std::atomic<uint64_t> &uploads);

}  // namespace cuda_dev
}  // namespace cp
