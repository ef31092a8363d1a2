// msm_engine's runs over a table of multiples (msm_engine.cuh's class, its
// member definitions). A key's bases can come with a table (rows w =
// 0..windows-1 of 2^(w wbits) times every base, msm_table_step): run_table
// then sums all windows in one bucket set of 2^(wbits-1) buckets, with
// wider windows (20 bits at 2^20 points, 13 windows instead of 19) and one
// sort, accumulation (in affine rounds of pairs where that pays,
// msm_affine.cuh: affine, accumulate_affine) and weighted sum
// (msm_weigh.cuh). Dense 2^20 MSMs on an H200 (ms;
// tests/results/h200-msm-profile-2e20-chunks.txt, h200-msm-tune-2e20.txt):
// G1 13.2 by Pippenger, 9.5 over a table; G2 34.5 and 22.6; the four of a
// proof over tables at once 48.4 (53.1 with chunks of 32 and sppark's
// integrate); sppark's accumulate, one bucket per thread, gave 14.2, 10.9,
// 35.8 and 27.6. Included by msm_engine.cuh, after the class.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

#include <cuda_runtime.h>

#include "msm_engine.cuh"

namespace cp_cuda {
namespace msm_detail {

template<class bucket_t, class affine_t, class scalar_t>
inline bool msm_engine<bucket_t, affine_t, scalar_t>::fits_table(size_t n, uint32_t wbits) const {
    const size_t entries = window_count(wbits) * n;
    return wbits >= 10 && wbits <= 20 && n > 0 && entries < (size_t(1) << 31) &&
           (size_t(1) << (wbits - 1)) <= L_.nbuckets && entries <= L_.digit_cap &&
           entries <= L_.temp_cap && fits_carries(1, entries, table_chunk(entries)) &&
           (!weigh() || weigh_bytes(size_t(1) << (wbits - 1), weigh_sbits(),
                                    sizeof(bucket_h)) <= L_.temp_cap * sizeof(uint2));
}

template<class bucket_t, class affine_t, class scalar_t>
inline uint32_t msm_engine<bucket_t, affine_t, scalar_t>::run_table(
    cudaStream_t s, const affine_h *table, const scalar_t *scalars, size_t n, uint32_t wbits,
    const sorted_digits *from, cudaEvent_t sorted, cudaEvent_t gate) {
    if (!fits_table(n, wbits))
        throw cuda_error{-(int)cudaErrorInvalidValue,
                         std::string("cuda-prover MSM: a table run the engine cannot hold")};
    const uint32_t nwins = window_count(wbits);
    const uint32_t entries = (uint32_t)(nwins * n);
    const uint32_t piece = table_piece_bits(wbits);
    const uint32_t rows = 1u << (wbits - piece);
    if (prof_) {
        prof_->wbits = wbits;
        prof_->windows = nwins;
        prof_->batches = 1;
        prof_->pippenger_points += n;
    }
    clear(s);
    begin(s);
    bucket_h *buckets = (bucket_h *)(base_ + L_.buckets);
    bucket_h *ones = (bucket_h *)(base_ + L_.ones);
    // Window w of scalar i at w n + i: the rows of breakdown are one
    // row of the sort.
    const sorted_digits own = this->sorted();
    const uint32_t *d_digits = from ? from->digits : own.digits;
    const uint32_t *d_hist = from ? from->hist : own.hist;
    if (!from) {
        vec2d_t<uint32_t> windows{(uint32_t *)own.digits, (uint32_t)n};
        vec2d_t<uint32_t> digits{(uint32_t *)own.digits, entries};
        vec2d_t<uint32_t> hist{(uint32_t *)own.hist, 1u << (wbits - 1)};
        vec2d_t<uint2> temps{(uint2 *)(base_ + L_.temps), entries};
        const uint32_t grid = sort_grid();
        breakdown<<<2 * grid, 1024, sizeof(scalar_t) * 1024, s>>>(windows, scalars, n, nwins,
                                                                 wbits, true);
        cuda_ok(cudaGetLastError(), "breakdown");
        mark(s, msm_phase_breakdown);
        void (*sort_k)(vec2d_t<uint32_t>, size_t, uint32_t, vec2d_t<uint2>,
                       vec2d_t<uint32_t>, uint32_t, uint32_t, uint32_t) = sort;
        launch_coop(s, sort_k, dim3(grid, 1), dim3(SORT_BLOCKDIM),
                    sizeof(uint32_t) << DIGIT_BITS, digits, (size_t)entries, 0u, temps, hist,
                    wbits - 1, wbits - 1, 0u);
        if (sorted)
            cuda_ok(cudaEventRecord(sorted, s), "cudaEventRecord");
        mark(s, msm_phase_sort);
    }
    if (gate)
        cuda_ok(cudaStreamWaitEvent(s, gate, 0), "cudaStreamWaitEvent (gate)");
    void (*add_k)(bucket_h *, const affine_h *, size_t, const uint32_t *,
                  const uint32_t &) = batch_addition<bucket_t, affine_h>;
    add_k<<<sm_count_, BATCH_ADD_BLOCK_SIZE, 0, s>>>(ones, table, entries, d_digits,
                                                     d_hist[0]);
    cuda_ok(cudaGetLastError(), "batch addition");
    mark(s, msm_phase_batch_add);
    if (affine() && entries <= L_.affine_cap)
        accumulate_affine(s, buckets, d_hist, 1u << (wbits - 1), table, d_digits, entries);
    else
        accumulate_chunks(s, buckets, d_hist, 1u << (wbits - 1), table, d_digits, entries, 1,
                          entries, table_chunk(entries));
    mark(s, msm_phase_accumulate);
    if (weigh()) {
        add_ones(s);
        mark(s, msm_phase_integrate);
        // The ones' partial sums into wsum[ONES_SLOT] (one block, no
        // windows), then the bucket set's weighted sum into wsum[0].
        msm_finish_windows<bucket_t><<<1, FINISH_THREADS, 0, s>>>(
            buckets, 0, 0, wbits, FR_BITS, (bucket_h *)(base_ + L_.ones_acc), nones(),
            (bucket_h *)(base_ + L_.wsum), true);
        cuda_ok(cudaGetLastError(), "finish (ones)");
        weigh_buckets(s, buckets, size_t(1) << (wbits - 1));
        mark(s, msm_phase_finish);
        return 1;
    }
    integrate<bucket_t><<<rows, MSM_NTHREADS, sizeof(bucket_t) * NT, s>>>(
        buckets, rows, piece, rows * piece);
    cuda_ok(cudaGetLastError(), "integrate");
    add_ones(s);
    mark(s, msm_phase_integrate);
    msm_finish_windows<bucket_t><<<rows + 1, FINISH_THREADS, 0, s>>>(
        buckets, size_t(1) << (piece - 1), rows, piece, rows * piece,
        (bucket_h *)(base_ + L_.ones_acc), nones(), (bucket_h *)(base_ + L_.wsum), true);
    cuda_ok(cudaGetLastError(), "finish");
    mark(s, msm_phase_finish);
    return rows;
}

// Whether a table run accumulates in affine rounds (msm_affine.cuh) or
// in chunks (msm_accumulate.cuh). By default: in G2 always; in G1 when
// at least AFFINE_CROWD table runs were started together (crowd(): the
// four of a dense proof). Measured on an H200, 2^20 dense over tables
// (ms; h200-msm-tune-2e20-affine.txt): the four of a proof at once,
// chunks 46.7, affine in both 43.7 (32 to 128 pairs per thread; 16 to
// 128: 44.1, 16 to 32: 44.7, 128 fixed: 46.0), affine in G2 only 44.6;
// alone, G2 22.1 -> 20.5-21.5 but G1 8.9 -> 10.5-11.4 and H + L 15.7 ->
// 17.3-18.1: G1's late rounds have few pairs and few threads, latency
// that only other streams' work fills. The `bits` circuit's H + L
// runs nearly alone (A and B split off their 0/1 scalars): with affine
// rounds there its device part took 19.2 ms against 17.2.
template<class bucket_t, class affine_t, class scalar_t>
inline bool msm_engine<bucket_t, affine_t, scalar_t>::affine() const {
    if (tune_.affine == -2)
        return bucket_t::degree == 2;
    if (tune_.affine >= 0)
        return tune_.affine != 0;
    return bucket_t::degree == 2 || crowd_ >= AFFINE_CROWD;
}

// The buckets of a table run's one bucket set (row 0 of its sorted
// digits, `entries` of them at most) in affine rounds of pairs
// (msm_affine.cuh), in the scratch row; entries <= L_.affine_cap.
template<class bucket_t, class affine_t, class scalar_t>
inline void msm_engine<bucket_t, affine_t, scalar_t>::accumulate_affine(
    cudaStream_t s, bucket_h *buckets, const uint32_t *hist, uint32_t nbuckets,
    const affine_h *table, const uint32_t *digits, size_t entries) {
    const uint32_t degree = bucket_t::degree;
    uint32_t *max_count = (uint32_t *)(base_ + L_.affine_max);
    void *scratch = base_ + L_.affine;
    cuda_ok(cudaMemsetAsync(buckets, 0, (size_t)nbuckets * sizeof(bucket_h), s),
            "cudaMemsetAsync");
    cuda_ok(cudaMemsetAsync(max_count, 0, sizeof(uint32_t), s), "cudaMemsetAsync");
    msm_affine_max<<<(uint32_t)std::max<size_t>(1, std::min<size_t>(
                         (nbuckets + 255) / 256, (size_t)sm_count_ * 4)),
                     256, 0, s>>>(hist, nbuckets, max_count);
    cuda_ok(cudaGetLastError(), "accumulate (largest bucket)");
    const uint32_t most = tune_.affine_pairs
                              ? std::min<uint32_t>(std::max<uint32_t>(tune_.affine_pairs, 1),
                                                   AFF_PAIRS_MAX)
                              : AFF_PAIRS;
    const uint32_t least =
        std::min(most, tune_.affine_pairs_min ? tune_.affine_pairs_min : AFF_PAIRS_MIN);
    // About two waves of threads in a round (at four blocks per SM).
    const size_t target = (size_t)sm_count_ * AFF_THREADS * 8 / degree;
    for (size_t h = 1;; h *= 2) {
        const size_t pairs = entries / (2 * h) + 1;
        const size_t per =
            std::min<size_t>(std::max<size_t>(pairs / target, least), most);
        const size_t span = std::max<size_t>(1, std::min<size_t>(per * 2 * h, AFF_SPAN_MAX));
        const size_t threads = (entries + span - 1) / span;
        const uint32_t blocks = (uint32_t)((threads * degree + AFF_THREADS - 1) / AFF_THREADS);
        if (h == 1)
            msm_affine_round<bucket_t, affine_h, true><<<blocks, AFF_THREADS, 0, s>>>(
                hist, nbuckets, digits, table, scratch, (uint32_t)h, (uint32_t)span,
                max_count);
        else
            msm_affine_round<bucket_t, affine_h, false><<<blocks, AFF_THREADS, 0, s>>>(
                hist, nbuckets, digits, table, scratch, (uint32_t)h, (uint32_t)span,
                max_count);
        cuda_ok(cudaGetLastError(), "accumulate (affine round)");
        if (2 * h >= entries)
            break;  // no bucket holds more than 2h entries
    }
    msm_affine_buckets<bucket_t><<<(uint32_t)(((size_t)nbuckets * degree + 255) / 256), 256, 0,
                                   s>>>(hist, nbuckets, scratch, buckets);
    cuda_ok(cudaGetLastError(), "accumulate (affine buckets)");
}

}  // namespace msm_detail
}  // namespace cp_cuda
