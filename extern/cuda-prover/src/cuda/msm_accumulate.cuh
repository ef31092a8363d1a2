// Bucket accumulation in equal chunks: the sorted digits of a bucket set
// (sppark's sort: entry = point index | sign << 31, grouped by bucket, with
// histogram[b] the end of bucket b's entries) are cut into chunks of a
// fixed length, one chunk per thread (degree lanes), whatever the buckets'
// sizes; a launch takes one bucket set (a table run) or all windows of a
// Pippenger batch (one row each). sppark's accumulate takes one bucket per
// thread instead: a warp waits for its largest bucket (bucket sizes are
// Poisson-spread), and a bucket of thousands of points (the top digits of
// many short scalars) is summed by one thread alone. Measured on an H200
// over a table at 2^20 bases: accumulation 7.69 -> 6.58 ms in G1, 21.95 ->
// 19.00 in G2; 16K 63-bit scalars next to 2^20 dense ones no longer slow
// the run (33 ms before, 11.9 now). Nsight Compute on table runs at 2^20
// bases: the FMA-heavy pipe (integer multiply-adds) busy 82% of the
// cycles in H + L, 78% in G1, 77% in G2, memory 8-9%; 168 registers, one
// block per SM (tests/results/h200-ncu-accumulate-2e20.txt).
//
// msm_accumulate_chunks sums each run of one bucket inside a chunk. The
// chunk holding a bucket's first entry owns it and writes its run's sum to
// the bucket; a run that continues a bucket from an earlier chunk (only a
// chunk's first run can) is left in the chunk's carry slot, tagged with the
// bucket. msm_add_carries then adds the carries into their buckets in two
// passes: groups of up to ACC_GROUP carries of one bucket are summed first,
// then each bucket's group sums, so a bucket spanning c chunks costs a
// thread about ACC_GROUP + c / ACC_GROUP additions, not c. Buckets without
// entries must be infinity before (the caller zeroes them). Included by
// msm_engine.cuh (sppark's field and curve types must be defined first).
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

#include "msm_madd.cuh"

namespace cp_cuda {
namespace msm_detail {

constexpr uint32_t ACC_THREADS = 384;
// Entries per chunk, per lane of a point. A table run (buckets of about 26
// entries at 2^20 bases) aims at 96 and shortens its chunks to fill whole
// waves of blocks (msm_engine::table_chunk; at 2^20 bases, 90 entries in 3
// waves), never below 32, the length its carries have room for. Measured
// on an H200, 2^20 bases over tables (ms, G1 / G2 / H+L alone / all four
// of a proof at once): 32: 9.6 / 23.7 / 17.3 / 53.9 (with the finish of
// before); 64: 10.4 / 25.7 / 17.2 / 49.4; 96: 9.8 / 23.8 / 17.1 / 49.0;
// fitted from 96: 9.5 / 22.9 / 16.6 / 49.1. Longer chunks leave fewer
// carries; alone, a last wave of a few blocks costs a whole wave.
// Pippenger's windows (about 128 entries per bucket) aim at 96 the same
// way, never below 64: dense 2^20 MSMs 13.3 -> 12.4 ms in G1, 34.4 -> 32.4
// in G2 against chunks of 64; 128 without fitting: 14.0 and 37.5
// (h200-msm-tune-2e20.txt).
constexpr uint32_t ACC_CHUNK_TABLE = 32;
constexpr uint32_t ACC_CHUNK_TABLE_TARGET = 96;
constexpr uint32_t ACC_CHUNK_WINDOWS = 64;
constexpr uint32_t ACC_CHUNK_WINDOWS_TARGET = 96;
// The shortest chunk of a run too small to fill one wave of blocks (the
// split's rest of 0/1-heavy scalars; msm_engine::fitted_chunk), where its
// carries fit, when tuned so (msm_tuning::small_runs).
constexpr uint32_t ACC_CHUNK_SHORT = 16;
// Carries one thread sums in the first pass of msm_add_carries.
constexpr uint32_t ACC_GROUP = 32;
// The tag of a chunk without a carry.
constexpr uint32_t NO_BUCKET = 0xffffffffu;

// Chunks of `chunk` entries for `entries` sorted digits.
inline size_t acc_chunks(size_t entries, uint32_t chunk) { return (entries + chunk - 1) / chunk; }

// One row (bucket set) of an accumulation: row y = blockIdx.y of a launch
// finds its buckets, histogram, digits and carries at y times the strides.
template<class bucket_h> struct acc_rows {
    bucket_h *buckets;          // nbuckets per row
    const uint32_t *histogram;  // nbuckets per row
    const uint32_t *digits;     // digit_stride per row
    bucket_h *carry;            // nchunks per row
    uint32_t *carry_bucket;     // nchunks per row
    uint32_t nbuckets, nchunks, chunk;
    size_t digit_stride;
};

// Sums the runs of each chunk of a row's digits, from histogram[0] in row
// 0 (bucket 0 of row 0, digit 1, is summed by batch addition) and from 0 in
// the others, to histogram[nbuckets - 1]; chunk t starts at that start + t
// * chunk. nchunks may exceed the chunks there are (the host does not know
// the counts); the extra ones only clear their tag.
// THREADS and MIN_BLOCKS pick the block size and the register budget
// (msm_engine::acc_launch); DOT, the addition: madd_dot (msm_madd.cuh), or
// sppark's xyzz_t::add.
template<class bucket_t, class affine_h, uint32_t THREADS = ACC_THREADS, uint32_t MIN_BLOCKS = 1,
         bool DOT = false, class bucket_h = typename bucket_t::mem_t,
         class affine_t = typename bucket_t::affine_t>
__launch_bounds__(THREADS, MIN_BLOCKS) __global__
void msm_accumulate_chunks(acc_rows<bucket_h> r, const affine_h points[]) {
    using field_t = typename xyzz_field<bucket_t>::type;
    using point_h = affine_mem_coords<typename field_t::mem_t>;
    static_assert(sizeof(point_h) == sizeof(affine_h), "affine layout");
    const uint32_t degree = bucket_t::degree;
    const uint32_t t = (blockIdx.x * blockDim.x + threadIdx.x) / degree;
    if (t >= r.nchunks)
        return;  // all lanes of a point alike
    const uint32_t y = blockIdx.y;
    bucket_h *buckets = r.buckets + (size_t)y * r.nbuckets;
    const uint32_t *histogram = r.histogram + (size_t)y * r.nbuckets;
    const uint32_t *digits = r.digits + y * r.digit_stride;
    uint32_t *carry_bucket = r.carry_bucket + (size_t)y * r.nchunks;
    const uint32_t first = y == 0 ? 1 : 0;
    const uint32_t end = histogram[r.nbuckets - 1];
    const uint32_t pos = (first ? histogram[0] : 0) + t * r.chunk;
    if (pos >= end) {
        carry_bucket[t] = NO_BUCKET;
        return;
    }
    const uint32_t stop = min(pos + r.chunk, end);
    uint32_t b = bucket_of(histogram, first, r.nbuckets - 1, pos);
    uint32_t bucket_end = histogram[b];
    bool owner = (b ? histogram[b - 1] : 0) == pos;
    uint32_t tag = NO_BUCKET;
    bucket_t acc;
    bool fresh = true;
    #pragma unroll 1
    for (uint32_t i = pos; i < stop; i++) {
        const uint32_t digit = digits[i];
        if constexpr (DOT) {
            const point_h &pm = reinterpret_cast<const point_h &>(points[digit & 0x7fffffff]);
            const field_t x2 = pm.X, y2 = pm.Y;
            if (fresh) {
                acc = affine_t(x2, y2);
                acc.cneg(digit >> 31);
                fresh = false;
            } else {
                madd_dot(acc, x2, y2, digit >> 31);
            }
        } else {
            const affine_t p = points[digit & 0x7fffffff];
            if (fresh) {
                acc = p;
                acc.cneg(digit >> 31);
                fresh = false;
            } else {
                acc.add(p, digit >> 31);
            }
        }
        if (i + 1 == bucket_end || i + 1 == stop) {
            if (owner) {
                buckets[b] = acc;
            } else {
                r.carry[(size_t)y * r.nchunks + t] = acc;
                tag = b;
            }
            if (i + 1 < stop) {
                // The next bucket with entries starts at i + 1.
                do
                    b++;
                while (histogram[b] <= i + 1);
                bucket_end = histogram[b];
                owner = true;
                fresh = true;
            }
        }
    }
    carry_bucket[t] = tag;
}

// The carries of each row into its buckets. Pass 0: a carry that starts a
// group (its bucket differs from the previous carry's, or its index is a
// multiple of ACC_GROUP) sums the group's carries of the same bucket into
// its own slot. Pass 1: a carry that starts its bucket's run adds its
// group's sum and those of the run's later groups (at multiples of
// ACC_GROUP) to the bucket.
template<class bucket_t, class bucket_h = typename bucket_t::mem_t>
__launch_bounds__(ACC_THREADS) __global__
void msm_add_carries(acc_rows<bucket_h> r, uint32_t pass) {
    const uint32_t degree = bucket_t::degree;
    const uint32_t t = (blockIdx.x * blockDim.x + threadIdx.x) / degree;
    if (t >= r.nchunks)
        return;
    const uint32_t y = blockIdx.y;
    bucket_h *buckets = r.buckets + (size_t)y * r.nbuckets;
    bucket_h *carry = r.carry + (size_t)y * r.nchunks;
    const uint32_t *carry_bucket = r.carry_bucket + (size_t)y * r.nchunks;
    const uint32_t b = carry_bucket[t];
    if (b == NO_BUCKET)
        return;
    const bool run_head = t == 0 || carry_bucket[t - 1] != b;
    const uint32_t n = r.nchunks;
    if (pass == 0) {
        if (!run_head && t % ACC_GROUP != 0)
            return;
        bucket_t acc = carry[t];
        uint32_t u = t + 1;
        #pragma unroll 1
        for (; u < n && u % ACC_GROUP != 0 && carry_bucket[u] == b; u++) {
            bucket_t c = carry[u];
            acc.add(c);
        }
        if (u != t + 1)
            carry[t] = acc;
        return;
    }
    if (!run_head)
        return;
    bucket_t acc = buckets[b];
    bucket_t c = carry[t];
    acc.add(c);
    #pragma unroll 1
    for (uint32_t u = (t / ACC_GROUP + 1) * ACC_GROUP; u < n && carry_bucket[u] == b;
         u += ACC_GROUP) {
        c = carry[u];
        acc.add(c);
    }
    buckets[b] = acc;
}

}  // namespace msm_detail
}  // namespace cp_cuda
