// A circuit shape resident on one device (one per device, freed by trim):
// the CSR offsets and entries of A, B and C, the general coefficients, then
// the density bitmaps and their word prefixes in the working cache's order
// (A aux, B inputs, B aux); and the evaluation of a, b, c from a witness.
#pragma once

#include <cstddef>
#include <cstdint>

#include "backend.hpp"
#include "device/budget.hpp"
#include "device/raii.hpp"
#include "device/working_cache.hpp"

namespace cp {
namespace cuda_dev {

struct shape_sizes {
    size_t row_ptr, entries[3], coeffs, bits, pre, total;
};

struct shape_copy {
    uint64_t id = 0;  // shape::id; 0 when none is resident
    device_buffer buf;
    const uint64_t *row_ptr[3] = {};
    const cp_cuda::shape_entry_raw *entries[3] = {};
    const cp_cuda::fr_raw *coeffs = nullptr;
    const uint64_t *bits = nullptr;
    const uint32_t *pre = nullptr;

    uint64_t bytes() const { return buf.size(); }
    void clear();

    // Device bytes that placing `sh` would add.
    size_t need(const shape *sh) const;

    // Makes `sh` the resident shape, replacing another; `extra_needed` is
    // what the caller still has to allocate after it. Uploads on `stream`.
    void ensure(const shape &sh, int cuda_id, const memory_budget &budget, size_t extra_needed,
                cudaStream_t stream);

    // a, b, c of this shape from the witness already on the device (inputs
    // and aux at their cache places), then the row check into bad.
    // Asynchronous on the gpu's default stream.
    void evaluate(const gpu_t &gpu, const shape &sh, char *cache, const cache_layout &L) const;

private:
    // Uploads `sh` into `b` and points the members into it.
    void place(const shape &sh, device_buffer &b, const shape_sizes &z, cudaStream_t stream);
};

// Host: pre[w] = set bits of bits[0..w), for the words holding n bits.
void word_prefix(uint32_t *pre, const uint64_t *bits, size_t n);

}  // namespace cuda_dev
}  // namespace cp
