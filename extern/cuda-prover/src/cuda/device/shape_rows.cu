// The shape's rows streamed through a phased pass (shape_rows.hpp).
#include "device/shape_rows.hpp"

#include <algorithm>
#include <cstdlib>

#include "device/errors.hpp"
#include "device/raii.hpp"

namespace cp {
namespace cuda_dev {

using cp_cuda::fr_raw;
using cp_cuda::shape_entry_raw;

static_assert(sizeof(shape_entry_raw) == sizeof(cp_shape_entry), "shape entry layout");

static size_t coeff_bytes(const shape &sh) { return align256(sh.coeffs.size() * sizeof(fr_raw)); }

size_t shape_rows_buffer_need(const shape &sh) {
    const uint64_t longest = std::max({sh.a.longest_row, sh.b.longest_row, sh.c.longest_row});
    const size_t one_row = coeff_bytes(sh) + align256(2 * sizeof(uint64_t)) +
                           (size_t)longest * sizeof(cp_shape_entry);
    size_t least = SHAPE_ROWS_MIN_BUFFER;
    if (const char *v = std::getenv("CP_SHAPE_ROWS_MIN_BUFFER"))
        least = (size_t)std::strtoull(v, nullptr, 10);
    return std::max(least, one_row);
}

void evaluate_shape_rows(const gpu_t &gpu, stager &staging, const shape &sh, char *const bufs[2],
                         size_t buffer_bytes, fr_raw *const out[3], const fr_raw *d_in,
                         const fr_raw *d_aux, uint64_t *d_bad) {
    if (buffer_bytes < shape_rows_buffer_need(sh))
        fail(CP_ERR_INTERNAL, "the chunk buffers are smaller than the shape's longest row");
    const cudaStream_t zs = gpu;
    const cudaStream_t copy = staging.stream();
    const size_t rows = sh.num_constraints;
    const size_t cb = coeff_bytes(sh);
    const size_t room = buffer_bytes - cb;
    cuda_event up[2], done[2];
    for (int b = 0; b < 2; b++) {
        up[b].create();
        done[b].create();
        if (!sh.coeffs.empty())
            staging.stage(gpu, bufs[b], sh.coeffs.data(), sh.coeffs.size() * sizeof(fr_raw));
    }
    const shape_matrix *mats[3] = {&sh.a, &sh.b, &sh.c};
    size_t slice = 0;
    for (int k = 0; k < 3; k++) {
        const uint64_t *rp = mats[k]->row_ptr.data();
        const cp_shape_entry *entries = mats[k]->entries.data();
        // Bytes of the slice of rows [r0, r1) in a buffer past the coefficients.
        auto bytes = [&](size_t r0, size_t r1) {
            return align256((r1 - r0 + 1) * sizeof(uint64_t)) +
                   (size_t)(rp[r1] - rp[r0]) * sizeof(cp_shape_entry);
        };
        for (size_t r0 = 0; r0 < rows;) {
            // The most rows that fit (one always does: shape_rows_buffer_need).
            size_t lo = r0 + 1, hi = rows;
            while (lo < hi) {
                const size_t mid = lo + (hi - lo + 1) / 2;
                if (bytes(r0, mid) <= room)
                    lo = mid;
                else
                    hi = mid - 1;
            }
            const size_t r1 = lo;
            const int b = (int)(slice % 2);
            // The buffer's last slice is evaluated before its next copy.
            if (slice >= 2)
                cuda_check(cudaStreamWaitEvent(copy, done[b].get(), 0), "cudaStreamWaitEvent");
            char *at = bufs[b] + cb;
            uint64_t *d_rp = (uint64_t *)at;
            shape_entry_raw *d_e =
                (shape_entry_raw *)(at + align256((r1 - r0 + 1) * sizeof(uint64_t)));
            staging.stage(gpu, d_rp, rp + r0, (r1 - r0 + 1) * sizeof(uint64_t));
            if (rp[r1] > rp[r0])
                staging.stage(gpu, d_e, entries + rp[r0],
                              (size_t)(rp[r1] - rp[r0]) * sizeof(cp_shape_entry));
            cuda_check(cudaEventRecord(up[b].get(), copy), "cudaEventRecord");
            cuda_check(cudaStreamWaitEvent(zs, up[b].get(), 0), "cudaStreamWaitEvent");
            cp_cuda::eval_rows_async(gpu, out[k] + r0, d_rp, d_e, (const fr_raw *)bufs[b], d_in,
                                     (uint32_t)sh.num_inputs, d_aux, r1 - r0, rp[r0]);
            cuda_check(cudaEventRecord(done[b].get(), zs), "cudaEventRecord");
            slice++;
            r0 = r1;
        }
    }
    cp_cuda::check_rows_async(gpu, out[0], out[1], out[2], rows, d_bad);
    for (int b = 0; b < 2; b++)
        cuda_check(cudaEventSynchronize(done[b].get()), "evaluation of the shape's rows");
}

}  // namespace cuda_dev
}  // namespace cp
