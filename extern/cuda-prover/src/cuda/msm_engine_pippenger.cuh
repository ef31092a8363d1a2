// msm_engine's Pippenger (msm_engine.cuh's class, its member definitions):
// the cooperative sort's grid and pippenger, which cuts n points into
// batches, each through breakdown, sort, batch addition (the digit-1
// sums) and accumulation, its buckets carried across batches into one set
// or integrated per batch, each batch sorted in line or (overlaps_sort)
// beside the accumulation of the one before. Included by msm_engine.cuh,
// after the class.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include <cuda_runtime.h>

#include "msm_engine.cuh"

namespace cp_cuda {
namespace msm_detail {

// Blocks of the cooperative sort: a power of two near a third of the
// SMs.
template<class bucket_t, class affine_t, class scalar_t>
inline uint32_t msm_engine<bucket_t, affine_t, scalar_t>::sort_grid() const {
    uint32_t grid = std::max(sm_count_ / 3, 1);
    while (grid & (grid - 1))
        grid -= grid & (0 - grid);
    return grid;
}

// Whether a run of this many batches sorts each on the sort lane while
// the batch before it accumulates: the engine has the second buffers and
// the lane, and the run is not profiled (the profile's marks wait for the
// run's stream phase by phase).
template<class bucket_t, class affine_t, class scalar_t>
inline bool msm_engine<bucket_t, affine_t, scalar_t>::overlaps_sort(size_t batches) const {
    return batches > 1 && L_.digits2 != 0 && lane_.stream != nullptr && prof_ == nullptr;
}

// Pippenger over n points, adding to the pairs and ones accumulators;
// returns nwins | wbits << 16 for finish. wbits: the width (0: the
// automatic or forced one); runs that add to the same accumulators
// before one finish must share it.
//
// A run of several batches carries its buckets (unless tuned not to):
// the first batch accumulates into the carried bucket set, each later
// one into the bucket area and is then added to the carried set (one
// bucket per thread, msm_add_rows), and finish integrates the carried
// set once; the split's rest, after the dense head, adds to it too.
// Integrating each batch's buckets instead cost 4.8 of a 2^22 batch's
// 38.3 ms in G1 at 16 bits (h200-msm-tune-2e22.txt), 32 times over for
// the 32 GiB C2's 2^27 dense H scalars: 156 of 1,184 ms on an H200
// (h200-msm-big-2e27-owner-add.txt). Carried, on an H100 (ms,
// h100-msm-big-2e27.txt): a dense 2^27 G1 MSM 1,047 against 1,185, the
// C2's H + L 1,148 against 1,294. The width stays a batch's: 15 bits
// carried took 1,550 for the H + L, 17 bits per batch 1,391; the owner
// of a bucket adding the carried value inside the accumulation (an
// earlier form) made 17 bits cost 1,564 ms to accumulate against 976
// at 16, its full additions diverging within warps.
// A batch too large for the chunked accumulation's carries
// takes sppark's accumulate: the carried set is integrated first and
// that batch integrates its own buckets.
//
// With the sort lane (overlaps_sort), batch i breaks down and sorts its
// scalars on the lane into buffer i mod 2 (digits, temps, hist), once the
// run's inputs are ready and batch i - 2 has accumulated from that buffer
// (the chunks' carries live in its temps); the run's stream waits for the
// sort, then adds and accumulates. The sort of batch i + 1 thus runs
// beside the accumulation of batch i. Every batch's sort is waited for on
// the run's stream, so the run ends there. On an H100 (ms, h100-msm-big-
// 2e27-overlap.txt), batches of 2^25: the C2's H + L 1,039 -> 995, a dense
// 2^27 G1 MSM 945 -> 901 (sorted in line, the sort took 132 and 124 of
// them: the first batch's sort stays in line and the others share the SMs
// with the accumulation); the slot took 8,759 MiB against 5,581.
template<class bucket_t, class affine_t, class scalar_t>
inline uint32_t msm_engine<bucket_t, affine_t, scalar_t>::pippenger(
    cudaStream_t s, const affine_h *points, const scalar_t *scalars, size_t n, uint32_t wbits) {
    if (n == 0)
        return 0;
    size_t cap = tune_.batch_cap ? std::min(round_up(tune_.batch_cap, 32), L_.stride_cap)
                                 : L_.stride_cap;
    if (wbits == 0 && force_wbits_)
        wbits = std::max<uint32_t>(10, std::min(force_wbits_, L_.wbits_max));
    else if (wbits == 0 && width_of_all())
        wbits = std::min(window_bits(n), L_.wbits_max);
    // A width narrower than the batch's own needs more digit rows than
    // a batch above MAX_BATCH has (msm_layout.cuh): smaller batches.
    if (wbits != 0)
        cap = std::min(cap, std::max<size_t>(L_.digit_cap / window_count(wbits) / 32 * 32, 32));
    const batch_cut cut = cut_batches(n, cap);
    const size_t batch = cut.batches, stride = cut.stride;
    if (wbits == 0)
        wbits = batch_window_bits(stride, L_.wbits_max);
    const uint32_t nwins = window_count(wbits);
    const uint32_t row = 1u << (wbits - 1);
    const uint32_t nw = nwins | wbits << 16;
    if (carried_ != 0 && carried_ != nw)
        integrate_carried(s);  // another width: what was carried is done
    const bool carry = tune_.carry_buckets != 0 && !batch_buckets() &&
                       (batch > 1 || carried_ != 0) &&
                       (size_t)nwins * row <= L_.carry_nbuckets;
    if (prof_) {
        prof_->wbits = wbits;
        prof_->windows = nwins;
        prof_->batches += (uint32_t)batch;
        prof_->pippenger_points += n;
    }
    bucket_h *buckets = (bucket_h *)(base_ + L_.buckets);
    bucket_h *carried = (bucket_h *)(base_ + L_.carried);
    bucket_h *ones = (bucket_h *)(base_ + L_.ones);
    // A batch's sort buffers: the first set, or (overlapped) the set of
    // the batch's parity. The chunked accumulation's carries live in the
    // set's temps.
    const bool overlap = overlaps_sort(batch);
    struct sort_buffers {
        vec2d_t<uint32_t> hist;
        vec2d_t<uint2> temps;
        vec2d_t<uint32_t> digits;
        char *carries() const { return (char *)&temps[0][0]; }
    };
    auto set_of = [&](size_t b) -> sort_buffers {
        const bool second = overlap && b == 1;
        return {{(uint32_t *)(base_ + (second ? L_.hist2 : L_.hist)), row},
                {(uint2 *)(base_ + (second ? L_.temps2 : L_.temps)), (uint32_t)stride},
                {(uint32_t *)(base_ + (second ? L_.digits2 : L_.digits)), (uint32_t)stride}};
    };
    const cudaStream_t sorter = overlap ? lane_.stream : s;
    if (overlap) {
        cuda_ok(cudaEventRecord(lane_.entry, s), "cudaEventRecord");
        cuda_ok(cudaStreamWaitEvent(sorter, lane_.entry, 0), "cudaStreamWaitEvent");
    }

    const uint32_t grid = sort_grid();
    const size_t sort_shared = sizeof(uint32_t) << DIGIT_BITS;
    const uint32_t top = FR_BITS - wbits * (nwins - 1);

    void (*sort_k)(vec2d_t<uint32_t>, size_t, uint32_t, vec2d_t<uint2>, vec2d_t<uint32_t>,
                   uint32_t, uint32_t, uint32_t) = sort;
    void (*acc_k)(bucket_h *, uint32_t, uint32_t, affine_h *, const vec2d_t<uint32_t>,
                  const vec2d_t<uint32_t>, uint32_t) = accumulate<bucket_t, affine_h>;
    void (*add_k)(bucket_h *, const affine_h *, size_t, const uint32_t *,
                  const uint32_t &) = batch_addition<bucket_t, affine_h>;

    for (size_t i = 0; i < batch; i++) {
        const size_t off = i * stride;
        const size_t num = std::min(stride, n - off);
        const size_t b = overlap ? i & 1 : 0;
        const sort_buffers set = set_of(b);
        const vec2d_t<uint32_t> hist = set.hist;
        const vec2d_t<uint2> temps = set.temps;
        const vec2d_t<uint32_t> digits = set.digits;
        if (overlap && i >= 2)
            cuda_ok(cudaStreamWaitEvent(sorter, lane_.freed[b], 0), "cudaStreamWaitEvent");
        breakdown<<<2 * grid, 1024, sizeof(scalar_t) * 1024, sorter>>>(
            digits, scalars + off, num, nwins, wbits, true);
        cuda_ok(cudaGetLastError(), "breakdown");
        mark(s, msm_phase_breakdown);
        uint32_t win;
        for (win = 0; win < nwins - 1; win += 2)
            launch_coop(sorter, sort_k, dim3(grid, 2), dim3(SORT_BLOCKDIM), sort_shared,
                        digits, num, win, temps, hist, wbits - 1, wbits - 1,
                        win == nwins - 2 ? top - 1 : wbits - 1);
        if (win < nwins)
            launch_coop(sorter, sort_k, dim3(grid, 1), dim3(SORT_BLOCKDIM), sort_shared,
                        digits, num, win, temps, hist, wbits - 1, top - 1, 0u);
        if (overlap) {
            cuda_ok(cudaEventRecord(lane_.sorted[b], sorter), "cudaEventRecord");
            cuda_ok(cudaStreamWaitEvent(s, lane_.sorted[b], 0), "cudaStreamWaitEvent");
        }
        mark(s, msm_phase_sort);
        add_k<<<sm_count_, BATCH_ADD_BLOCK_SIZE, 0, s>>>(ones, points + off, num,
                                                         &digits[0][0], hist[0][0]);
        cuda_ok(cudaGetLastError(), "batch addition");
        mark(s, msm_phase_batch_add);
        if (fits_carries(nwins, num, ACC_CHUNK_WINDOWS)) {
            // The first batch carried accumulates into the set itself.
            const bool first = carry && carried_ == 0;
            accumulate_chunks(s, first ? carried : buckets, hist[0], row, points + off,
                              digits[0], stride, nwins, num, window_chunk(nwins, num),
                              set.carries());
            mark(s, msm_phase_accumulate);
            if (first)
                carried_ = nw;
            else if (carry)
                add_buckets(s, carried, buckets, (size_t)nwins * row);
            else
                integrate_rows(s, buckets, nwins, wbits);
        } else {
            if (carried_ != 0)
                integrate_carried(s);
            launch_coop(s, acc_k, dim3(sm_count_), dim3(0), 0, buckets, nwins, wbits,
                        const_cast<affine_h *>(points + off),
                        (const vec2d_t<uint32_t>)digits, (const vec2d_t<uint32_t>)hist,
                        sid_);
            mark(s, msm_phase_accumulate);
            integrate_rows(s, buckets, nwins, wbits);
        }
        // The digit-1 sums, added to what the earlier batches left.
        add_ones(s);
        mark(s, msm_phase_integrate);
        if (overlap)
            cuda_ok(cudaEventRecord(lane_.freed[b], s), "cudaEventRecord");
    }
    return nw;
}

}  // namespace msm_detail
}  // namespace cp_cuda
