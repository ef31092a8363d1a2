// One Pippenger MSM engine: the device buffers for MSMs of up to n_max
// points of one group, allocated once, and the orchestration of sppark's
// kernels (breakdown, sort, batch_addition, integrate) plus ours
// (msm_accumulate.cuh: the buckets, in equal chunks; msm_kernels.cuh) on a
// stream given per call. Nothing is allocated, freed or synchronized per
// MSM. A run leaves its window sums on the device (window_sums()); the
// caller copies them back and combines them on the host, where Horner's
// rule over a few dozen points costs a fraction of a millisecond (one warp
// on the device took 2.5 ms in G1, 3.9 ms in G2). Scalars equal to 0 or 1
// can be split off on the device first (classify, then run_split): the 1s
// are summed by a batch addition, only the rest goes through Pippenger. A
// key's bases can also come with a table of multiples (rows w =
// 0..windows-1 of 2^(w wbits) times every base, msm_table_step): run_table
// then sums all windows in one bucket set of 2^(wbits-1) buckets, with
// wider windows (20 bits at 2^20 points, 13 windows instead of 19) and one
// sort, accumulation (in affine rounds of pairs where that pays,
// msm_affine.cuh) and weighted sum (msm_weigh.cuh). Dense 2^20 MSMs on
// an H200 (ms; tests/results/h200-msm-profile-2e20-chunks.txt,
// h200-msm-tune-2e20.txt): G1 13.2 by Pippenger, 9.5 over a table; G2 34.5
// and 22.6; the four of a proof over tables at once 48.4 (53.1 with chunks
// of 32 and sppark's integrate); sppark's accumulate, one bucket per
// thread, gave 14.2, 10.9, 35.8 and 27.6. The widths, the cut into
// batches and the buffers' layout are msm_layout.cuh's. Included by msm.cu.
#pragma once

#include <algorithm>
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

template<class bucket_t, class affine_t, class scalar_t>
class msm_engine {
public:
    using bucket_h = typename bucket_t::mem_t;
    using affine_h = typename affine_t::mem_t;
    static constexpr size_t NT = MSM_NTHREADS / bucket_t::degree;

    static engine_layout layout(size_t n_max, int sm_count, bool table, size_t batch_max = 0) {
        return make_layout(n_max, sizeof(bucket_h), sizeof(affine_h), sm_count,
                           sizeof(scalar_t), NT, bucket_t::degree, table, batch_max);
    }

    // base: layout(n_max, sm_count).total bytes of device memory, owned by
    // the caller. sid: this engine's counter slot in sppark's cooperative
    // kernels (accumulate, batch_addition); engines of one group that may run
    // at the same time need different sids (mod 8).
    msm_engine(void *base, size_t n_max, int sm_count, uint32_t sid, bool table,
               size_t batch_max = 0)
        : L_(layout(n_max, sm_count, table, batch_max)), base_((char *)base), n_max_(n_max), sm_count_(sm_count),
          sid_(sid) {
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
    uint32_t run(cudaStream_t s, const affine_h *points, const scalar_t *scalars, size_t n) {
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

    // First half of a run with the 0/1 split: classifies the scalars and
    // gathers the rest; the COUNTS counts (ones, rest, short: msm_classify)
    // are copied to host_counts (pinned) on s. The caller synchronizes s, then calls
    // run_split with those counts. Without `gather`, the scalars are only
    // counted (for a table run, which does not split them); run_split then
    // needs another classify with gather first.
    void classify(cudaStream_t s, const affine_h *points, const scalar_t *scalars, size_t n,
                  uint32_t *host_counts, bool gather = true) {
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

    // Second half: with counts from classify, the 1s by batch addition and
    // the rest by Pippenger over the gathered points, or (when the rest did
    // not fit) Pippenger over all n points. Result in result(); async on s.
    uint32_t run_split(cudaStream_t s, const affine_h *points, const scalar_t *scalars,
                       size_t n, uint32_t ones, uint32_t rest) {
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
                             size_t n, size_t dense, uint32_t ones, uint32_t rest) {
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

    // Scalars the 0/1 split may gather (classify's rest).
    size_t tail_cap() const { return L_.tail_cap; }

    // Whether run_table takes n bases with a table of this width.
    bool fits_table(size_t n, uint32_t wbits) const {
        const size_t entries = window_count(wbits) * n;
        return wbits >= 10 && wbits <= 20 && n > 0 && entries < (size_t(1) << 31) &&
               (size_t(1) << (wbits - 1)) <= L_.nbuckets && entries <= L_.digit_cap &&
               entries <= L_.temp_cap && fits_carries(1, entries, table_chunk(entries)) &&
               (!weigh() || weigh_bytes(size_t(1) << (wbits - 1), weigh_sbits(),
                                        sizeof(bucket_h)) <= L_.temp_cap * sizeof(uint2));
    }

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
                       cudaEvent_t sorted = nullptr, cudaEvent_t gate = nullptr) {
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
    // The launch of the accumulation (tune_.acc_block picks one by its
    // block size, tune_.dot_add the addition; the first by default).
    const acc_launch_t &acc_launch() const {
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
    static constexpr int SMALL_BLOCKS = 1, SMALL_CHUNKS = 2, SMALL_DEFAULT = 0;
    int small_runs() const { return tune_.small_runs < 0 ? SMALL_DEFAULT : tune_.small_runs; }
    // The launch for `rows` rows of nchunks chunks: acc_launch(), or blocks
    // of 128 where its blocks would not fill one wave (SMALL_BLOCKS), so the
    // run spreads over about three times the SMs.
    const acc_launch_t &acc_launch(uint32_t rows, size_t nchunks) const {
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
    uint32_t fitted_chunk(uint32_t rows, size_t entries, uint32_t target, uint32_t least) const {
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
    uint32_t table_chunk(size_t entries) const {
        return fitted_chunk(1, entries, tune_.table_chunk ? tune_.table_chunk
                                                          : ACC_CHUNK_TABLE_TARGET,
                            ACC_CHUNK_TABLE);
    }
    uint32_t window_chunk(uint32_t rows, size_t entries) const {
        return fitted_chunk(rows, entries, tune_.window_chunk ? tune_.window_chunk
                                                              : ACC_CHUNK_WINDOWS_TARGET,
                            ACC_CHUNK_WINDOWS);
    }

    bool weigh() const { return tune_.weigh != 0; }
    uint32_t weigh_sbits() const {
        return tune_.weigh_sbits ? std::min<uint32_t>(std::max<uint32_t>(tune_.weigh_sbits, 2), 6)
                                 : weigh_top_sbits(bucket_t::degree);
    }

    // wsum[0] = sum_j (j + 1) buckets[j], j < m (msm_weigh.cuh): the first
    // level from the buckets into temps, then levels of two between temps
    // and the buckets (free by then), the last one into wsum[0].
    void weigh_buckets(cudaStream_t s, bucket_h *buckets, size_t m) {
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

    bool weigh_tail() const { return tune_.weigh_tail != 0; }

    // Entries of the tail's scratch for m points: the first sums and the
    // trees' first level, side by side.
    static size_t weigh_tail_entries(size_t m) {
        const uint32_t bits = lg2_ceil(m);
        const size_t first = (bits + 1) * weigh_segments(m, WEIGH_TAIL_CBITS);
        return first + weigh_segments(first, WEIGH_TAIL_FBITS) + bits + 1;
    }
    bool weigh_tail_fits(size_t m) const { return weigh_tail_entries(m) <= L_.nbuckets; }

    // wsum[0] = sum_t t x[t] + sum_t u[t], t < m (m >= 2), by the bits of t
    // (msm_weigh_bits, then msm_weigh_sum's trees and msm_weigh_scale), in
    // scratch (weigh_tail_entries(m) buckets).
    void weigh_tail_bits(cudaStream_t s, const bucket_h *x, const bucket_h *u, uint32_t m,
                         bucket_h *scratch, bucket_h *wsum) {
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

    // Profile marks: begin starts the clock once s is idle; mark adds the
    // time since the last mark to phase ph once s has caught up.
    void begin(cudaStream_t s) {
        if (!prof_)
            return;
        cuda_ok(cudaStreamSynchronize(s), "profile");
        last_ = std::chrono::steady_clock::now();
    }
    void mark(cudaStream_t s, msm_phase ph) {
        if (!prof_)
            return;
        cuda_ok(cudaStreamSynchronize(s), "profile");
        const auto t = std::chrono::steady_clock::now();
        prof_->ms[ph] += std::chrono::duration<double, std::milli>(t - last_).count();
        last_ = t;
    }

    // Whether the carries of `rows` rows of `entries` digits in chunks of
    // chunk_lane entries per lane fit in temps.
    bool fits_carries(uint32_t rows, size_t entries, uint32_t chunk_lane) const {
        return carry_bytes(rows, entries, sizeof(bucket_h), chunk_lane * bucket_t::degree) <=
               L_.temp_cap * sizeof(uint2);
    }

    // The buckets of `rows` bucket sets of nbuckets each (consecutive, as
    // their histograms) from their sorted digits (row stride digit_stride,
    // at most `entries` per row), in chunks of chunk_lane entries per lane
    // (msm_accumulate.cuh); fits_carries must hold.
    void accumulate_chunks(cudaStream_t s, bucket_h *buckets, const uint32_t *hist,
                           uint32_t nbuckets, const affine_h *points, const uint32_t *digits,
                           size_t digit_stride, uint32_t rows, size_t entries,
                           uint32_t chunk_lane) {
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
        r.carry = (bucket_h *)(base_ + L_.temps);
        r.carry_bucket =
            (uint32_t *)(base_ + L_.temps + align256(rows * nchunks * sizeof(bucket_h)));
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
    static constexpr uint32_t AFFINE_CROWD = 3;
    bool affine() const {
        if (tune_.affine == -2)
            return bucket_t::degree == 2;
        if (tune_.affine >= 0)
            return tune_.affine != 0;
        return bucket_t::degree == 2 || crowd_ >= AFFINE_CROWD;
    }

    // The buckets of a table run's one bucket set (row 0 of its sorted
    // digits, `entries` of them at most) in affine rounds of pairs
    // (msm_affine.cuh), in the scratch row; entries <= L_.affine_cap.
    void accumulate_affine(cudaStream_t s, bucket_h *buckets, const uint32_t *hist,
                           uint32_t nbuckets, const affine_h *table, const uint32_t *digits,
                           size_t entries) {
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

    uint32_t nones() const {
        return (uint32_t)((size_t)sm_count_ * BATCH_ADD_BLOCK_SIZE / WARP_SZ);
    }

    // Zeroes (xyzz infinity) what the batches of one MSM add up.
    void clear(cudaStream_t s) {
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
    void add_ones_of(cudaStream_t s, const affine_h *points, size_t n, uint32_t ones) {
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
    void add_ones(cudaStream_t s) {
        add_buckets(s, (bucket_h *)(base_ + L_.ones_acc), (const bucket_h *)(base_ + L_.ones),
                    nones());
    }

    // Window sums and the ones into wsum, from the accumulated pairs.
    void finish(cudaStream_t s, uint32_t nwins_and_wbits) {
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

    // Blocks of the cooperative sort: a power of two near a third of the
    // SMs.
    uint32_t sort_grid() const {
        uint32_t grid = std::max(sm_count_ / 3, 1);
        while (grid & (grid - 1))
            grid -= grid & (0 - grid);
        return grid;
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
    uint32_t pippenger(cudaStream_t s, const affine_h *points, const scalar_t *scalars,
                       size_t n, uint32_t wbits = 0) {
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
        vec2d_t<uint32_t> hist{(uint32_t *)(base_ + L_.hist), row};
        vec2d_t<uint2> temps{(uint2 *)(base_ + L_.temps), (uint32_t)stride};
        vec2d_t<uint32_t> digits{(uint32_t *)(base_ + L_.digits), (uint32_t)stride};

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
            breakdown<<<2 * grid, 1024, sizeof(scalar_t) * 1024, s>>>(
                digits, scalars + off, num, nwins, wbits, true);
            cuda_ok(cudaGetLastError(), "breakdown");
            mark(s, msm_phase_breakdown);
            uint32_t win;
            for (win = 0; win < nwins - 1; win += 2)
                launch_coop(s, sort_k, dim3(grid, 2), dim3(SORT_BLOCKDIM), sort_shared, digits,
                            num, win, temps, hist, wbits - 1, wbits - 1,
                            win == nwins - 2 ? top - 1 : wbits - 1);
            if (win < nwins)
                launch_coop(s, sort_k, dim3(grid, 1), dim3(SORT_BLOCKDIM), sort_shared, digits,
                            num, win, temps, hist, wbits - 1, top - 1, 0u);
            mark(s, msm_phase_sort);
            add_k<<<sm_count_, BATCH_ADD_BLOCK_SIZE, 0, s>>>(ones, points + off, num,
                                                             &digits[0][0], hist[0][0]);
            cuda_ok(cudaGetLastError(), "batch addition");
            mark(s, msm_phase_batch_add);
            if (fits_carries(nwins, num, ACC_CHUNK_WINDOWS)) {
                // The first batch carried accumulates into the set itself.
                const bool first = carry && carried_ == 0;
                accumulate_chunks(s, first ? carried : buckets, hist[0], row, points + off,
                                  digits[0], stride, nwins, num, window_chunk(nwins, num));
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
        }
        return nw;
    }

    // The carried bucket set (carried_: its windows and width) integrated
    // into the pairs accumulator; the set is free again.
    void integrate_carried(cudaStream_t s) {
        integrate_rows(s, (bucket_h *)(base_ + L_.carried), carried_ & 0xffff, carried_ >> 16);
        carried_ = 0;
    }

    // nwins rows of 2^(wbits-1) buckets integrated (sppark's integrate,
    // in place), the pairs it leaves in each row added to the pairs
    // accumulator (what earlier integrations left).
    void integrate_rows(cudaStream_t s, bucket_h *set, uint32_t nwins, uint32_t wbits) {
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
    void add_buckets(cudaStream_t s, bucket_h *dst, const bucket_h *src, size_t count) {
        const size_t threads = std::min<size_t>(count, (size_t)sm_count_ * 2048);
        msm_add_rows<bucket_t><<<dim3((uint32_t)((threads * bucket_t::degree + 255) / 256), 1),
                                 256, 0, s>>>(dst, 0, src, 0, (uint32_t)count);
        cuda_ok(cudaGetLastError(), "add (buckets)");
    }
};

}  // namespace msm_detail
}  // namespace cp_cuda
