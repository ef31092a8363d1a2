// msm_engine's runs without a table (msm_engine.cuh's class, its member
// definitions): run (Pippenger over all n points), classify and run_split
// (the 0/1 split: the 1s by batch addition, the rest gathered and run
// through Pippenger), run_split_after (the split past a dense head), and
// what every run does: clear the accumulators, add the ones' partial
// sums, finish the window sums into wsum, mark the profile's phases.
// Included by msm_engine.cuh, after the class.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

#include <cuda_runtime.h>

#include "msm_engine.cuh"

namespace cp_cuda {
namespace msm_detail {

template<class bucket_t, class affine_t, class scalar_t>
inline uint32_t msm_engine<bucket_t, affine_t, scalar_t>::run(
    cudaStream_t s, const affine_h *points, const scalar_t *scalars, size_t n) {
    if (n > n_max_)
        throw cuda_error{-(int)cudaErrorInvalidValue,
                         std::string("cuda-prover MSM: more points than the engine holds")};
    clear(s);
    begin(s);
    const uint32_t nw = pippenger(s, points, scalars, n);
    finish(s, nw);
    mark(s, msm_phase_finish);
    return nw;
}

template<class bucket_t, class affine_t, class scalar_t>
inline void msm_engine<bucket_t, affine_t, scalar_t>::classify(
    cudaStream_t s, const affine_h *points, const scalar_t *scalars, size_t n,
    uint32_t *host_counts, bool gather) {
    if (n > n_max_ || n >= (size_t(1) << 31))
        throw cuda_error{-(int)cudaErrorInvalidValue,
                         std::string("cuda-prover MSM: more points than the engine holds")};
    uint32_t *counts = (uint32_t *)(base_ + L_.counts);
    begin(s);
    cuda_ok(cudaMemsetAsync(counts, 0, COUNTS * sizeof(uint32_t), s), "cudaMemsetAsync");
    if (n) {
        const size_t padded = round_up(n, 1024);
        const uint32_t blocks = (uint32_t)std::min<size_t>(
            padded / CLASSIFY_THREADS, (size_t)sm_count_ * 8);
        msm_classify<affine_h, scalar_t><<<blocks, CLASSIFY_THREADS, 0, s>>>(
            scalars, points, (uint32_t)n, (uint32_t *)(base_ + L_.bitmap), counts,
            (scalar_t *)(base_ + L_.tail_s), (affine_h *)(base_ + L_.tail_p),
            gather ? (uint32_t)L_.tail_cap : 0u);
        cuda_ok(cudaGetLastError(), "classify");
    }
    cuda_ok(cudaMemcpyAsync(host_counts, counts, COUNTS * sizeof(uint32_t),
                            cudaMemcpyDeviceToHost, s),
            "copy of the scalar counts");
    mark(s, msm_phase_classify);
}

template<class bucket_t, class affine_t, class scalar_t>
inline uint32_t msm_engine<bucket_t, affine_t, scalar_t>::run_split(
    cudaStream_t s, const affine_h *points, const scalar_t *scalars, size_t n, uint32_t ones,
    uint32_t rest) {
    if (rest > L_.tail_cap)
        return run(s, points, scalars, n);
    clear(s);
    begin(s);
    add_ones_of(s, points, n, ones);
    uint32_t nw = 0;
    if (rest)
        nw = pippenger(s, (const affine_h *)(base_ + L_.tail_p),
                       (const scalar_t *)(base_ + L_.tail_s), rest);
    finish(s, nw);
    mark(s, msm_phase_finish);
    return nw;
}

template<class bucket_t, class affine_t, class scalar_t>
inline uint32_t msm_engine<bucket_t, affine_t, scalar_t>::run_split_after(
    cudaStream_t s, const affine_h *points, const scalar_t *scalars, size_t n, size_t dense,
    uint32_t ones, uint32_t rest) {
    if (dense == 0)
        return run_split(s, points, scalars, n, ones, rest);
    if (dense >= n || rest > L_.tail_cap)
        return run(s, points, scalars, n);
    clear(s);
    begin(s);
    add_ones_of(s, points + dense, n - dense, ones);
    const uint32_t nw = pippenger(s, points, scalars, dense);
    if (rest)
        pippenger(s, (const affine_h *)(base_ + L_.tail_p),
                  (const scalar_t *)(base_ + L_.tail_s), rest, nw >> 16);
    finish(s, nw);
    mark(s, msm_phase_finish);
    return nw;
}

// Zeroes (xyzz infinity) what the batches of one MSM add up.
template<class bucket_t, class affine_t, class scalar_t>
inline void msm_engine<bucket_t, affine_t, scalar_t>::clear(cudaStream_t s) {
    carried_ = 0;
    cuda_ok(cudaMemsetAsync(base_ + L_.wsum, 0, WSUM_SLOTS * sizeof(bucket_h), s),
            "cudaMemsetAsync");
    cuda_ok(cudaMemsetAsync(base_ + L_.ones_acc, 0, L_.nones * sizeof(bucket_h), s),
            "cudaMemsetAsync");
    cuda_ok(cudaMemsetAsync(base_ + L_.pairs, 0,
                            window_count(10) * L_.pair_stride * sizeof(bucket_h), s),
            "cudaMemsetAsync");
}

// ones_acc += the sum of the n points whose bit is set in the bitmap
// (classify's 1s), by batch addition; marks the ones phase.
template<class bucket_t, class affine_t, class scalar_t>
inline void msm_engine<bucket_t, affine_t, scalar_t>::add_ones_of(
    cudaStream_t s, const affine_h *points, size_t n, uint32_t ones) {
    if (ones) {
        bucket_h *d_ones = (bucket_h *)(base_ + L_.ones);
        void (*add)(bucket_h *, const affine_h *, uint32_t, const uint32_t *, bool,
                    uint32_t) = batch_addition<bucket_t, affine_h>;
        launch_coop(s, add, dim3(sm_count_), dim3(BATCH_ADD_BLOCK_SIZE), 0, d_ones, points,
                    (uint32_t)n, (const uint32_t *)(base_ + L_.bitmap), false, sid_);
        add_ones(s);
    }
    mark(s, msm_phase_ones);
}

// ones_acc += the batch addition's partial sums in the ones area.
template<class bucket_t, class affine_t, class scalar_t>
inline void msm_engine<bucket_t, affine_t, scalar_t>::add_ones(cudaStream_t s) {
    add_buckets(s, (bucket_h *)(base_ + L_.ones_acc), (const bucket_h *)(base_ + L_.ones),
                nones());
}

// Window sums and the ones into wsum, from the accumulated pairs.
template<class bucket_t, class affine_t, class scalar_t>
inline void msm_engine<bucket_t, affine_t, scalar_t>::finish(
    cudaStream_t s, uint32_t nwins_and_wbits) {
    const uint32_t nwins = nwins_and_wbits & 0xffff, wbits = nwins_and_wbits >> 16;
    if (carried_ != 0) {
        integrate_carried(s);
        mark(s, msm_phase_integrate);
    }
    msm_finish_windows<bucket_t><<<nwins + 1, FINISH_THREADS, 0, s>>>(
        (bucket_h *)(base_ + L_.pairs), L_.pair_stride, nwins, wbits, FR_BITS,
        (bucket_h *)(base_ + L_.ones_acc), nones(), (bucket_h *)(base_ + L_.wsum), false);
    cuda_ok(cudaGetLastError(), "finish");
}

// Profile marks: begin starts the clock once s is idle; mark adds the
// time since the last mark to phase ph once s has caught up.
template<class bucket_t, class affine_t, class scalar_t>
inline void msm_engine<bucket_t, affine_t, scalar_t>::begin(cudaStream_t s) {
    if (!prof_)
        return;
    cuda_ok(cudaStreamSynchronize(s), "profile");
    last_ = std::chrono::steady_clock::now();
}

template<class bucket_t, class affine_t, class scalar_t>
inline void msm_engine<bucket_t, affine_t, scalar_t>::mark(cudaStream_t s, msm_phase ph) {
    if (!prof_)
        return;
    cuda_ok(cudaStreamSynchronize(s), "profile");
    const auto t = std::chrono::steady_clock::now();
    prof_->ms[ph] += std::chrono::duration<double, std::milli>(t - last_).count();
    last_ = t;
}

}  // namespace msm_detail
}  // namespace cp_cuda
