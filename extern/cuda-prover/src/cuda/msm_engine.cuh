// One Pippenger MSM engine: the device buffers for MSMs of up to n_max
// points of one group, allocated once, and the orchestration of sppark's
// kernels (breakdown, sort, batch_addition, integrate) plus ours
// (msm_accumulate.cuh: the buckets, in equal chunks; msm_kernels.cuh) on a
// stream given per call (and, laid out for it, a second stream its owner
// gives, on which Pippenger's batches are sorted: sort_lane). Nothing is
// allocated, freed or synchronized per MSM. A run leaves its window sums
// on the device (window_sums()); the caller copies them back and combines them on the host, where Horner's
// rule over a few dozen points costs a fraction of a millisecond (one warp
// on the device took 2.5 ms in G1, 3.9 ms in G2). Scalars equal to 0 or 1
// can be split off on the device first (classify, then run_split): the 1s
// are summed by a batch addition, only the rest goes through Pippenger. A
// key's bases can also come with a table of multiples: run_table then sums
// all windows in one bucket set (msm_engine_table.cuh). The widths, the
// cut into batches and the buffers' layout are msm_layout.cuh's.
//
// This file holds the class: its buffers and settings, its calls, its
// small accessors and the accumulation's launches. The other member
// functions are defined, by concept, in the headers included at its end:
//   msm_engine_runs.cuh       run, classify, run_split, run_split_after and
//                             what every run does (clear, the ones,
//                             finish, the profile marks)
//   msm_engine_pippenger.cuh  Pippenger's batches, with carried buckets,
//                             sorted in line or on the sort lane
//   msm_engine_table.cuh      the runs over a table of multiples
//   msm_engine_launch.cuh     the chunked accumulation: its launch, the
//                             chunks' length, the carries
//   msm_engine_buckets.cuh    buckets into sums: integration, bucket-wise
//                             additions, the weighted sum
// Included by msm.cu.
#pragma once

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <tuple>

#include <cuda_runtime.h>

#include "msm_accumulate.cuh"
#include "msm_affine.cuh"
#include "msm_kernels.cuh"
#include "msm_layout.cuh"
#include "msm_weigh.cuh"

namespace cp_cuda {
namespace msm_detail {

inline void cuda_ok(cudaError_t e, const char *what) {
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        throw cuda_error{-(int)e, std::string("cuda-prover MSM: ") + what + ": " +
                                      cudaGetErrorString(e)};
    }
}

// A cooperative launch of f on s; the arguments are converted to f's
// parameter types first (cudaLaunchCooperativeKernel takes their addresses).
template<typename... P, typename... A>
void launch_coop(cudaStream_t s, void (*f)(P...), dim3 grid, dim3 block, size_t shared,
                 A... a) {
    static_assert(sizeof...(P) == sizeof...(A), "argument count");
    if (block.x == 0) {
        cudaFuncAttributes attr;
        cuda_ok(cudaFuncGetAttributes(&attr, (const void *)f), "cudaFuncGetAttributes");
        block.x = attr.maxThreadsPerBlock;
    }
    std::tuple<P...> args{P(a)...};
    void *va[sizeof...(P)];
    std::apply([&](auto &...x) {
        size_t k = 0;
        ((va[k++] = (void *)&x), ...);
    }, args);
    cuda_ok(cudaLaunchCooperativeKernel((const void *)f, grid, block, va, shared, s),
            "cooperative launch");
}

// The sorted digits of a table run and their histogram (on the device),
// which a table run of another engine over the same scalars and width can
// use instead of sorting its own (B in G1 and in G2).
struct sorted_digits {
    const uint32_t *digits = nullptr;
    const uint32_t *hist = nullptr;
};

// A second stream for an engine laid out with a second set of sort
// buffers (make_layout's overlap): Pippenger breaks down and sorts a batch
// there while the run's stream accumulates the batch before it. Owned by
// the engine's owner (the context's slot, msm_context_slots.cuh), which
// creates and destroys them.
struct sort_lane {
    cudaStream_t stream = nullptr;
    cudaEvent_t entry = nullptr;   // on the run's stream: the scalars are ready
    cudaEvent_t sorted[2] = {};    // on `stream`: buffer b holds a sorted batch
    cudaEvent_t freed[2] = {};     // on the run's stream: buffer b's batch is accumulated
    // The five events' addresses, for their creation and destruction.
    std::array<cudaEvent_t *, 5> events() {
        return {&entry, &sorted[0], &sorted[1], &freed[0], &freed[1]};
    }
};

template<class bucket_t, class affine_t, class scalar_t>
class msm_engine {
public:
    using bucket_h = typename bucket_t::mem_t;
    using affine_h = typename affine_t::mem_t;
    static constexpr size_t NT = MSM_NTHREADS / bucket_t::degree;

    static engine_layout layout(size_t n_max, int sm_count, bool table, size_t batch_max = 0,
                                bool overlap = false) {
        return make_layout(n_max, sizeof(bucket_h), sizeof(affine_h), sm_count,
                           sizeof(scalar_t), NT, bucket_t::degree, table, batch_max, overlap);
    }

    // base: layout(n_max, sm_count).total bytes of device memory, owned by
    // the caller. sid: this engine's counter slot in sppark's cooperative
    // kernels (accumulate, batch_addition); engines of one group that may run
    // at the same time need different sids (mod 8).
    msm_engine(void *base, size_t n_max, int sm_count, uint32_t sid, bool table,
               size_t batch_max = 0, bool overlap = false)
        : L_(layout(n_max, sm_count, table, batch_max, overlap)), base_((char *)base),
          n_max_(n_max), sm_count_(sm_count), sid_(sid) {
        for (auto &v : acc_launches_) {
            int blocks = 0;
            if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, v.kernel, (int)v.threads,
                                                              0) != cudaSuccess ||
                blocks < 1) {
                (void)cudaGetLastError();
                blocks = 1;
            }
            v.blocks_per_sm = (uint32_t)blocks;
        }
    }

    size_t n_max() const { return n_max_; }

    // Measurements only (msm_context::profile, window_bits).
    void profile(msm_profile *p) { prof_ = p; }
    void force_window_bits(uint32_t w) { force_wbits_ = w; }
    void tune(const msm_tuning &t) { tune_ = t; }
    // How many table runs the next run starts beside (itself included).
    void crowd(uint32_t table_runs) { crowd_ = table_runs; }
    // The second stream of an engine laid out with overlap (plan().digits2
    // != 0); its objects must outlive the engine's runs.
    void sort_on(const sort_lane &lane) { lane_ = lane; }
    const engine_layout &plan() const { return L_; }

    // What the last run leaves on the device: WSUM_SLOTS xyzz points
    // (sppark's layout), the sums of windows 0..windows-1 and, at
    // ONES_SLOT, of the points whose scalar or digit is 1. The MSM is
    // sum_w 2^(w * wbits) wsum[w] + wsum[ONES_SLOT]; run and run_split
    // return windows | wbits << 16.
    const bucket_h *window_sums() const { return (const bucket_h *)(base_ + L_.wsum); }

    // Where a table run leaves its sorted digits and histogram (valid after
    // a run_table without `from`, until this engine runs again).
    sorted_digits sorted() const {
        return {(const uint32_t *)(base_ + L_.digits), (const uint32_t *)(base_ + L_.hist)};
    }

    // sum scalars[i] * points[i], i < n <= n_max, all on the device, into
    // result(); asynchronous on s.
    uint32_t run(cudaStream_t s, const affine_h *points, const scalar_t *scalars, size_t n);

    // First half of a run with the 0/1 split: classifies the scalars and
    // gathers the rest; the COUNTS counts (ones, rest, short: msm_classify)
    // are copied to host_counts (pinned) on s. The caller synchronizes s, then calls
    // run_split with those counts. Without `gather`, the scalars are only
    // counted (for a table run, which does not split them); run_split then
    // needs another classify with gather first.
    void classify(cudaStream_t s, const affine_h *points, const scalar_t *scalars, size_t n,
                  uint32_t *host_counts, bool gather = true);

    // Second half: with counts from classify, the 1s by batch addition and
    // the rest by Pippenger over the gathered points, or (when the rest did
    // not fit) Pippenger over all n points. Result in result(); async on s.
    uint32_t run_split(cudaStream_t s, const affine_h *points, const scalar_t *scalars,
                       size_t n, uint32_t ones, uint32_t rest);

    // The 0/1 split of all but a dense head: scalars [0, dense) go through
    // Pippenger where they lie, [dense, n) were classified (classify over
    // points + dense, scalars + dense, n - dense) into `ones` 1s, summed by
    // batch addition, and `rest` others, gathered and run through Pippenger
    // at the head's width into the same accumulators. H + L of a large
    // proof: H's 2^k - 1 scalars are dense, L's mostly 0 or 1 (the bits of
    // hash gadgets), and more of H alone than the split could gather made
    // the whole MSM run Pippenger over every L point. When the rest does
    // not fit either, Pippenger over all n points.
    uint32_t run_split_after(cudaStream_t s, const affine_h *points, const scalar_t *scalars,
                             size_t n, size_t dense, uint32_t ones, uint32_t rest);

    // Scalars the 0/1 split may gather (classify's rest).
    size_t tail_cap() const { return L_.tail_cap; }

    // Whether run_table takes n bases with a table of this width.
    bool fits_table(size_t n, uint32_t wbits) const;

    // sum scalars[i] * points[i], i < n, where `table` holds the rows w <
    // window_count(wbits) of 2^(w wbits) points[i] (row 0: the points; row
    // stride n). Window w of scalar i is a digit of point w n + i, so all
    // windows share one bucket set: one breakdown, one sort of windows x n
    // digits, one accumulation; the buckets are then weighed in levels
    // (msm_weigh.cuh) into one window-sum slot, or (tuned so) integrated in
    // rows (table_piece_bits) and finished with their offsets
    // (msm_finish_windows' flat), leaving sums of weight 1 in the window-sum
    // slots. Returns the slots used | 0 << 16. Asynchronous on s; fits_table(n, wbits) must hold. With
    // `from`, the digits are another engine's table run over the same
    // scalars and width (sorted(); s must be past its sort and the other
    // engine must not run again until this run is done): no breakdown and
    // sort here, and this engine's sorted() stays as it was. Else `sorted`
    // (if not null) is recorded on s once the digits are sorted. With
    // `gate`, s waits for it after the sort, before the additions.
    uint32_t run_table(cudaStream_t s, const affine_h *table, const scalar_t *scalars, size_t n,
                       uint32_t wbits, const sorted_digits *from = nullptr,
                       cudaEvent_t sorted = nullptr, cudaEvent_t gate = nullptr);

private:
    engine_layout L_;
    char *base_;
    size_t n_max_;
    int sm_count_;
    uint32_t sid_;
    msm_profile *prof_ = nullptr;
    uint32_t force_wbits_ = 0;
    uint32_t crowd_ = 1;
    msm_tuning tune_;
    sort_lane lane_;
    // Windows | width << 16 of the carried bucket set (L_.carried: the sums
    // of Pippenger's batches so far, not yet integrated; finish integrates
    // them), or 0 while it holds nothing.
    uint32_t carried_ = 0;
    std::chrono::steady_clock::time_point last_;

    // The block sizes msm_accumulate_chunks is built for, each with the
    // register budget that lets an SM hold the given number of blocks, and
    // the blocks an SM holds at once (a wave is sm_count_ times that).
    struct acc_launch_t {
        void (*kernel)(acc_rows<bucket_h>, const affine_h *);
        uint32_t threads;
        uint32_t blocks_per_sm;
        // Blocks per row for nchunks chunks (degree lanes each).
        size_t row_blocks(size_t nchunks) const {
            return (nchunks * bucket_t::degree + threads - 1) / threads;
        }
    };
    // By default the accumulation adds with madd_dot in G1 and with
    // sppark's xyzz_t::add in G2 (msm_madd.cuh; tune_.dot_add 0: sppark's in
    // both, 1: madd_dot in both). Measured on an H200, 2^20 dense over
    // tables (ms, two runs; h200-msm-tune-2e20-dot.txt), sppark's against
    // madd_dot: accumulation alone G1 5.85-5.86 -> 5.54-5.55, H + L
    // 11.50-11.51 -> 10.94-11.00, G2 16.83-16.95 -> 16.94-16.98 (its
    // four-product dot product spills: 76 bytes against none); the four of
    // a proof at once 47.62-47.77, madd_dot in both 46.73-46.88, in G1
    // only 46.50.
    static constexpr bool DOT_DEFAULT = bucket_t::degree == 1;
    static constexpr size_t SPPARK_ADD = 4, DOT_ADD = 5;
    acc_launch_t acc_launches_[6] = {
        {msm_accumulate_chunks<bucket_t, affine_h, ACC_THREADS, 1, DOT_DEFAULT>, ACC_THREADS, 1},
        {msm_accumulate_chunks<bucket_t, affine_h, 64, 7, DOT_DEFAULT>, 64, 1},
        {msm_accumulate_chunks<bucket_t, affine_h, 128, 4, DOT_DEFAULT>, 128, 1},
        {msm_accumulate_chunks<bucket_t, affine_h, 256, 2, DOT_DEFAULT>, 256, 1},
        {msm_accumulate_chunks<bucket_t, affine_h, ACC_THREADS, 1, false>, ACC_THREADS, 1},
        {msm_accumulate_chunks<bucket_t, affine_h, ACC_THREADS, 1, true>, ACC_THREADS, 1},
    };
    // The chunked accumulation (msm_engine_launch.cuh): which of the
    // launches above runs, how long a lane's chunk is, whether the carries
    // fit, the accumulation itself.
    const acc_launch_t &acc_launch() const;
    // msm_tuning::small_runs' bits and its default (small_runs says why).
    static constexpr int SMALL_BLOCKS = 1, SMALL_CHUNKS = 2, SMALL_DEFAULT = 0;
    int small_runs() const;
    const acc_launch_t &acc_launch(uint32_t rows, size_t nchunks) const;
    uint32_t fitted_chunk(uint32_t rows, size_t entries, uint32_t target, uint32_t least) const;
    uint32_t table_chunk(size_t entries) const;
    uint32_t window_chunk(uint32_t rows, size_t entries) const;
    bool fits_carries(uint32_t rows, size_t entries, uint32_t chunk_lane) const;
    // carries: where the chunks' carries go (a temps buffer; null: temps).
    void accumulate_chunks(cudaStream_t s, bucket_h *buckets, const uint32_t *hist,
                           uint32_t nbuckets, const affine_h *points, const uint32_t *digits,
                           size_t digit_stride, uint32_t rows, size_t entries,
                           uint32_t chunk_lane, char *carries = nullptr);

    // A table run's accumulation in affine rounds (msm_engine_table.cuh;
    // affine says when).
    static constexpr uint32_t AFFINE_CROWD = 3;
    bool affine() const;
    void accumulate_affine(cudaStream_t s, bucket_h *buckets, const uint32_t *hist,
                           uint32_t nbuckets, const affine_h *table, const uint32_t *digits,
                           size_t entries);

    // Pippenger's batches (msm_engine_pippenger.cuh).
    uint32_t sort_grid() const;
    bool overlaps_sort(size_t batches) const;
    uint32_t pippenger(cudaStream_t s, const affine_h *points, const scalar_t *scalars,
                       size_t n, uint32_t wbits = 0);

    // Buckets into sums (msm_engine_buckets.cuh): Pippenger's rows
    // integrated, bucket-wise additions, a table run's weighted sum.
    void integrate_carried(cudaStream_t s);
    void integrate_rows(cudaStream_t s, bucket_h *set, uint32_t nwins, uint32_t wbits);
    void add_buckets(cudaStream_t s, bucket_h *dst, const bucket_h *src, size_t count);
    bool weigh() const { return tune_.weigh != 0; }
    uint32_t weigh_sbits() const {
        return tune_.weigh_sbits ? std::min<uint32_t>(std::max<uint32_t>(tune_.weigh_sbits, 2), 6)
                                 : weigh_top_sbits(bucket_t::degree);
    }
    void weigh_buckets(cudaStream_t s, bucket_h *buckets, size_t m);
    bool weigh_tail() const { return tune_.weigh_tail != 0; }
    static size_t weigh_tail_entries(size_t m);
    bool weigh_tail_fits(size_t m) const { return weigh_tail_entries(m) <= L_.nbuckets; }
    void weigh_tail_bits(cudaStream_t s, const bucket_h *x, const bucket_h *u, uint32_t m,
                         bucket_h *scratch, bucket_h *wsum);

    // What every run does (msm_engine_runs.cuh): the accumulators cleared,
    // the ones added, the window sums finished, the profile marks.
    uint32_t nones() const {
        return (uint32_t)((size_t)sm_count_ * BATCH_ADD_BLOCK_SIZE / WARP_SZ);
    }
    void clear(cudaStream_t s);
    void add_ones_of(cudaStream_t s, const affine_h *points, size_t n, uint32_t ones);
    void add_ones(cudaStream_t s);
    void finish(cudaStream_t s, uint32_t nwins_and_wbits);
    void begin(cudaStream_t s);
    void mark(cudaStream_t s, msm_phase ph);
};

}  // namespace msm_detail
}  // namespace cp_cuda

// The member functions defined out of the class, by concept.
#include "msm_engine_buckets.cuh"
#include "msm_engine_launch.cuh"
#include "msm_engine_pippenger.cuh"
#include "msm_engine_runs.cuh"
#include "msm_engine_table.cuh"
