// A proving key's point arrays resident on one device: their layout in one
// device allocation and the upload on first use (kept in proving_key::copies, by
// CUDA ordinal, until the key is freed or trimmed), and each array's table
// of multiples (msm_build_table: about 13 times the array at 2^20 bases),
// built on demand: after a proof whose MSM over that array would have run
// over a table (msm_context::wants_table), where memory allows. Its MSMs
// then run with fewer, wider windows.
#pragma once

#include <atomic>
#include <cstddef>

#include "backend.hpp"
#include "device/budget.hpp"
#include "device/raii.hpp"

namespace cp {
namespace cuda_dev {

struct key_sizes {
    size_t h, l, a, b_g1, b_g2, total;
};

// H and L are adjacent (no padding between them) so that one MSM covers
// both: h + l enter the proof only through their sum.
key_sizes key_layout(const proving_key &key);

// The key's arrays as its MSMs see them (h and l as one).
enum key_array : int { key_hl, key_a, key_b_g1, key_b_g2, key_arrays };

// A table of multiples of one array: rows w < msm_table_windows(wbits) of
// 2^(w wbits) times its bases, row 0 a copy of them.
struct key_table {
    device_buffer buf;
    uint32_t wbits = 0;  // 0: none
    bool tried = false;  // built or found not to fit: not tried again
};

// The proving key's point arrays in one device allocation, and their
// tables. The tables change only with the device's mutex held, and each
// device has its own copy.
struct key_copy final : key_device_copy {
    device_buffer buf;
    const void *h = nullptr, *l = nullptr, *a = nullptr, *b_g1 = nullptr, *b_g2 = nullptr;
    size_t n[key_arrays] = {};  // bases per array
    mutable key_table tables[key_arrays];
    mutable std::atomic<uint64_t> table_bytes{0};

    const void *bases(key_array k) const {
        const void *const p[key_arrays] = {h, a, b_g1, b_g2};
        return p[k];
    }
    bool has_tables() const {
        for (const auto &t : tables)
            if (t.wbits)
                return true;
        return false;
    }
    uint64_t bytes() const override { return buf.size() + table_bytes.load(); }
};

// The key's copy on `cuda_id`, or NULL when none is resident.
const key_copy *resident_key(const proving_key &key, int cuda_id);

// The key's copy on `cuda_id` (the thread is bound), uploaded on `stream`
// when none is resident yet: the key and `extra_needed` more bytes must fit
// the budget. A first upload adds to t.upload_ns and `uploads`.
const key_copy &ensure_key(const proving_key &key, int cuda_id, const memory_budget &budget,
                           size_t extra_needed, cudaStream_t stream, cp_timings &t,
                           std::atomic<uint64_t> &uploads);

// Whether build_key_table may still build array k's table: not tried
// before and at least 1024 bases.
bool may_build_table(const key_copy &copy, key_array k);

// Builds the table of array k of `copy` on `stream` (the thread is bound,
// the device's mutex held) unless it was tried before, the array has fewer
// than 1024 bases, or the table needs more than `room` bytes. Synchronous;
// adds its time to t.upload_ns. Returns the table's bytes (0: none built).
uint64_t build_key_table(const key_copy &copy, key_array k, int cuda_id, uint64_t room,
                         cudaStream_t stream, cp_timings &t);

}  // namespace cuda_dev
}  // namespace cp
