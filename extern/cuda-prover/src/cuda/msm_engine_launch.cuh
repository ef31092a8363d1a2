// msm_engine's chunked accumulation (msm_engine.cuh's class, its member
// definitions; the kernels are msm_accumulate.cuh's): which of the
// engine's launches runs (acc_launch: the tuned block size and addition,
// and what a run too small for one wave does, small_runs), how many
// entries a lane's chunk takes (fitted_chunk, to fill whole waves of
// blocks; table_chunk, window_chunk), whether the carries across chunks
// fit (fits_carries), and the accumulation with its two passes of carries
// (accumulate_chunks). Included by msm_engine.cuh, after the class.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

#include <cuda_runtime.h>

#include "msm_engine.cuh"

namespace cp_cuda {
namespace msm_detail {

// The launch of the accumulation (tune_.acc_block picks one by its
// block size, tune_.dot_add the addition; the first by default).
template<class bucket_t, class affine_t, class scalar_t>
inline const typename msm_engine<bucket_t, affine_t, scalar_t>::acc_launch_t &
msm_engine<bucket_t, affine_t, scalar_t>::acc_launch() const {
    if (tune_.dot_add == 0)
        return acc_launches_[SPPARK_ADD];
    if (tune_.dot_add == 1)
        return acc_launches_[DOT_ADD];
    for (size_t k = 0; k < SPPARK_ADD; k++)
        if (acc_launches_[k].threads == tune_.acc_block)
            return acc_launches_[k];
    return acc_launches_[0];
}

// What a run too small for one wave does (msm_tuning::small_runs): by
// default, as any other run (chunks of at least the least length).
// Measured on an H200 at 2^20 (ms, the split's rest of 0/1-heavy
// scalars in G1 / G2 alone / the bits circuit's four at once over
// tables; h200-msm-tune-2e20-blocks.txt): as before 3.36 / 6.82 /
// 19.5-19.7; shorter chunks 3.21 / 5.69 / 18.96; blocks of 128 3.00 /
// 5.75 / 20.03; both 3.19 / 5.70 / 19.09. In a proof, though, these
// runs are A's and B's, next to H's NTTs on the critical path: spread
// over all SMs they slow the NTTs (C2 2 KiB on one host: NTTs 14.3-14.9
// -> 15.1 ms, device part 57.8-58.2 -> 58.2-58.7 ms on the witness path,
// 58.8-59.2 -> 58.7-60.8 on the full path), so they stay as they were.
// At 2^22 shorter chunks lose even alone (5.29 -> 6.38 in G1, 11.62 ->
// 14.95 in G2; h200-msm-tune-2e22.txt).
// All runs in blocks of 128 (128 registers, spilling) slow dense ones:
// dense G2 32.4 -> 36.2, the four of a dense proof over tables 47.9 ->
// 52.1 (256 threads, 2 per SM: 50.0; 64, 7 per SM: 52.3). One block of
// more than 384 threads per SM loses too, from the registers it takes
// away: the four at once 46.56 ms at 384 threads (168 registers), 53.69
// at 416 (152), 51.30 at 448 (144; h200-msm-tune-2e20-tail.txt).
template<class bucket_t, class affine_t, class scalar_t>
inline int msm_engine<bucket_t, affine_t, scalar_t>::small_runs() const {
    return tune_.small_runs < 0 ? SMALL_DEFAULT : tune_.small_runs;
}

// The launch for `rows` rows of nchunks chunks: acc_launch(), or blocks
// of 128 where its blocks would not fill one wave (SMALL_BLOCKS), so the
// run spreads over about three times the SMs.
template<class bucket_t, class affine_t, class scalar_t>
inline const typename msm_engine<bucket_t, affine_t, scalar_t>::acc_launch_t &
msm_engine<bucket_t, affine_t, scalar_t>::acc_launch(uint32_t rows, size_t nchunks) const {
    const acc_launch_t &d = acc_launch();
    if (!(small_runs() & SMALL_BLOCKS) || &d != &acc_launches_[0])
        return d;
    return rows * d.row_blocks(nchunks) < (size_t)sm_count_ * d.blocks_per_sm
               ? acc_launches_[2]
               : d;
}

// Entries per lane in a chunk of an accumulation over `rows` rows of
// `entries` digits each (msm_accumulate_chunks): the shortest length in
// [least, target] whose launch needs no more waves of blocks than the
// target's, so the last wave is (nearly) full; the target itself when
// tuned so (fit_waves 0). Tuned so (SMALL_CHUNKS), a run that would
// not fill one wave even so takes shorter chunks, down to
// ACC_CHUNK_SHORT.
template<class bucket_t, class affine_t, class scalar_t>
inline uint32_t msm_engine<bucket_t, affine_t, scalar_t>::fitted_chunk(
    uint32_t rows, size_t entries, uint32_t target, uint32_t least) const {
    target = std::max(target, least);
    if (tune_.fit_waves == 0)
        return target;
    const uint32_t degree = bucket_t::degree;
    const acc_launch_t &launch = acc_launch();
    const size_t per_wave = (size_t)sm_count_ * launch.blocks_per_sm;
    auto blocks = [&](uint32_t c) {
        const size_t chunks = acc_chunks(entries, c * degree);
        return rows * launch.row_blocks(chunks);
    };
    const size_t waves = (blocks(target) + per_wave - 1) / per_wave;
    uint32_t lo = least, hi = target;  // blocks(hi) fits waves; find the least that does
    while (lo < hi) {
        const uint32_t mid = (lo + hi) / 2;
        if (blocks(mid) <= waves * per_wave)
            hi = mid;
        else
            lo = mid + 1;
    }
    if ((small_runs() & SMALL_CHUNKS) && blocks(lo) < per_wave) {
        // Too few chunks for one wave: the longest chunk, down to
        // ACC_CHUNK_SHORT, whose launch fills one, if its carries fit.
        uint32_t a = std::min(ACC_CHUNK_SHORT, lo), b = lo;
        while (a < b) {
            const uint32_t mid = (a + b + 1) / 2;
            if (blocks(mid) >= per_wave)
                a = mid;
            else
                b = mid - 1;
        }
        if (fits_carries(rows, entries, a))
            lo = a;
    }
    return lo;
}

template<class bucket_t, class affine_t, class scalar_t>
inline uint32_t msm_engine<bucket_t, affine_t, scalar_t>::table_chunk(size_t entries) const {
    return fitted_chunk(1, entries, tune_.table_chunk ? tune_.table_chunk
                                                      : ACC_CHUNK_TABLE_TARGET,
                        ACC_CHUNK_TABLE);
}

template<class bucket_t, class affine_t, class scalar_t>
inline uint32_t msm_engine<bucket_t, affine_t, scalar_t>::window_chunk(
    uint32_t rows, size_t entries) const {
    return fitted_chunk(rows, entries, tune_.window_chunk ? tune_.window_chunk
                                                          : ACC_CHUNK_WINDOWS_TARGET,
                        ACC_CHUNK_WINDOWS);
}

// Whether the carries of `rows` rows of `entries` digits in chunks of
// chunk_lane entries per lane fit in temps.
template<class bucket_t, class affine_t, class scalar_t>
inline bool msm_engine<bucket_t, affine_t, scalar_t>::fits_carries(
    uint32_t rows, size_t entries, uint32_t chunk_lane) const {
    return carry_bytes(rows, entries, sizeof(bucket_h), chunk_lane * bucket_t::degree) <=
           L_.temp_cap * sizeof(uint2);
}

// The buckets of `rows` bucket sets of nbuckets each (consecutive, as
// their histograms) from their sorted digits (row stride digit_stride,
// at most `entries` per row), in chunks of chunk_lane entries per lane
// (msm_accumulate.cuh); fits_carries must hold.
template<class bucket_t, class affine_t, class scalar_t>
inline void msm_engine<bucket_t, affine_t, scalar_t>::accumulate_chunks(
    cudaStream_t s, bucket_h *buckets, const uint32_t *hist, uint32_t nbuckets,
    const affine_h *points, const uint32_t *digits, size_t digit_stride, uint32_t rows,
    size_t entries, uint32_t chunk_lane, char *carries) {
    const uint32_t degree = bucket_t::degree;
    const uint32_t chunk = chunk_lane * degree;
    const size_t nchunks = acc_chunks(entries, chunk);
    if (!fits_carries(rows, entries, chunk_lane) || nchunks * degree >= (size_t(1) << 31))
        throw cuda_error{-(int)cudaErrorInvalidValue,
                         std::string("cuda-prover MSM: no room for the carries")};
    acc_rows<bucket_h> r;
    r.buckets = buckets;
    r.histogram = hist;
    r.digits = digits;
    if (!carries)
        carries = base_ + L_.temps;
    r.carry = (bucket_h *)carries;
    r.carry_bucket = (uint32_t *)(carries + align256(rows * nchunks * sizeof(bucket_h)));
    r.nbuckets = nbuckets;
    r.nchunks = (uint32_t)nchunks;
    r.chunk = chunk;
    r.digit_stride = digit_stride;
    cuda_ok(cudaMemsetAsync(buckets, 0, (size_t)rows * nbuckets * sizeof(bucket_h), s),
            "cudaMemsetAsync");
    const acc_launch_t &launch = acc_launch(rows, nchunks);
    const dim3 acc_grid((uint32_t)launch.row_blocks(nchunks), rows);
    launch.kernel<<<acc_grid, launch.threads, 0, s>>>(r, points);
    cuda_ok(cudaGetLastError(), "accumulate");
    const dim3 grid((uint32_t)((nchunks * degree + ACC_THREADS - 1) / ACC_THREADS), rows);
    for (uint32_t pass = 0; pass < 2; pass++) {
        msm_add_carries<bucket_t><<<grid, ACC_THREADS, 0, s>>>(r, pass);
        cuda_ok(cudaGetLastError(), "accumulate (carries)");
    }
}

}  // namespace msm_detail
}  // namespace cp_cuda
