// The kernels of point_batch.hpp: fixed-base products of the generators
// (a key's points from its scalars) and prime-order subgroup tests (a
// loaded key's points), one thread per point or per run of points, in
// Jacobian coordinates over sppark's Fp (an Fp2 element here is two Fp
// values in one thread, not sppark's two-lane fp2_t).
#define TAKE_RESPONSIBILITY_FOR_ERROR_MESSAGE

#include <cuda_runtime.h>

#include <ff/bls12-381.hpp>

#include "curve_constants.hpp"
#include "point_batch.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

namespace cp_cuda {
namespace {

namespace cc = cp::curve;

// ------------------------------------------------------------- fields
// One interface over Fp (fp_t) and Fp2 (f2), for the point formulas.
struct f2 {
    fp_t re, im;
};

__device__ __forceinline__ fp_t zero_fp() {
    fp_t z;
    z.zero();
    return z;
}
__device__ __forceinline__ bool is_zero(const fp_t &a) { return a.is_zero(); }
__device__ __forceinline__ fp_t sqr(const fp_t &a) { return a ^ 2; }
__device__ __forceinline__ fp_t neg(const fp_t &a) {
    fp_t r = a;
    r.cneg(true);
    return r;
}
__device__ __forceinline__ fp_t inverse(const fp_t &a) { return a.reciprocal(); }
template <class F> __device__ __forceinline__ F one();
template <> __device__ __forceinline__ fp_t one<fp_t>() { return fp_t::one(); }
template <class F> __device__ __forceinline__ F zero();
template <> __device__ __forceinline__ fp_t zero<fp_t>() { return zero_fp(); }

__device__ __forceinline__ f2 operator+(const f2 &a, const f2 &b) { return {a.re + b.re, a.im + b.im}; }
__device__ __forceinline__ f2 operator-(const f2 &a, const f2 &b) { return {a.re - b.re, a.im - b.im}; }
__device__ __forceinline__ f2 operator*(const f2 &a, const f2 &b) {
    const fp_t t0 = a.re * b.re, t1 = a.im * b.im;
    fp_t im = (a.re + a.im) * (b.re + b.im);
    im -= t0;
    im -= t1;
    return {t0 - t1, im};
}
__device__ __forceinline__ f2 sqr(const f2 &a) {
    const fp_t t = a.re * a.im;
    return {(a.re + a.im) * (a.re - a.im), t + t};
}
__device__ __forceinline__ bool is_zero(const f2 &a) { return a.re.is_zero() & a.im.is_zero(); }
__device__ __forceinline__ f2 neg(const f2 &a) { return {neg(a.re), neg(a.im)}; }
__device__ __forceinline__ f2 conj(const f2 &a) { return {a.re, neg(a.im)}; }
__device__ __forceinline__ f2 inverse(const f2 &a) {
    // 1/(re + im i) = (re - im i) / (re^2 + im^2)
    const fp_t n = inverse(sqr(a.re) + sqr(a.im));
    return {a.re * n, neg(a.im * n)};
}
template <> __device__ __forceinline__ f2 one<f2>() { return {fp_t::one(), zero_fp()}; }
template <> __device__ __forceinline__ f2 zero<f2>() { return {zero_fp(), zero_fp()}; }

// Constants in blst's limb layout, as sppark's 32-bit limbs.
__device__ __forceinline__ fp_t fp_const(const uint32_t *limbs) {
    return *reinterpret_cast<const fp_t *>(limbs);
}

#define LIMBS32(a)                                                                            \
    {(uint32_t)(a[0]), (uint32_t)(a[0] >> 32), (uint32_t)(a[1]), (uint32_t)(a[1] >> 32),     \
     (uint32_t)(a[2]), (uint32_t)(a[2] >> 32), (uint32_t)(a[3]), (uint32_t)(a[3] >> 32),     \
     (uint32_t)(a[4]), (uint32_t)(a[4] >> 32), (uint32_t)(a[5]), (uint32_t)(a[5] >> 32)}

__device__ __constant__ uint32_t BETA_SQ[12] = LIMBS32(cc::BETA_SQ);
__device__ __constant__ uint32_t PSI_X_IM[12] = LIMBS32(cc::PSI_X_IM);
__device__ __constant__ uint32_t PSI_Y_RE[12] = LIMBS32(cc::PSI_Y_RE);
__device__ __constant__ uint32_t PSI_Y_IM[12] = LIMBS32(cc::PSI_Y_IM);

// ------------------------------------------------------------- points
// Jacobian (X, Y, Z): x = X/Z^2, y = Y/Z^3; Z = 0 is the point at infinity.
// Both curves have a = 0.
template <class F> struct jac {
    F X, Y, Z;
};

template <class F> __device__ __forceinline__ jac<F> infinity() {
    return {one<F>(), one<F>(), zero<F>()};
}
template <class F> __device__ __forceinline__ bool is_inf(const jac<F> &p) { return is_zero(p.Z); }

// dbl-2009-l; the point at infinity and a point with y = 0 give Z = 0.
template <class F> __device__ jac<F> dbl(const jac<F> &p) {
    const F A = sqr(p.X), B = sqr(p.Y), C = sqr(B);
    F D = sqr(p.X + B) - A - C;
    D = D + D;
    const F E = A + A + A;
    jac<F> r;
    r.X = sqr(E) - D - D;
    F C8 = C + C;
    C8 = C8 + C8;
    C8 = C8 + C8;
    r.Y = E * (D - r.X) - C8;
    const F yz = p.Y * p.Z;
    r.Z = yz + yz;
    return r;
}

// p + (x2, y2) for an affine point that is not infinity (madd-2007-bl),
// with the cases of equal and opposite points.
template <class F> __device__ jac<F> madd(const jac<F> &p, const F &x2, const F &y2) {
    if (is_inf(p)) return {x2, y2, one<F>()};
    const F Z1Z1 = sqr(p.Z);
    const F H = x2 * Z1Z1 - p.X;
    F r = y2 * p.Z * Z1Z1 - p.Y;
    if (is_zero(H)) {
        if (is_zero(r)) return dbl(jac<F>{x2, y2, one<F>()});
        return infinity<F>();
    }
    const F HH = sqr(H);
    F I = HH + HH;
    I = I + I;
    const F J = H * I;
    r = r + r;
    const F V = p.X * I;
    jac<F> o;
    o.X = sqr(r) - J - V - V;
    const F t = p.Y * J;
    o.Y = r * (V - o.X) - t - t;
    o.Z = sqr(p.Z + H) - Z1Z1 - HH;
    return o;
}

// [k]P for an affine P (not infinity), k given by its bits from the top
// set bit down: double and add.
template <class F> __device__ jac<F> mul_bits(const F &x, const F &y, uint64_t hi, uint64_t lo) {
    jac<F> acc{x, y, one<F>()};
    int top = hi ? 127 - __clzll(hi) : 63 - __clzll(lo);
    for (int b = top - 1; b >= 0; b--) {
        acc = dbl(acc);
        const bool bit = b >= 64 ? (hi >> (b - 64)) & 1 : (lo >> b) & 1;
        if (bit) acc = madd(acc, x, y);
    }
    return acc;
}

// Whether Jacobian q equals the affine (x, y), q not infinity.
template <class F> __device__ bool equals(const jac<F> &q, const F &x, const F &y) {
    if (is_inf(q)) return false;
    const F zz = sqr(q.Z), zzz = zz * q.Z;
    return is_zero(q.X - x * zz) & is_zero(q.Y - y * zzz);
}

// ------------------------------------------------------------- kernels
constexpr unsigned THREADS = 128;
// Points per thread of a fixed-base product: their affine conversions share
// one inversion.
constexpr unsigned PER_THREAD = 8;

__global__ void g1_subgroup(const fp_t *pts, size_t n, unsigned long long *first_bad) {
    const size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i >= n) return;
    const fp_t x = pts[2 * i], y = pts[2 * i + 1];
    // -[z^2]P == sigma^2(P) = (beta^2 x, y): [|z|^2]P == (beta^2 x, -y).
    const jac<fp_t> q = mul_bits(x, y, cc::Z_SQ_HI, cc::Z_SQ_LO);
    const fp_t bx = fp_const(BETA_SQ) * x;
    if (!equals(q, bx, neg(y))) atomicMin(first_bad, (unsigned long long)i);
}

__global__ void g2_subgroup(const f2 *pts, size_t n, unsigned long long *first_bad) {
    const size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i >= n) return;
    const f2 x = pts[2 * i], y = pts[2 * i + 1];
    // [z]P == psi(P), z < 0: [|z|]P == -psi(P).
    const jac<f2> q = mul_bits(x, y, 0, cc::Z_ABS);
    const f2 px = conj(x) * f2{zero_fp(), fp_const(PSI_X_IM)};
    const f2 py = conj(y) * f2{fp_const(PSI_Y_RE), fp_const(PSI_Y_IM)};
    if (!equals(q, px, neg(py))) atomicMin(first_bad, (unsigned long long)i);
}

// sppark's reciprocal pairs each lane with its neighbour through warp
// shuffles over the full mask: every lane of a warp must reach an inverse
// together, so no thread of these kernels returns before its inversion
// (a lane past the end inverts a dummy value and stores nothing). A lane
// that had returned made its neighbour's inverse wrong: the last thread's
// points of a section whose thread count was odd.

// Row k of the table: entry j = (j + 1) * windows[k], for j < HALF.
template <class F>
__global__ void build_table(const F *windows, F *table) {
    const size_t entries = (size_t)cc::WINDOWS * cc::HALF;
    const size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    const bool live = i < entries;
    const size_t e = live ? i : 0;
    const size_t k = e / cc::HALF, j = e % cc::HALF;
    const F x = windows[2 * k], y = windows[2 * k + 1];
    const jac<F> p = mul_bits(x, y, 0, j + 1);
    // (j + 1) < r and windows[k] has order r: never infinity.
    const F zi = inverse(p.Z), zi2 = sqr(zi);
    if (!live) return;
    table[2 * i] = p.X * zi2;
    table[2 * i + 1] = p.Y * zi2 * zi;
}

template <class F>
__global__ void fixed_base(const fr_t *scalars, size_t n, const F *table, F *out) {
    const size_t first = (blockIdx.x * (size_t)blockDim.x + threadIdx.x) * PER_THREAD;
    // A thread past the end has no points but still inverts (see above).
    const unsigned cnt = first < n ? (unsigned)min((size_t)PER_THREAD, n - first) : 0;
    jac<F> acc[PER_THREAD];
    F before[PER_THREAD];  // product of the Z's before point i
    F run = one<F>();
    for (unsigned i = 0; i < cnt; i++) {
        fr_t s = scalars[first + i];
        s.from();  // Montgomery form to the integer
        jac<F> a = infinity<F>();
        uint32_t carry = 0;
        for (unsigned k = 0; k < cc::WINDOWS; k++) {
            uint32_t d = ((s[k >> 1] >> ((k & 1) * 16)) & 0xffff) + carry;
            const bool negative = d > cc::HALF;
            carry = negative;
            if (negative) d = (1u << cc::WINDOW_BITS) - d;
            if (d) {
                const size_t e = (size_t)k * cc::HALF + d - 1;
                const F y = table[2 * e + 1];
                a = madd(a, table[2 * e], negative ? neg(y) : y);
            }
        }
        acc[i] = a;
        before[i] = run;
        if (!is_inf(a)) run = run * a.Z;
    }
    F inv = inverse(run);  // 1 / (product of every finite point's Z)
    for (unsigned i = cnt; i-- > 0;) {
        F *o = out + 2 * (first + i);
        if (is_inf(acc[i])) {
            o[0] = zero<F>();
            o[1] = zero<F>();
            continue;
        }
        const F zi = inv * before[i];
        inv = inv * acc[i].Z;
        const F zi2 = sqr(zi);
        o[0] = acc[i].X * zi2;
        o[1] = acc[i].Y * zi2 * zi;
    }
}

// Points moved per chunk: a chunk of G2 points is 768 MiB.
constexpr size_t CHUNK = size_t(1) << 22;

size_t affine_bytes(msm_group g) { return g == msm_group::g1 ? 96 : 192; }

unsigned blocks(size_t threads) { return (unsigned)((threads + THREADS - 1) / THREADS); }

// A device buffer freed on scope exit.
struct dev_buf {
    void *p = nullptr;
    explicit dev_buf(size_t bytes) { CUDA_OK(cudaMalloc(&p, bytes)); }
    ~dev_buf() {
        if (p) cudaFree(p);
    }
    dev_buf(const dev_buf &) = delete;
    dev_buf &operator=(const dev_buf &) = delete;
};

}  // namespace

point_batch::point_batch(cudaStream_t stream, const g1_affine_raw *g1_windows,
                         const g2_affine_raw *g2_windows)
    : stream_(stream) {
    std::memcpy(g1_windows_, g1_windows, sizeof g1_windows_);
    std::memcpy(g2_windows_, g2_windows, sizeof g2_windows_);
}

point_batch::~point_batch() {
    for (void *t : table_)
        if (t) cudaFree(t);
}

size_t point_batch::bytes() const { return table_bytes_[0] + table_bytes_[1]; }

void point_batch::ensure_table(msm_group group) {
    const int g = group == msm_group::g1 ? 0 : 1;
    if (table_[g]) return;
    const size_t entries = (size_t)cc::WINDOWS * cc::HALF;
    const size_t bytes = entries * affine_bytes(group);
    void *t = nullptr;
    CUDA_OK(cudaMalloc(&t, bytes));
    try {
        dev_buf win(sizeof g2_windows_);
        const void *host_win = g == 0 ? (const void *)g1_windows_ : (const void *)g2_windows_;
        const size_t win_bytes = g == 0 ? sizeof g1_windows_ : sizeof g2_windows_;
        CUDA_OK(cudaMemcpyAsync(win.p, host_win, win_bytes, cudaMemcpyHostToDevice, stream_));
        if (g == 0)
            build_table<fp_t><<<blocks(entries), THREADS, 0, stream_>>>((const fp_t *)win.p,
                                                                         (fp_t *)t);
        else
            build_table<f2><<<blocks(entries), THREADS, 0, stream_>>>((const f2 *)win.p, (f2 *)t);
        CUDA_OK(cudaGetLastError());
        CUDA_OK(cudaStreamSynchronize(stream_));
    } catch (...) {
        cudaFree(t);
        throw;
    }
    table_[g] = t;
    table_bytes_[g] = bytes;
}

void point_batch::generator_multiples(msm_group group, const fr_raw *scalars, size_t n,
                                      void *out) {
    if (n == 0) return;
    ensure_table(group);
    const size_t pb = affine_bytes(group), chunk = std::min(n, CHUNK);
    dev_buf d_s(chunk * sizeof(fr_raw)), d_out(chunk * pb);
    for (size_t b = 0; b < n; b += chunk) {
        const size_t m = std::min(chunk, n - b);
        CUDA_OK(cudaMemcpyAsync(d_s.p, scalars + b, m * sizeof(fr_raw), cudaMemcpyHostToDevice,
                                stream_));
        const unsigned nb = blocks((m + PER_THREAD - 1) / PER_THREAD);
        if (group == msm_group::g1)
            fixed_base<fp_t><<<nb, THREADS, 0, stream_>>>((const fr_t *)d_s.p, m,
                                                          (const fp_t *)table_[0], (fp_t *)d_out.p);
        else
            fixed_base<f2><<<nb, THREADS, 0, stream_>>>((const fr_t *)d_s.p, m,
                                                        (const f2 *)table_[1], (f2 *)d_out.p);
        CUDA_OK(cudaGetLastError());
        CUDA_OK(cudaMemcpyAsync((uint8_t *)out + b * pb, d_out.p, m * pb, cudaMemcpyDeviceToHost,
                                stream_));
        CUDA_OK(cudaStreamSynchronize(stream_));
    }
}

size_t point_batch::first_outside_subgroup(msm_group group, const void *points, size_t n) {
    if (n == 0) return 0;
    // Four chunks at least past 1024 points, so that small keys (the
    // tests') go through both lanes too.
    const size_t pb = affine_bytes(group),
                 chunk = std::min(CHUNK, std::max<size_t>(256, (n + 3) / 4));
    const size_t chunks = (n + chunk - 1) / chunk;
    // Two lanes, each a buffer and a stream, take the chunks in turn: the
    // copy of one chunk (from pageable memory, which keeps this thread
    // busy) overlaps the check of the chunk before it on the other lane.
    // Each chunk's first failing index has its own slot, read once at the
    // end.
    dev_buf d_p0(chunk * pb), d_p1(chunk * pb);
    dev_buf d_bad(chunks * sizeof(unsigned long long));
    void *bufs[2] = {d_p0.p, d_p1.p};
    cudaStream_t second = nullptr;
    CUDA_OK(cudaStreamCreateWithFlags(&second, cudaStreamNonBlocking));
    struct stream_guard {
        cudaStream_t s;
        ~stream_guard() { cudaStreamDestroy(s); }
    } guard{second};
    cudaStream_t lanes[2] = {stream_, second};
    CUDA_OK(cudaMemsetAsync(d_bad.p, 0xff, chunks * sizeof(unsigned long long), stream_));
    CUDA_OK(cudaStreamSynchronize(stream_));
    unsigned long long *bad_slots = static_cast<unsigned long long *>(d_bad.p);
    for (size_t k = 0; k < chunks; k++) {
        const size_t b = k * chunk, m = std::min(chunk, n - b);
        cudaStream_t s = lanes[k & 1];
        CUDA_OK(cudaMemcpyAsync(bufs[k & 1], (const uint8_t *)points + b * pb, m * pb,
                                cudaMemcpyHostToDevice, s));
        if (group == msm_group::g1)
            g1_subgroup<<<blocks(m), THREADS, 0, s>>>((const fp_t *)bufs[k & 1], m, bad_slots + k);
        else
            g2_subgroup<<<blocks(m), THREADS, 0, s>>>((const f2 *)bufs[k & 1], m, bad_slots + k);
        CUDA_OK(cudaGetLastError());
    }
    CUDA_OK(cudaStreamSynchronize(second));
    std::vector<unsigned long long> bad(chunks);
    CUDA_OK(cudaMemcpyAsync(bad.data(), d_bad.p, chunks * sizeof(unsigned long long),
                            cudaMemcpyDeviceToHost, stream_));
    CUDA_OK(cudaStreamSynchronize(stream_));
    for (size_t k = 0; k < chunks; k++)
        if (bad[k] != ~0ull) return k * chunk + (size_t)bad[k];
    return n;
}

}  // namespace cp_cuda
