// Bucket accumulation in affine coordinates, in rounds of pairs: the
// sorted digits of a table run's bucket set (sppark's sort: entry = point
// index | sign << 31, grouped by bucket, histogram[b] the end of bucket b's
// entries) are summed pairwise, and each round halves every bucket's list
// until one point is left per bucket. An affine addition of two points
// costs one division; Montgomery's trick turns a thread's divisions of a
// round into one inversion and three multiplications each, so a pair costs
// 6 multiplications (3 for the trick, lambda, lambda^2, y3) plus a share of
// the inversion, against 10 for the mixed xyzz addition of the chunked
// accumulation (msm_accumulate.cuh: 8M + 2S, one reduction less with
// madd_dot).
//
// Layout: a scratch row of one affine point per digit position. Round r
// (h = 2^(r-1)) adds, in every bucket of c entries, the point at relative
// position q (q a multiple of 2h, q + h < c) and the one at q + h, and
// leaves the sum at q; after the round with 2h >= c the bucket's sum is at
// its first position. Round 1 reads the points from the table through the
// digits (signs applied) and copies a bucket's unpaired last entry to the
// scratch row; later rounds read and write the scratch row only. Nothing is
// compacted, so no scan is needed: positions are the digits' own.
//
// A thread takes the pairs whose left position lies in its span of
// positions (about `per` of them: the span is per * 2h). Pass 1
// forms each pair's denominator and the running product, notes the pair's
// position and leaves the product before it in a slot that no pair of the
// round uses: the right entry's slot in round 1 (round 1's right points
// come from the table), the slot at q + h/2 after that (the right entry of
// round r - 1, consumed). One inversion of the product (sppark's
// reciprocal, lanes in pairs: every lane of the warp reaches it), then
// pass 2 takes the pairs back in reverse, recovers each inverse and writes
// the sums.
//
// The rare pairs (either point at infinity, (0, 0); equal x: a doubling, or
// a sum of zero) take a denominator of their own in the same product (2 y1
// for a doubling, 1 where nothing is divided), so one inversion still
// serves the thread. Proofs are unchanged: an MSM is one group element
// whatever the order of its additions.
//
// The rounds stop once 2h reaches the largest bucket (msm_affine_max on the
// device: a round launched past it returns at once), and msm_affine_buckets
// writes each bucket's point as an xyzz bucket for the weighted sum.
// Included by msm_engine.cuh (sppark's field and curve types must be
// defined first).
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

#include "msm_kernels.cuh"

namespace cp_cuda {
namespace msm_detail {

constexpr uint32_t AFF_THREADS = 128;
// Most positions one thread covers in a round: it walks the buckets of its
// span through the histogram, so late rounds (few pairs, far apart) cap
// the walk instead of the pairs.
constexpr uint32_t AFF_SPAN_MAX = 4096;
// Pairs per thread in a round, at most (msm_tuning::affine_pairs) and at
// least; between the two, as many as leave about two waves of threads. The
// late rounds (few pairs) take fewer threads rather than more inversions:
// an inversion costs tens of multiplications.
constexpr uint32_t AFF_PAIRS = 128;
constexpr uint32_t AFF_PAIRS_MIN = 32;
// The most a thread may take (the length of its list of pair positions).
constexpr uint32_t AFF_PAIRS_MAX = 128;

// *max_count = the most entries in one bucket b >= 1 (zeroed before).
__global__ void msm_affine_max(const uint32_t *hist, uint32_t nbuckets, uint32_t *max_count) {
    uint32_t m = 0;
    const uint32_t stride = gridDim.x * blockDim.x;
    for (uint32_t b = 1 + blockIdx.x * blockDim.x + threadIdx.x; b < nbuckets; b += stride)
        m = max(m, hist[b] - hist[b - 1]);
    for (uint32_t o = 16; o; o >>= 1)
        m = max(m, __shfl_xor_sync(0xffffffffu, m, o));
    if ((threadIdx.x & 31) == 0 && m)
        atomicMax(max_count, m);
}

// How a pair's sum is formed.
enum aff_kind : uint32_t { AFF_ADD, AFF_DBL, AFF_LEFT, AFF_RIGHT, AFF_ZERO };

// The kind of left + right and its denominator: x_r - x_l for an addition,
// 2 y_l for a doubling, 1 where nothing is divided (either point at
// infinity; a sum of zero).
template<class field_t>
__device__ __forceinline__ aff_kind pair_kind(const field_t &xl, const field_t &yl,
                                              const field_t &xr, const field_t &yr,
                                              field_t &den) {
    if (xl.is_zero() && yl.is_zero()) {
        den = field_t::one();
        return AFF_RIGHT;
    }
    if (xr.is_zero() && yr.is_zero()) {
        den = field_t::one();
        return AFF_LEFT;
    }
    den = xr - xl;
    if (!den.is_zero())
        return AFF_ADD;
    const field_t dy = yr - yl;
    if (dy.is_zero()) {  // no point of the prime-order groups has y = 0
        den = yl + yl;
        return AFF_DBL;
    }
    den = field_t::one();
    return AFF_ZERO;
}

// Loads the x (and, with `full`, y) of the pair at (p, p + h): from the
// table through the digits in round 1 (signs applied to y), else from the
// scratch row.
template<bool FIRST, class field_t, class point_h>
__device__ __forceinline__ void load_pair(const point_h *points, const uint32_t *digits,
                                          const point_h *scratch, uint32_t p, uint32_t h,
                                          bool full, field_t &xl, field_t &yl, field_t &xr,
                                          field_t &yr) {
    if constexpr (FIRST) {
        const uint32_t dl = digits[p], dr = digits[p + 1];
        const point_h &l = points[dl & 0x7fffffff];
        const point_h &r = points[dr & 0x7fffffff];
        xl = l.X;
        xr = r.X;
        if (full) {
            yl = l.Y;
            yr = r.Y;
            yl.cneg(dl >> 31);
            yr.cneg(dr >> 31);
        }
    } else {
        const point_h &l = scratch[p];
        const point_h &r = scratch[p + h];
        xl = l.X;
        xr = r.X;
        if (full) {
            yl = l.Y;
            yr = r.Y;
        }
    }
}

// One round (h = 2^(r-1); FIRST: r = 1) over the positions of row 0 from
// histogram[0] (bucket 0, digit 1, is summed by batch addition) to
// histogram[nbuckets - 1]; thread t covers `span` positions from
// histogram[0] + t span: the pairs whose left entry lies there. Returns at
// once when no bucket holds more than h entries (round 1: no entries).
template<class bucket_t, class affine_h, bool FIRST>
__launch_bounds__(AFF_THREADS) __global__
void msm_affine_round(const uint32_t *hist, uint32_t nbuckets, const uint32_t *digits,
                      const affine_h *table, void *scratch_, uint32_t h, uint32_t span,
                      const uint32_t *max_count) {
    using field_t = typename xyzz_field<bucket_t>::type;
    using point_h = affine_mem_coords<typename field_t::mem_t>;
    static_assert(sizeof(point_h) == sizeof(affine_h), "affine layout");
    // Round 1 also copies unpaired entries, so it runs whenever there are
    // entries at all.
    if (*max_count <= (FIRST ? 0 : h))
        return;  // every thread of the launch alike
    point_h *scratch = (point_h *)scratch_;
    const point_h *points = reinterpret_cast<const point_h *>(table);
    const uint32_t degree = bucket_t::degree;
    const uint64_t t = ((uint64_t)blockIdx.x * blockDim.x + threadIdx.x) / degree;
    const uint32_t end = hist[nbuckets - 1];
    const uint64_t from = hist[0] + t * span;
    const uint32_t lo = from < end ? (uint32_t)from : end;
    const uint32_t hi = from + span < end ? (uint32_t)(from + span) : end;
    const uint32_t step = 2 * h;
    const uint32_t dead = FIRST ? 1 : h / 2;  // the slot a pair's product waits in
    field_t acc = field_t::one();
    // The left positions of this thread's pairs, in order (local memory;
    // pass 2 reads them back without a chain of dependent loads). Two
    // consecutive lefts are at least h + 1 apart (a left's right is in its
    // bucket), so a span of at most per * 2h positions holds fewer than
    // 2 per + 1 of them.
    uint32_t pos[2 * AFF_PAIRS_MAX];
    uint32_t npairs = 0;
    if (lo < hi) {
        uint32_t b = bucket_of(hist, 1, nbuckets - 1, lo);
        uint32_t s = hist[b - 1], e = hist[b];
        uint32_t p = s + ((lo - s + step - 1) & ~(step - 1));
        #pragma unroll 1
        for (;;) {
            if (p >= e) {
                // Past bucket b: the next bucket with entries starts at e,
                // this thread's if e < hi (<= end).
                if (e >= hi)
                    break;
                s = e;
                do
                    b++;
                while (hist[b] <= s);
                e = hist[b];
                p = s;
                continue;
            }
            if (p >= hi)
                break;
            if (p + h < e) {
                field_t xl, yl, xr, yr, den;
                load_pair<FIRST>(points, digits, scratch, p, h, false, xl, yl, xr, yr);
                den = xr - xl;
                if (den.is_zero() || xl.is_zero() || xr.is_zero()) {
                    load_pair<FIRST>(points, digits, scratch, p, h, true, xl, yl, xr, yr);
                    (void)pair_kind(xl, yl, xr, yr, den);
                }
                scratch[p + dead].X = acc;
                acc *= den;
                pos[npairs++] = p;
            } else if constexpr (FIRST) {
                // A bucket's unpaired last entry, as it is.
                const uint32_t d = digits[p];
                const point_h &l = points[d & 0x7fffffff];
                field_t x = l.X, y = l.Y;
                y.cneg(d >> 31);
                scratch[p].X = x;
                scratch[p].Y = y;
            }
            p += step;
        }
    }
    // Every lane of the warp is here (sppark's reciprocal pairs lanes).
    field_t inv = acc;
    if (__any_sync(0xffffffffu, npairs != 0))
        inv = acc.reciprocal();
    #pragma unroll 1
    for (uint32_t k = npairs; k-- > 0;) {
        const uint32_t p = pos[k];
        const field_t before = scratch[p + dead].X;
        field_t xl, yl, xr, yr, den;
        load_pair<FIRST>(points, digits, scratch, p, h, true, xl, yl, xr, yr);
        aff_kind kind = AFF_ADD;
        den = xr - xl;
        if (den.is_zero() || xl.is_zero() || xr.is_zero())
            kind = pair_kind(xl, yl, xr, yr, den);
        const field_t inv_p = inv * before;  // 1 / den
        inv *= den;                          // 1 / (the product before this pair)
        field_t x3, y3;
        if (kind == AFF_ADD || kind == AFF_DBL) {
            field_t num;
            if (kind == AFF_ADD) {
                num = yr - yl;
            } else {
                num = xl ^ 2;
                num = num + num + num;
            }
            const field_t lambda = num * inv_p;
            x3 = lambda ^ 2;
            x3 -= xl;
            x3 -= xr;
            y3 = xl - x3;
            y3 *= lambda;
            y3 -= yl;
        } else if (kind == AFF_LEFT) {
            x3 = xl;
            y3 = yl;
        } else if (kind == AFF_RIGHT) {
            x3 = xr;
            y3 = yr;
        } else {
            x3.zero();
            y3.zero();
        }
        scratch[p].X = x3;
        scratch[p].Y = y3;
    }
}

// buckets[b] = the point left at bucket b's first position, for the
// buckets b >= 1 with entries (the others stay as they are: infinity).
template<class bucket_t, class bucket_h = typename bucket_t::mem_t>
__global__ void msm_affine_buckets(const uint32_t *hist, uint32_t nbuckets, const void *scratch_,
                                   bucket_h *buckets) {
    using field_t = typename xyzz_field<bucket_t>::type;
    using point_h = affine_mem_coords<typename field_t::mem_t>;
    using affine_t = typename bucket_t::affine_t;
    const uint32_t b = 1 + (blockIdx.x * blockDim.x + threadIdx.x) / bucket_t::degree;
    if (b >= nbuckets)
        return;  // all lanes of a point alike
    const uint32_t s = hist[b - 1];
    if (hist[b] == s)
        return;
    const point_h &pm = ((const point_h *)scratch_)[s];
    const field_t x = pm.X, y = pm.Y;
    bucket_t acc;
    acc = affine_t(x, y);
    buckets[b] = acc;
}

}  // namespace msm_detail
}  // namespace cp_cuda
