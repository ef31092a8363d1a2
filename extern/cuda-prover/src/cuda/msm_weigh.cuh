// The weighted sum of a table run's one bucket set, R = sum_j (j + 1) B_j
// over its 2^(wbits-1) buckets (bucket j holds digit j + 1), in levels
// that each shrink the set by a factor S = 2^sbits. A level takes X (the
// points to weigh by their index) and U (points of weight 1) and cuts them
// into segments t of S; with a_t = sum_k X_{tS+k} and p_t = sum_k k
// X_{tS+k} + sum_k U_{tS+k} (k < S),
//   sum_j j X_j + sum_j U_j = sum_t t (S a_t) + sum_t p_t,
// the same form over X' = S a (sbits doublings) and U' = p, S times
// shorter. The top level has no U and weighs k + 1 (U = X). One thread
// per segment sums it by running sums from its top (2 S additions); the
// level whose set fits one segment writes p_0, which is R.
//
// This replaces sppark's integrate over 128 rows of the set plus a finish
// that multiplied each thread's segment sum by its offset (about 19
// doublings each) in as many blocks, one block per SM each. The first
// level here spreads the bulk of the work (about 2 additions per bucket)
// over 2^19 / S threads; the later levels are small and shallow (S = 2:
// three additions and a doubling per level), so their time is latency
// (about 17 us per dependent addition in G1) that other streams' work
// fills (Nsight Compute at 2^19 G1 buckets: the first level 0.74 ms with
// the FMA-heavy pipe 69% busy, each later level 120-130 us with it under
// 24%; tests/results/h200-ncu-weigh-2e20.txt). Alone, a 2^20 MSM's
// integration and finish took 1.6 ms in G1 and 3.8 in G2, the weighted
// sum 2.0 and 3.9; the four MSMs of a proof at once took 2-3 ms less
// (H200, tests/results/h200-msm-tune-2e20.txt). After the top level the
// engine now weighs the rest by the bits of the weights instead
// (msm_weigh_bits below; the levels remain as msm_tuning::weigh_tail 0):
// alone 0.2 ms less per 2^20 MSM (G1 9.16 -> 8.93 ms, H + L 15.95 ->
// 15.74, G2 22.42 -> 22.19), the four of a proof at once unchanged (46.58
// and 46.68 ms): there the other streams' work already filled the levels'
// latency (h200-msm-tune-2e20-tail.txt).
// Included by msm_engine.cuh after msm_kernels.cuh (dbl_inplace).
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

namespace cp_cuda {
namespace msm_detail {

constexpr uint32_t WEIGH_THREADS = 256;
// Segment widths (log2): the first level's, 16 buckets in G1 and 32 in G2
// (degree 2), and the later levels'. Measured on an H200 at 2^19 buckets
// (ms, G1 / G2 alone): first segments of 4: 2.52 / 5.65, 8: 2.17 / 4.69,
// 16: 1.96 / 4.12, 32: 2.46 / 3.86; later segments of 4 instead of 2: 2.22
// / 4.57 (after 16).
inline uint32_t weigh_top_sbits(uint32_t degree) { return 3 + degree; }
constexpr uint32_t WEIGH_SBITS = 1;

// Segments of a level over m points.
inline size_t weigh_segments(size_t m, uint32_t sbits) {
    return (m + (size_t(1) << sbits) - 1) >> sbits;
}

// One level over m points: x[0..m) (and u[0..m) unless top), into a_out[t]
// = S a_t and p_out[t] = p_t for each segment t; where m <= S (one
// segment) only p_out[0] is written, and it is R. degree lanes per point.
template<class bucket_t, class bucket_h = typename bucket_t::mem_t>
__launch_bounds__(WEIGH_THREADS) __global__
void msm_weigh_level(const bucket_h x[], const bucket_h u[], uint32_t m, uint32_t sbits,
                     bool top, bucket_h a_out[], bucket_h p_out[]) {
    const uint32_t degree = bucket_t::degree;
    const uint32_t t = (blockIdx.x * blockDim.x + threadIdx.x) / degree;
    const uint32_t S = 1u << sbits;
    const uint32_t segments = (m + S - 1) >> sbits;
    if (t >= segments)
        return;
    const uint32_t lo = t << sbits;
    const uint32_t hi = min(lo + S, m);
    bucket_t run, acc;
    run.inf();
    acc.inf();
    // Downwards from the segment's top: after adding X_k to run, run holds
    // X_k + ... + X_{hi-1}; adding run to acc at k >= 1 (top: k >= 0) gives
    // each X_k weight k (k + 1).
    #pragma unroll 1
    for (uint32_t i = hi; i-- > lo;) {
        bucket_t xi = x[i];
        run.add(xi);
        if (top || i > lo)
            acc.add(run);
        if (!top) {
            bucket_t ui = u[i];
            acc.add(ui);
        }
    }
    p_out[t] = acc;
    if (segments == 1)
        return;
    #pragma unroll 1
    for (uint32_t b = 0; b < sbits; b++)
        dbl_inplace(run);
    a_out[t] = run;
}

// The tail after the top level, by the bits of the weights. With m points
// X and U (the top level's S a and p) and B bits for t < m,
//   sum_t t X_t + sum_t U_t = sum_{c<B} 2^c Y_c + Z,
// Y_c = sum of the X_t whose t has bit c, Z = sum_t U_t: B + 1 sums that
// are independent of one another, each a tree, then c doublings of Y_c and
// one more tree. The levels of 2 above take about 6 dependent additions per
// bit of m (15 at 2^15 points), this about 3 (a chunk of 2^WEIGH_TAIL_CBITS,
// the trees by 4, at most B - 1 doublings).
constexpr uint32_t WEIGH_TAIL_CBITS = 3;  // points per thread in the first sums
constexpr uint32_t WEIGH_TAIL_FBITS = 2;  // entries per thread in the trees

// Row c < bits of out, entry k (out[c chunks + k]): the X_t with bit c of t
// among t in [k C, (k + 1) C); row bits: the U_t there (chunks = m / C
// rounded up, C = 2^cbits).
template<class bucket_t, class bucket_h = typename bucket_t::mem_t>
__launch_bounds__(WEIGH_THREADS) __global__
void msm_weigh_bits(const bucket_h x[], const bucket_h u[], uint32_t m, uint32_t bits,
                    uint32_t cbits, bucket_h out[]) {
    const uint32_t degree = bucket_t::degree;
    const uint32_t idx = (blockIdx.x * blockDim.x + threadIdx.x) / degree;
    const uint32_t chunks = (m + (1u << cbits) - 1) >> cbits;
    if (idx >= (bits + 1) * chunks)
        return;
    const uint32_t c = idx / chunks;
    const uint32_t lo = (idx % chunks) << cbits;
    const uint32_t hi = min(lo + (1u << cbits), m);
    bucket_t acc;
    acc.inf();
    #pragma unroll 1
    for (uint32_t i = lo; i < hi; i++) {
        if (c == bits) {
            bucket_t ui = u[i];
            acc.add(ui);
        } else if ((i >> c) & 1) {
            bucket_t xi = x[i];
            acc.add(xi);
        }
    }
    out[idx] = acc;
}

// out[r n_out + j] = sum of in[r n + j F + k], k < F (F = 2^fbits, within
// the row's n entries), for rows r < rows; n_out = n / F rounded up.
template<class bucket_t, class bucket_h = typename bucket_t::mem_t>
__launch_bounds__(WEIGH_THREADS) __global__
void msm_weigh_sum(const bucket_h in[], uint32_t n, uint32_t rows, uint32_t fbits,
                   bucket_h out[]) {
    const uint32_t degree = bucket_t::degree;
    const uint32_t idx = (blockIdx.x * blockDim.x + threadIdx.x) / degree;
    const uint32_t n_out = (n + (1u << fbits) - 1) >> fbits;
    if (idx >= rows * n_out)
        return;
    const uint32_t r = idx / n_out;
    const uint32_t lo = (idx % n_out) << fbits;
    const uint32_t hi = min(lo + (1u << fbits), n);
    bucket_t acc = in[r * n + lo];
    #pragma unroll 1
    for (uint32_t i = lo + 1; i < hi; i++) {
        bucket_t e = in[r * n + i];
        acc.add(e);
    }
    out[idx] = acc;
}

// y[c] = 2^c y[c] for c < bits (y[bits], Z, keeps weight 1).
template<class bucket_t, class bucket_h = typename bucket_t::mem_t>
__launch_bounds__(WEIGH_THREADS) __global__
void msm_weigh_scale(bucket_h y[], uint32_t bits) {
    const uint32_t degree = bucket_t::degree;
    const uint32_t c = (blockIdx.x * blockDim.x + threadIdx.x) / degree;
    if (c >= bits)
        return;
    bucket_t p = y[c];
    #pragma unroll 1
    for (uint32_t b = 0; b < c; b++)
        dbl_inplace(p);
    y[c] = p;
}

}  // namespace msm_detail
}  // namespace cp_cuda
