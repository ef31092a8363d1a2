// msm_engine's buckets into sums (msm_engine.cuh's class, its member
// definitions): Pippenger's rows of buckets integrated by sppark's
// integrate into the pairs accumulator (integrate_rows; the carried set,
// integrate_carried), bucket-wise additions (add_buckets: the ones'
// partial sums, a batch's buckets into the carried set), and a table
// run's bucket set weighed into one sum (weigh_buckets, weigh_tail_bits;
// the kernels are msm_weigh.cuh's). Included by msm_engine.cuh, after the
// class.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>

#include <cuda_runtime.h>

#include "msm_engine.cuh"

namespace cp_cuda {
namespace msm_detail {

// The carried bucket set (carried_: its windows and width) integrated
// into the pairs accumulator; the set is free again.
template<class bucket_t, class affine_t, class scalar_t>
inline void msm_engine<bucket_t, affine_t, scalar_t>::integrate_carried(cudaStream_t s) {
    integrate_rows(s, (bucket_h *)(base_ + L_.carried), carried_ & 0xffff, carried_ >> 16);
    carried_ = 0;
}

// nwins rows of 2^(wbits-1) buckets integrated (sppark's integrate,
// in place), the pairs it leaves in each row added to the pairs
// accumulator (what earlier integrations left).
template<class bucket_t, class affine_t, class scalar_t>
inline void msm_engine<bucket_t, affine_t, scalar_t>::integrate_rows(
    cudaStream_t s, bucket_h *set, uint32_t nwins, uint32_t wbits) {
    const uint32_t row = 1u << (wbits - 1);
    integrate<bucket_t><<<nwins, MSM_NTHREADS, sizeof(bucket_t) * NT, s>>>(
        set, nwins, wbits, FR_BITS);
    cuda_ok(cudaGetLastError(), "integrate");
    msm_add_rows<bucket_t><<<dim3((2 * NT * bucket_t::degree + 255) / 256, nwins), 256, 0,
                             s>>>((bucket_h *)(base_ + L_.pairs), L_.pair_stride, set, row,
                                  (uint32_t)(2 * NT));
    cuda_ok(cudaGetLastError(), "add (pairs)");
}

// dst[i] += src[i], i < count (one bucket per thread, at most
// 2048 threads per SM, each then taking several): the batch additions'
// partial sums into ones_acc, a batch's buckets into the carried set.
template<class bucket_t, class affine_t, class scalar_t>
inline void msm_engine<bucket_t, affine_t, scalar_t>::add_buckets(
    cudaStream_t s, bucket_h *dst, const bucket_h *src, size_t count) {
    const size_t threads = std::min<size_t>(count, (size_t)sm_count_ * 2048);
    msm_add_rows<bucket_t><<<dim3((uint32_t)((threads * bucket_t::degree + 255) / 256), 1),
                             256, 0, s>>>(dst, 0, src, 0, (uint32_t)count);
    cuda_ok(cudaGetLastError(), "add (buckets)");
}

// wsum[0] = sum_j (j + 1) buckets[j], j < m (msm_weigh.cuh): the first
// level from the buckets into temps, then levels of two between temps
// and the buckets (free by then), the last one into wsum[0].
template<class bucket_t, class affine_t, class scalar_t>
inline void msm_engine<bucket_t, affine_t, scalar_t>::weigh_buckets(
    cudaStream_t s, bucket_h *buckets, size_t m) {
    const uint32_t degree = bucket_t::degree;
    char *temps = base_ + L_.temps;
    const bucket_h *x = buckets, *u = nullptr;
    bucket_h *wsum = (bucket_h *)(base_ + L_.wsum);
    uint32_t sbits = weigh_sbits();
    bool top = true, into_temps = true;
    for (;;) {
        const size_t segs = weigh_segments(m, sbits);
        bucket_h *a_out, *p_out;
        if (segs == 1) {
            a_out = p_out = wsum;
        } else if (into_temps) {
            a_out = (bucket_h *)temps;
            p_out = (bucket_h *)(temps + align256(segs * sizeof(bucket_h)));
        } else {
            a_out = buckets;
            p_out = buckets + segs;
        }
        const uint32_t blocks =
            (uint32_t)((segs * degree + WEIGH_THREADS - 1) / WEIGH_THREADS);
        msm_weigh_level<bucket_t><<<blocks, WEIGH_THREADS, 0, s>>>(x, u, (uint32_t)m, sbits,
                                                                  top, a_out, p_out);
        cuda_ok(cudaGetLastError(), "weighted sum");
        if (segs == 1)
            return;
        // After the top level, its outputs are in temps and the buckets
        // are free: the tail by bits there, unless tuned to levels.
        if (top && weigh_tail() && weigh_tail_fits(segs)) {
            weigh_tail_bits(s, a_out, p_out, (uint32_t)segs, buckets, wsum);
            return;
        }
        x = a_out;
        u = p_out;
        m = segs;
        sbits = WEIGH_SBITS;
        top = false;
        into_temps = !into_temps;
    }
}

// Entries of the tail's scratch for m points: the first sums and the
// trees' first level, side by side.
template<class bucket_t, class affine_t, class scalar_t>
inline size_t msm_engine<bucket_t, affine_t, scalar_t>::weigh_tail_entries(size_t m) {
    const uint32_t bits = lg2_ceil(m);
    const size_t first = (bits + 1) * weigh_segments(m, WEIGH_TAIL_CBITS);
    return first + weigh_segments(first, WEIGH_TAIL_FBITS) + bits + 1;
}

// wsum[0] = sum_t t x[t] + sum_t u[t], t < m (m >= 2), by the bits of t
// (msm_weigh_bits, then msm_weigh_sum's trees and msm_weigh_scale), in
// scratch (weigh_tail_entries(m) buckets).
template<class bucket_t, class affine_t, class scalar_t>
inline void msm_engine<bucket_t, affine_t, scalar_t>::weigh_tail_bits(
    cudaStream_t s, const bucket_h *x, const bucket_h *u, uint32_t m, bucket_h *scratch,
    bucket_h *wsum) {
    const uint32_t degree = bucket_t::degree;
    auto blocks = [&](size_t threads) {
        return (uint32_t)((threads * degree + WEIGH_THREADS - 1) / WEIGH_THREADS);
    };
    const uint32_t bits = lg2_ceil(m);
    const uint32_t rows = bits + 1;
    uint32_t n = (uint32_t)weigh_segments(m, WEIGH_TAIL_CBITS);
    bucket_h *a = scratch, *b = scratch + (size_t)rows * n;
    msm_weigh_bits<bucket_t><<<blocks((size_t)rows * n), WEIGH_THREADS, 0, s>>>(
        x, u, m, bits, WEIGH_TAIL_CBITS, a);
    cuda_ok(cudaGetLastError(), "weighted sum (bits)");
    // Each row to one entry; a row of the result then sits at a[r].
    while (n > 1) {
        const uint32_t n_out = (uint32_t)weigh_segments(n, WEIGH_TAIL_FBITS);
        msm_weigh_sum<bucket_t><<<blocks((size_t)rows * n_out), WEIGH_THREADS, 0, s>>>(
            a, n, rows, WEIGH_TAIL_FBITS, b);
        cuda_ok(cudaGetLastError(), "weighted sum (trees)");
        std::swap(a, b);
        n = n_out;
    }
    msm_weigh_scale<bucket_t><<<blocks(bits), WEIGH_THREADS, 0, s>>>(a, bits);
    cuda_ok(cudaGetLastError(), "weighted sum (doublings)");
    // The rows' sums as one row of `rows` entries, the last level into
    // wsum[0].
    n = rows;
    while (n > 1) {
        const uint32_t n_out = (uint32_t)weigh_segments(n, WEIGH_TAIL_FBITS);
        bucket_h *dst = n_out == 1 ? wsum : b;
        msm_weigh_sum<bucket_t><<<blocks(n_out), WEIGH_THREADS, 0, s>>>(
            a, n, 1, WEIGH_TAIL_FBITS, dst);
        cuda_ok(cudaGetLastError(), "weighted sum (trees)");
        std::swap(a, b);
        n = n_out;
    }
}

}  // namespace msm_detail
}  // namespace cp_cuda
