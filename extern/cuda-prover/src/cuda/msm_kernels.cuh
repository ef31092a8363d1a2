// The kernels of our Pippenger driver that sppark does not have: finishing
// the window sums on the device (after sppark's integrate), the split of
// scalars into 0, 1 and the rest, and the rows of a key's table of
// multiples (msm_table_step). Included by msm_engine.cuh and msm_madd.cuh,
// for msm.cu only (sppark's field and curve types must be defined before
// this header).
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

namespace cp_cuda {
namespace msm_detail {

// Slots of the per-MSM window-sum array: windows 0..MAX_WINDOWS-1 (or the
// rows of a table run's one bucket set) and one slot for the points whose
// digit (or scalar) is 1, added with weight 1.
constexpr uint32_t MAX_WINDOWS = 128;
constexpr uint32_t ONES_SLOT = MAX_WINDOWS;
constexpr uint32_t WSUM_SLOTS = MAX_WINDOWS + 1;

// What msm_classify counts: scalars equal to 1, the others that are not 0,
// and of those the short ones.
constexpr uint32_t COUNTS = 3;

// Block size of msm_finish_windows, msm_classify and msm_table_step.
constexpr uint32_t FINISH_THREADS = 256;
constexpr uint32_t CLASSIFY_THREADS = 256;
constexpr uint32_t TABLE_THREADS = 256;

// The field of an xyzz bucket type, and its coordinates (xyzz_t keeps them
// private; this view has the same members in the same order).
template<class bucket_t> struct xyzz_field;
template<class F, class H, const H *A4> struct xyzz_field<xyzz_t<F, H, A4>> {
    using type = F;
    static constexpr bool a_is_zero = A4 == nullptr;
};
template<class field_t> struct xyzz_coords {
    field_t X, Y, ZZZ, ZZ;
};

// The bucket of sorted-digit position pos: the first b in [first, last]
// with histogram[b] > pos (histogram[b]: the end of bucket b's entries;
// histogram[last] > pos must hold).
__device__ __forceinline__ uint32_t bucket_of(const uint32_t *histogram, uint32_t first,
                                              uint32_t last, uint32_t pos) {
    while (first < last) {
        const uint32_t mid = (first + last) / 2;
        if (histogram[mid] > pos)
            last = mid;
        else
            first = mid + 1;
    }
    return first;
}

// An affine point in memory (sppark's affine_t::mem_t, whose members are
// private): x, y; infinity is (0, 0).
template<class field_h> struct affine_mem_coords {
    field_h X, Y;
};

// p = 2p for curves with a = 0 (dbl-2008-s-1: 6M + 3S, against the 4M more
// and the branches of xyzz_t::add(p) with itself). Infinity (ZZ = ZZZ = 0)
// stays infinity; there are no points of order 2 in the prime-order groups.
template<class bucket_t>
__device__ __forceinline__ void dbl_inplace(bucket_t &p) {
    using field_t = typename xyzz_field<bucket_t>::type;
    static_assert(xyzz_field<bucket_t>::a_is_zero, "doubling formula assumes a = 0");
    static_assert(sizeof(xyzz_coords<field_t>) == sizeof(bucket_t), "xyzz layout");
    auto &q = reinterpret_cast<xyzz_coords<field_t> &>(p);
    field_t U = q.Y + q.Y;
    field_t V = U ^ 2;
    field_t W = U * V;
    field_t S = q.X * V;
    field_t M = q.X ^ 2;
    M = M + M + M;
    field_t X3 = M ^ 2;
    X3 -= S;
    X3 -= S;
    S -= X3;
    S *= M;
    q.Y *= W;
    q.Y = S - q.Y;
    q.X = X3;
    q.ZZ *= V;
    q.ZZZ *= W;
}

// dst[row][i] += src[row][i] for i < count, rows = gridDim.y (row strides in
// entries); degree lanes per entry.
template<class bucket_t, class bucket_h = typename bucket_t::mem_t>
__launch_bounds__(256) __global__
void msm_add_rows(bucket_h dst[], size_t dst_stride, const bucket_h src[], size_t src_stride,
                  uint32_t count) {
    const uint32_t degree = bucket_t::degree;
    bucket_h *d = dst + blockIdx.y * dst_stride;
    const bucket_h *s = src + blockIdx.y * src_stride;
    const uint32_t lanes = gridDim.x * blockDim.x / degree;
    #pragma unroll 1
    for (uint32_t i = (blockIdx.x * blockDim.x + threadIdx.x) / degree; i < count; i += lanes) {
        bucket_t x = d[i];
        bucket_t y = s[i];
        x.add(y);
        d[i] = x;
    }
}

// k * a for a small k >= 0, by double-and-add.
template<class bucket_t>
__device__ __forceinline__ bucket_t small_mul(const bucket_t &a, uint32_t k) {
    bucket_t r;
    r.inf();
    if (k == 0)
        return r;
    r = a;
    #pragma unroll 1
    for (int bit = 30 - __clz(k); bit >= 0; bit--) {
        dbl_inplace(r);
        if ((k >> bit) & 1)
            r.add(a);
    }
    return r;
}

// out[i] = 2^wbits in[i] for i < n, affine points in memory
// (affine_mem_coords): wbits doublings in Jacobian coordinates
// (dbl-2009-l, a = 0: 2M + 5S), then back to affine with one inversion for
// the N points of a thread (Montgomery's trick; infinity has Z = 0, stays
// out of the product and comes out as (0, 0)). A point takes `degree`
// lanes; thread t takes points t, t + lanes, ..., and every lane reaches the
// inversion (sppark's reciprocal pairs lanes). The rows are untyped in the
// signature: field_t::mem_t is another type on the host.
template<class field_t, uint32_t N>
__launch_bounds__(TABLE_THREADS) __global__
void msm_table_step(void *out_, const void *in_, size_t n, uint32_t wbits) {
    using point_h = affine_mem_coords<typename field_t::mem_t>;
    point_h *out = (point_h *)out_;
    const point_h *in = (const point_h *)in_;
    const uint32_t degree = field_t::degree;
    const size_t lanes = (size_t)gridDim.x * blockDim.x / degree;
    const size_t tid = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) / degree;
    field_t X[N], Y[N], Z[N], prod[N];
    bool inf[N];
    #pragma unroll 1
    for (uint32_t k = 0; k < N; k++) {
        const size_t i = tid + k * lanes;
        field_t x, y, z;
        if (i < n) {
            x = in[i].X;
            y = in[i].Y;
            z = field_t::one(x.is_zero() && y.is_zero());
        } else {
            x.zero();
            y.zero();
            z.zero();
        }
        #pragma unroll 1
        for (uint32_t b = 0; b < wbits; b++) {
            field_t A = x ^ 2, B = y ^ 2;
            field_t C = B ^ 2;
            field_t D = x + B;
            D = D ^ 2;
            D -= A;
            D -= C;
            D += D;
            field_t E = A + A;
            E += A;
            z *= y;
            z += z;
            x = E ^ 2;
            x -= D;
            x -= D;
            C += C;
            C += C;
            C += C;
            y = D - x;
            y *= E;
            y -= C;
        }
        X[k] = x;
        Y[k] = y;
        inf[k] = z.is_zero();
        Z[k] = inf[k] ? field_t::one() : z;
        prod[k] = k ? prod[k - 1] * Z[k] : Z[k];
    }
    field_t inv = prod[N - 1].reciprocal();
    #pragma unroll 1
    for (uint32_t k = N; k-- > 0;) {
        field_t zi = k ? inv * prod[k - 1] : inv;
        if (k)
            inv *= Z[k];
        const size_t i = tid + k * lanes;
        if (i < n) {
            field_t x, y;
            if (inf[k]) {
                x.zero();
                y.zero();
            } else {
                field_t zi2 = zi ^ 2;
                x = X[k] * zi2;
                zi2 *= zi;
                y = Y[k] * zi2;
            }
            out[i].X = x;
            out[i].Y = y;
        }
    }
}

// sppark's integrate leaves in window w's row, for each of the nt =
// blockDim/degree integrating threads t, the pair (p_t, a_t) at [2t], [2t+1]:
// a_t is the sum of the thread's segment of buckets and p_t its weighted
// sum. The pairs of every batch are added up in `pairs` (row w at w *
// pair_stride) by msm_add_rows. The window's value is sum_t p_t + t *
// 2^(lsbits-1-log2 nt) * a_t, or for a top window narrower than log2 nt + 1
// bits, sum_t (t / 2^(log2 nt - lsbits + 1) + 1) * a_t (the sums sppark's
// host-side integrate_row forms). With `flat`, the rows are consecutive
// pieces of one bucket set (a table run): row w's bucket j holds digit
// w 2^(wbits-1) + j + 1, so each a_t weighs w 2^(wbits-1) more. Block w <
// nwins reduces window w and adds it to wsum[w]; block nwins reduces the nones partial sums of the
// batch additions (scalars or digits 1) into wsum[ONES_SLOT]. The rows are
// reused as scratch; `ones` must have room for nt entries.
template<class bucket_t, class bucket_h = typename bucket_t::mem_t>
__launch_bounds__(FINISH_THREADS) __global__
void msm_finish_windows(bucket_h pairs[], size_t pair_stride, uint32_t nwins, uint32_t wbits,
                        uint32_t nbits, bucket_h ones[], uint32_t nones, bucket_h wsum[],
                        bool flat) {
    const uint32_t degree = bucket_t::degree;
    const uint32_t nt = blockDim.x / degree;
    const uint32_t tid = threadIdx.x / degree;
    const uint32_t w = blockIdx.x;
    bucket_h *row;
    uint32_t slot;
    bucket_t q;
    if (w < nwins) {
        row = pairs + (size_t)w * pair_stride;
        slot = w;
        bucket_t p = row[2 * tid];
        bucket_t a = row[2 * tid + 1];
        const uint32_t ntbits = 31 - __clz(nt);
        const uint32_t lsbits = (w + 1) * wbits > nbits ? nbits - w * wbits : wbits;
        if (lsbits - 1 > ntbits) {
            q = p;
            const uint32_t row_base = flat ? w << (wbits - 1) : 0;
            bucket_t m = small_mul(a, (tid << (lsbits - 1 - ntbits)) + row_base);
            q.add(m);
        } else {
            q = small_mul(a, (tid >> (ntbits - (lsbits - 1))) + 1);
        }
    } else {
        row = ones;
        slot = ONES_SLOT;
        q.inf();
        #pragma unroll 1
        for (uint32_t i = tid; i < nones; i += nt) {
            bucket_t x = ones[i];
            q.add(x);
        }
    }
    __syncthreads();  // every thread has read its inputs before the row is reused
    row[tid] = q;
    __syncthreads();
    #pragma unroll 1
    for (uint32_t s = nt / 2; s > 0; s >>= 1) {
        if (tid < s) {
            bucket_t x = row[tid];
            bucket_t y = row[tid + s];
            x.add(y);
            row[tid] = x;
        }
        __syncthreads();
    }
    if (tid == 0) {
        bucket_t x = row[0];
        bucket_t y = wsum[slot];
        x.add(y);
        wsum[slot] = x;
    }
}

// Splits n scalars (Montgomery form, 8 words each) by value: bit i of
// ones_bitmap is set where scalar i is 1 (the bitmap is written up to the
// next multiple of 1024 bits, zeros past n); counts[0] += the number of 1s;
// the other non-zero scalars and their points are appended, in no
// particular order, to tail_scalars / tail_points at atomically reserved
// positions counted in counts[1] (entries past `cap` are counted, not
// written); counts[2] += those of them that are short: below 2^240 in
// absolute value (the smaller of s and r - s, as Pippenger's digits see
// it), which a random field element is with probability 2^-13.9. counts
// must be zero before.
template<class affine_h, class scalar_t>
__launch_bounds__(CLASSIFY_THREADS) __global__
void msm_classify(const scalar_t scalars[], const affine_h points[], uint32_t n,
                  uint32_t ones_bitmap[], uint32_t counts[], scalar_t tail_scalars[],
                  affine_h tail_points[], uint32_t cap) {
    // R mod r, the scalar 1 in Montgomery form, as 32-bit words.
    const uint32_t one[8] = {0xfffffffeu, 0x00000001u, 0x00034802u, 0x5884b7fau,
                             0xecbc4ff5u, 0x998c4fefu, 0xacc5056fu, 0x1824b159u};
    const uint32_t lane = threadIdx.x % 32;
    const uint32_t padded = (n + 1023) & ~1023u;
    #pragma unroll 1
    for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < padded;
         i += gridDim.x * blockDim.x) {
        bool is_one = false, is_other = false;
        if (i < n) {
            const uint4 *s = reinterpret_cast<const uint4 *>(&scalars[i]);
            const uint4 lo = s[0], hi = s[1];
            const uint32_t v[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
            uint32_t nz = 0, ne = 0;
            #pragma unroll
            for (int k = 0; k < 8; k++) {
                nz |= v[k];
                ne |= v[k] ^ one[k];
            }
            is_one = ne == 0;
            is_other = nz != 0 && ne != 0;
        }
        bool is_short = false;
        if (is_other) {
            scalar_t v = scalars[i];
            v.from();
            (void)v.abs();
            is_short = (v[7] >> 16) == 0;
        }
        const uint32_t ones = __ballot_sync(0xffffffffu, is_one);
        const uint32_t others = __ballot_sync(0xffffffffu, is_other);
        const uint32_t shorts = __ballot_sync(0xffffffffu, is_short);
        uint32_t base = 0;
        if (lane == 0) {
            ones_bitmap[i / 32] = ones;
            if (ones)
                atomicAdd(&counts[0], (uint32_t)__popc(ones));
            if (others)
                base = atomicAdd(&counts[1], (uint32_t)__popc(others));
            if (shorts)
                atomicAdd(&counts[2], (uint32_t)__popc(shorts));
        }
        base = __shfl_sync(0xffffffffu, base, 0);
        if (is_other) {
            const uint32_t pos = base + __popc(others & ((1u << lane) - 1));
            if (pos < cap) {
                tail_scalars[pos] = scalars[i];
                tail_points[pos] = points[i];
            }
        }
    }
}

}  // namespace msm_detail
}  // namespace cp_cuda
