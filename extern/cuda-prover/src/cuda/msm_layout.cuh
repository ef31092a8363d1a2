// How a Pippenger engine sizes itself: the window widths (of one batch,
// of a table run), how a run is cut into batches, the diagnostics switches
// that restore earlier choices, and the byte layout of an engine's buffers
// (make_layout), which msm_engine.cuh allocates once and the device's
// memory plans count (msm_context_bytes). Included by msm_engine.cuh
// (sppark's field and curve types must be defined first).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdlib>

#include "msm_accumulate.cuh"
#include "msm_kernels.cuh"
#include "msm_weigh.cuh"

namespace cp_cuda {
namespace msm_detail {

constexpr uint32_t FR_BITS = 255;

inline uint32_t lg2_floor(size_t n) {
    uint32_t r = 0;
    while (n >>= 1)
        r++;
    return r;
}
// The least b with 2^b >= n.
inline uint32_t lg2_ceil(size_t n) {
    uint32_t r = 0;
    while ((size_t(1) << r) < n)
        r++;
    return r;
}
inline size_t round_up(size_t x, size_t m) { return (x + m - 1) / m * m; }
inline size_t align256(size_t x) { return round_up(x, 256); }

// The window width for n points: lg(1.5 n) - 6, in [10, 18]. Measured on
// an H200, one batch of dense scalars (ms, tests/results/):
//   2^20 G1: w 10: 56, 11: 28, 12: 16, 13: 17, 14: 14.3, 15: 15, 16: 17
//   2^20 G2: w 10: 95, 11: 43, 12: 39, 13: 39, 14: 36, 15: 38
//   2^18 G1: w 10: 15, 11: 8.7, 12: 5.4, 13: 6.0, 14: 5.8, 15: 7.1
//   2^18 G2: w 10: 26, 11: 12.7, 12: 12.5, 13: 13.7, 14: 14.4
// sppark's msm_t takes lg(1.5 n) - 8 (12 at 2^20): wider windows pay here
// because the MSM runs in one batch and its window sums are finished on
// the device.
inline uint32_t window_bits(size_t n, uint32_t cap = 18) {
    const size_t np = round_up(n, 32);
    if (np <= 192)
        return 10;
    const uint32_t lg = lg2_floor(np + np / 2);
    return std::max<uint32_t>(std::min<uint32_t>(lg > 6 ? lg - 6 : 0, cap), 10);
}
inline uint32_t window_count(uint32_t wbits) { return (FR_BITS - 1) / wbits + 1; }

// How Pippenger cuts n scalars into batches of at most stride_cap: the
// number of batches and the scalars of each (the last may have fewer).
struct batch_cut {
    size_t batches, stride;
};
inline batch_cut cut_batches(size_t n, size_t stride_cap) {
    const size_t batches = std::max<size_t>((n + stride_cap - 1) / stride_cap, 1);
    return {batches, round_up((n + batches - 1) / batches, 32)};
}

// The automatic width of a Pippenger run of one batch of `stride` scalars,
// or of several that integrate their own buckets (msm_tuning::
// carry_buckets 0; only the pairs the integration leaves are then added
// up across batches). Taking the width of all n scalars for those gave
// 18 bits to the 2^22-scalar batches of the 32 GiB C2's H + L (2^28 scalars
// in 63 batches), whose integration of 15 x 2^17 buckets then cost about as
// much as their accumulation; a batch of 2^22 scalars takes 16.
// Batches above MAX_BATCH (a slot's batch_max, or CP_MSM_BATCH_LG) may
// reach BATCH_WBITS_MAX bits.
constexpr uint32_t BATCH_WBITS_MAX = 21;
inline uint32_t batch_window_bits(size_t stride, uint32_t wbits_max) {
    return std::min(window_bits(stride, BATCH_WBITS_MAX), wbits_max);
}

// Diagnostics: CP_MSM_WIDTH_OF_ALL set gives a run of several batches the
// width of all its scalars, as before batch_window_bits (to measure one
// against the other on the same machine). Read once.
inline bool width_of_all() {
    static const bool on = std::getenv("CP_MSM_WIDTH_OF_ALL") != nullptr;
    return on;
}

// Diagnostics: CP_MSM_BATCH_LG=k (16 to 26) lays engines out for
// Pippenger batches of up to 2^k scalars instead of MAX_BATCH's 2^22, their
// width by the same rule (lg(1.5 * 2^k) - 6, up to 21 bits: 2^25 scalars
// take 19 bits, 14 windows instead of 16); the digits cost 104 bytes a
// scalar of the batch (3.25 GiB at 2^25). To measure fewer, wider windows
// over larger batches. Read when an engine is laid out; 0 when unset.
inline uint32_t batch_lg() {
    const char *v = std::getenv("CP_MSM_BATCH_LG");
    const int k = v ? std::atoi(v) : 0;
    return k >= 16 && k <= 26 ? (uint32_t)k : 0;
}

// Diagnostics: CP_MSM_BATCH_BUCKETS set makes every Pippenger batch
// integrate its own buckets, as before carried buckets
// (msm_tuning::carry_buckets 0 for every engine; to measure one against
// the other in a whole proof). Read once.
inline bool batch_buckets() {
    static const bool on = std::getenv("CP_MSM_BATCH_BUCKETS") != nullptr;
    return on;
}

// The window width of a key's table of multiples for n bases: 20 from
// lg(1.5 n) = 20 on (13 windows, 2^19 buckets), else 17, 16 or 15. These are
// the widths whose top window still spans 15 bits or more: all windows share
// one bucket set, and a top window of a few bits piles n digits into a few
// buckets (with sppark's accumulate, one thread per bucket, width 19 at
// 2^20 bases, whose top window has 8 bits, took 177 ms in G1 against 11 ms
// at 20; the chunked accumulation spreads such buckets, but 19 bits still
// need 14 windows to 20's 13). Measured on an H200, dense scalars, 2^20
// bases, chunked accumulation (ms): G1 width 15: 18.7, 16: 14.8, 17: 11.7,
// 20: 9.7 (Pippenger without a table: 13.2); G2 15: 33.3, 16: 28.6, 17:
// 25.2, 20: 23.8 (without: 34.5). Narrower than 20 at 2^20 bases, with
// the weighted-sum finish and madd_dot, still loses: the finish does not
// shrink with the buckets (G1 1.91 ms at 19 bits as at 20), the sort and
// the accumulation grow (H + L 2^21: sort 2.69 -> 4.68, accumulation 10.94
// -> 12.62 ms), and the four MSMs of a proof at once take 50.5 ms at 19
// bits, 54.2 at 18, against 46.9 at 20 (h200-msm-tune-2e20-narrower.txt).
inline uint32_t table_window_bits(size_t n) {
    const uint32_t lg = lg2_floor(n + n / 2);
    if (lg >= 20)
        return 20;
    if (lg >= 17)
        return 17;
    return lg >= 16 ? 16 : 15;
}

// The integration of a table run's 2^(wbits-1) buckets: 2^(wbits - piece)
// rows of 2^(piece-1) buckets, one block each (sppark's integrate needs a
// row wider than twice its threads: piece >= 10).
inline uint32_t table_piece_bits(uint32_t wbits) { return std::max<uint32_t>(10, wbits - 7); }

// Most scalars one Pippenger batch takes. Each batch sorts, accumulates and
// integrates on its own; one batch of 2^20 took 18.7 ms where sppark's four
// batches took 23.0 (sort 1.5 against 3.8 ms). The digits of a batch cost
// 104 bytes per scalar, 416 MiB at this cap.
constexpr size_t MAX_BATCH = size_t(1) << 22;

// Most scalars per batch of an engine asked for batch_max (0: MAX_BATCH).
inline size_t batch_scalars(size_t batch_max) { return batch_max ? batch_max : MAX_BATCH; }

// Byte offsets of one engine's buffers inside its allocation.
struct engine_layout {
    uint32_t wbits_max = 10;
    size_t stride_cap = 32;  // scalars per Pippenger batch
    size_t nbuckets = 0;     // bucket entries (and histogram entries)
    size_t nones = 0;        // batch addition partial sums
    size_t tail_cap = 0;     // scalars the 0/1 split may leave for Pippenger
    size_t pair_stride = 0;  // entries per window row of `pairs`
    size_t digit_cap = 0;    // entries of `digits`
    size_t temp_cap = 0;     // uint2 entries of `temps`
    size_t affine_cap = 0;   // digit positions of the affine accumulation's scratch row
    size_t carry_nbuckets = 0;  // entries of `carried`: a full batch's windows at its width
    size_t buckets, ones, ones_acc, pairs, wsum, hist, temps, digits, counts, bitmap,
        tail_s, tail_p, affine, affine_max, carried;
    // A second hist, temps and digits (msm_slot_spec::overlap_sort), so
    // that one batch is sorted while the one before it accumulates; 0
    // without.
    size_t hist2 = 0, temps2 = 0, digits2 = 0;
    size_t total = 0;
};

// Bytes of the chunked accumulation's carries (msm_accumulate.cuh) for
// `rows` rows of up to `entries` digits each, in chunks of `chunk`: one
// bucket and one tag per chunk. They live in `temps`, which the sort no
// longer needs by then.
inline size_t carry_bytes(size_t rows, size_t entries, size_t bucket_bytes, uint32_t chunk) {
    const size_t chunks = rows * acc_chunks(entries, chunk);
    return align256(chunks * bucket_bytes) + chunks * sizeof(uint32_t);
}

// Bytes of the first level of a weighted sum over m buckets in segments
// of 2^sbits (msm_weigh.cuh): S a_t and p_t for each segment. They live in
// `temps`, which the carries no longer need by then.
inline size_t weigh_bytes(size_t m, uint32_t sbits, size_t bucket_bytes) {
    return align256(weigh_segments(m, sbits) * bucket_bytes) * 2;
}

// n_max: most points per MSM; bucket_bytes, affine_bytes: sizes of the
// group's bucket (xyzz) and affine point in memory; nt: integrating threads
// per window (MSM_NTHREADS / degree); degree: lanes per point; table: room
// for a table run over n_max bases (table_window_bits(n_max)): its one
// bucket set, the digits of all its windows in one row and the carries of
// their accumulation. overlap: a second set of a batch's sort buffers
// (hist2, temps2, digits2).
inline engine_layout make_layout(size_t n_max, size_t bucket_bytes, size_t affine_bytes,
                                 int sm_count, size_t scalar_bytes, size_t nt, uint32_t degree,
                                 bool table, size_t batch_max = 0, bool overlap = false) {
    engine_layout L;
    n_max = std::max<size_t>(n_max, 1);
    const uint32_t blg = batch_lg();
    const size_t max_batch = blg ? size_t(1) << blg : batch_scalars(batch_max);
    L.stride_cap = round_up(std::min(n_max, max_batch), 32);
    L.wbits_max = std::max(window_bits(n_max), batch_window_bits(L.stride_cap, BATCH_WBITS_MAX));
    for (uint32_t w = 10; w <= L.wbits_max; w++)
        L.nbuckets = std::max(L.nbuckets, (size_t)window_count(w) << (w - 1));
    // Digit rows for the narrowest width (10 bits, 26 windows) up to
    // MAX_BATCH; a larger batch has rows for its own width only, and a
    // narrower forced width cuts it smaller (msm_engine::pippenger).
    L.digit_cap = L.stride_cap > MAX_BATCH
                      ? window_count(batch_window_bits(L.stride_cap, L.wbits_max)) * L.stride_cap
                      : window_count(10) * L.stride_cap;
    L.temp_cap = 2 * L.stride_cap;
    if (table) {
        const uint32_t tw = table_window_bits(n_max);
        const size_t entries = window_count(tw) * n_max;
        L.nbuckets = std::max(L.nbuckets, size_t(1) << (tw - 1));
        L.digit_cap = std::max(L.digit_cap, entries);
        L.temp_cap = std::max(L.temp_cap, entries);
        L.affine_cap = entries;
        L.temp_cap = std::max(L.temp_cap, (carry_bytes(1, entries, bucket_bytes,
                                                       ACC_CHUNK_TABLE * degree) +
                                           7) / sizeof(uint2));
        // The first level of the weighted sum (msm_weigh.cuh), at segments
        // as narrow as 4: two points per segment.
        L.temp_cap = std::max(L.temp_cap, (weigh_bytes(size_t(1) << (tw - 1), 2, bucket_bytes) +
                                           7) / sizeof(uint2));
    }
    // The carries of a Pippenger batch's windows at the automatic width, for
    // any n up to n_max (a forced narrower width that does not fit falls
    // back to sppark's accumulate).
    for (size_t n = 32;; n = std::min(2 * n, n_max)) {
        const size_t stride = cut_batches(n, L.stride_cap).stride;
        const uint32_t w = batch_window_bits(stride, L.wbits_max);
        L.temp_cap = std::max(L.temp_cap, (carry_bytes(window_count(w), stride, bucket_bytes,
                                                       ACC_CHUNK_WINDOWS * degree) +
                                           7) / sizeof(uint2));
        if (n >= n_max)
            break;
    }
    L.nones = std::max<size_t>((size_t)sm_count * BATCH_ADD_BLOCK_SIZE / WARP_SZ, nt);
    // At most 3/4 of the points, and at most 2^23 (1 GiB of G1, 1.75 GiB of
    // G2 gathered): larger MSMs with more non-0/1 scalars than that run
    // Pippenger over all points.
    L.tail_cap = std::min<size_t>(n_max / 4 * 3, size_t(1) << 23);
    const size_t max_windows = window_count(10);
    size_t off = 0;
    auto take = [&](size_t bytes) {
        size_t at = off;
        off += align256(bytes);
        return at;
    };
    L.buckets = take(L.nbuckets * bucket_bytes);
    L.ones = take(L.nones * bucket_bytes);
    L.ones_acc = take(L.nones * bucket_bytes);
    L.pair_stride = 2 * nt;
    L.pairs = take(max_windows * L.pair_stride * bucket_bytes);
    L.wsum = take(WSUM_SLOTS * bucket_bytes);
    L.hist = take(L.nbuckets * sizeof(uint32_t));
    L.temps = take(L.temp_cap * sizeof(uint2));  // two rows of a batch, or a table run's row
    L.digits = take(L.digit_cap * sizeof(uint32_t));
    L.counts = take(COUNTS * sizeof(uint32_t));
    L.bitmap = take(round_up(n_max, 1024) / 32 * sizeof(uint32_t));
    L.tail_s = take(L.tail_cap * scalar_bytes);
    L.tail_p = take(L.tail_cap * affine_bytes);
    L.affine = take(L.affine_cap * affine_bytes);
    L.affine_max = take(sizeof(uint32_t));
    // The buckets Pippenger's batches carry (msm_engine::pippenger): the
    // windows of a full batch at its automatic width.
    {
        const uint32_t wb = batch_window_bits(L.stride_cap, L.wbits_max);
        L.carry_nbuckets = (size_t)window_count(wb) << (wb - 1);
        L.carried = take(L.carry_nbuckets * bucket_bytes);
    }
    if (overlap) {
        L.hist2 = take(L.nbuckets * sizeof(uint32_t));
        L.temps2 = take(L.temp_cap * sizeof(uint2));
        L.digits2 = take(L.digit_cap * sizeof(uint32_t));
    }
    L.total = off;
    return L;
}

}  // namespace msm_detail
}  // namespace cp_cuda
