// Multi-scalar multiplications on one GPU with sppark's Pippenger (msm_t) and
// batch addition kernels, for G1 and G2 of BLS12-381. Points live on the
// device (the proving key's copy); scalars come from the host or the device.
#define SPPARK_DONT_INSTANTIATE_TEMPLATES
#define TAKE_RESPONSIBILITY_FOR_ERROR_MESSAGE

#include <cuda_runtime.h>

#include <ff/bls12-381-fp2.hpp>
#include <ec/jacobian_t.hpp>
#include <ec/xyzz_t.hpp>

#include "gpu_ops.hpp"

#include <msm/pippenger.cuh>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>

namespace cp_cuda {
namespace {

using g1_point = jacobian_t<fp_t>;
using g1_bucket = xyzz_t<fp_t>;
using g1_affine = g1_bucket::affine_t;
using g2_point = jacobian_t<fp2_t>;
using g2_bucket = xyzz_t<fp2_t>;
using g2_affine = g2_bucket::affine_t;

#ifndef __CUDA_ARCH__  // host-side types; on the device an Fp2 element is spread over two lanes
static_assert(sizeof(g1_point) == sizeof(g1_proj_raw), "G1 Jacobian layout");
static_assert(sizeof(g2_point) == sizeof(g2_proj_raw), "G2 Jacobian layout");
static_assert(sizeof(g1_affine) == sizeof(g1_affine_raw), "G1 affine layout");
static_assert(sizeof(g2_affine) == sizeof(g2_affine_raw), "G2 affine layout");
static_assert(sizeof(g1_affine::mem_t) == sizeof(g1_affine_raw), "G1 affine layout");
static_assert(sizeof(g2_affine::mem_t) == sizeof(g2_affine_raw), "G2 affine layout");
static_assert(sizeof(fr_t) == sizeof(fr_raw), "Fr layout");
#endif

// R mod r: the scalar 1 in Montgomery form.
constexpr fr_raw FR_ONE = {{0x00000001fffffffeULL, 0x5884b7fa00034802ULL,
                            0x998c4fefecbc4ff5ULL, 0x1824b159acc5056fULL}};

inline uint64_t now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

inline size_t align256(size_t x) { return (x + 255) & ~size_t(255); }

inline size_t bitmap_words(size_t n) { return ((n + 1023) / 1024) * 32; }
inline size_t tail_cap(size_t n) { return n / 4; }

void check(RustError e) {
    if (e.code != 0) {
        std::string msg = e.message ? e.message : "msm failed";
        std::free(e.message);
        throw cuda_error{e.code, msg};
    }
}

template<class P>
__global__ void gather_points(P *out, const P *in, const uint32_t *idx, uint32_t n) {
    for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += gridDim.x * blockDim.x)
        out[i] = in[idx[i]];
}

template<class bucket_t, class point_t, class affine_t>
void msm_run(const gpu_t &gpu, point_t &out, const void *d_points, size_t n,
             const fr_t *scalars, bool scalars_on_device) {
    out.inf();
    if (n == 0)
        return;
    msm_t<bucket_t, point_t, affine_t, fr_t> msm{nullptr, n, sizeof(affine_t), gpu.id()};
    dev_ptr_t<affine_t> pts{(affine_t *)d_points, n};
    if (scalars_on_device)
        check(msm.invoke(out, pts, n, dev_ptr_t<fr_t>{(fr_t *)scalars, n}, true));
    else
        check(msm.invoke(out, pts, n, scalars, true));
}

template<class bucket_t, class point_t, class affine_t>
void batch_add(const gpu_t &gpu, point_t &out, const void *d_points, uint32_t n,
               const uint32_t *d_bitmap, void *d_ret) {
    using bh = typename bucket_t::mem_t;
    using ah = typename affine_t::mem_t;
    void (*kernel)(bh *, const ah *, uint32_t, const uint32_t *, bool, uint32_t) =
        batch_addition<bucket_t, ah>;
    const int nblocks = gpu.sm_count();
    const size_t nret = (size_t)nblocks * BATCH_ADD_BLOCK_SIZE / WARP_SZ;
    bh *ret = (bh *)d_ret;
    const ah *pts = (const ah *)d_points;
    bool accumulate = false;
    uint32_t sid = 0;
    gpu.launch_coop(kernel, launch_params_t{nblocks, (int)BATCH_ADD_BLOCK_SIZE}, ret, pts,
                    n, d_bitmap, accumulate, sid);
    std::vector<bucket_t> sums(nret);
    gpu.DtoH(sums.data(), d_ret, nret);
    gpu.sync();
    bucket_t total = sum_up(sums);
    point_t p = total;
    out.add(p);
}

template<class bucket_t, class point_t, class affine_t, class raw_affine>
void plan_run(const gpu_t &gpu, point_t &out, const void *d_points, const msm_plan &plan,
              scratch_t scratch, msm_times &times) {
    out.inf();
    if (plan.n == 0)
        return;
    if (plan.dense) {
        uint64_t t0 = now_ns();
        msm_run<bucket_t, point_t, affine_t>(gpu, out, d_points, plan.n,
                                             (const fr_t *)plan.scalars, false);
        times.msm_ns += now_ns() - t0;
        return;
    }

    const size_t ntail = plan.tail_idx.size();
    const size_t nret = (size_t)gpu.sm_count() * BATCH_ADD_BLOCK_SIZE / WARP_SZ;
    char *base = (char *)scratch.base;
    size_t off = 0;
    uint32_t *d_bitmap = (uint32_t *)(base + off);
    off += align256(plan.ones_bitmap.size() * sizeof(uint32_t));
    uint32_t *d_idx = (uint32_t *)(base + off);
    off += align256(ntail * sizeof(uint32_t));
    raw_affine *d_gathered = (raw_affine *)(base + off);
    off += align256(ntail * sizeof(raw_affine));
    void *d_ret = base + off;
    off += align256(nret * sizeof(bucket_t));
    if (off > scratch.bytes)
        throw cuda_error{-(int)cudaErrorInvalidValue,
                         std::string("cuda-prover: MSM scratch too small")};

    if (plan.ones) {
        uint64_t t0 = now_ns();
        gpu.HtoD(d_bitmap, plan.ones_bitmap.data(), plan.ones_bitmap.size());
        point_t ones;
        ones.inf();
        batch_add<bucket_t, point_t, affine_t>(gpu, ones, d_points, (uint32_t)plan.n,
                                               d_bitmap, d_ret);
        out.add(ones);
        times.batch_add_ns += now_ns() - t0;
    }
    if (ntail) {
        uint64_t t0 = now_ns();
        gpu.HtoD(d_idx, plan.tail_idx.data(), ntail);
        const cudaStream_t s = gpu;
        uint32_t blocks = (uint32_t)std::min<size_t>((ntail + 255) / 256, 65535);
        gather_points<raw_affine><<<blocks, 256, 0, s>>>(
            d_gathered, (const raw_affine *)d_points, d_idx, (uint32_t)ntail);
        CUDA_OK(cudaGetLastError());
        CUDA_OK(cudaStreamSynchronize(s));
        point_t tail;
        msm_run<bucket_t, point_t, affine_t>(gpu, tail, d_gathered, ntail,
                                             (const fr_t *)plan.tail_scalars.data(), false);
        out.add(tail);
        times.msm_ns += now_ns() - t0;
    }
}

}  // namespace

void make_plan(msm_plan &plan, const fr_raw *scalars, size_t n) {
    plan.n = n;
    plan.scalars = scalars;
    plan.ones = 0;
    plan.ones_bitmap.assign(bitmap_words(n), 0);
    plan.tail_idx.clear();
    plan.tail_scalars.clear();
    const size_t cap = tail_cap(n);
    plan.dense = false;
    for (size_t i = 0; i < n; i++) {
        const fr_raw &s = scalars[i];
        if ((s.l[0] | s.l[1] | s.l[2] | s.l[3]) == 0)
            continue;
        if (s.l[0] == FR_ONE.l[0] && s.l[1] == FR_ONE.l[1] && s.l[2] == FR_ONE.l[2] &&
            s.l[3] == FR_ONE.l[3]) {
            plan.ones_bitmap[i / 32] |= 1u << (i % 32);
            plan.ones++;
            continue;
        }
        if (plan.tail_idx.size() >= cap) {
            plan.dense = true;
            break;
        }
        plan.tail_idx.push_back((uint32_t)i);
        plan.tail_scalars.push_back(s);
    }
    if (plan.dense) {
        plan.ones = 0;
        plan.ones_bitmap.clear();
        plan.tail_idx.clear();
        plan.tail_scalars.clear();
    }
}

size_t sparse_scratch_bytes(size_t n_max, int sm_count) {
    const size_t nret = (size_t)sm_count * BATCH_ADD_BLOCK_SIZE / WARP_SZ;
    return align256(bitmap_words(n_max) * sizeof(uint32_t)) +
           align256(tail_cap(n_max) * sizeof(uint32_t)) +
           align256(tail_cap(n_max) * sizeof(g2_affine_raw)) +
           align256(nret * sizeof(g2_bucket));
}

size_t msm_temp_bytes(size_t n, bool g2, int sm_count) {
    auto lg2 = [](size_t x) { size_t r = 0; while (x >>= 1) r++; return r; };
    const size_t np = (n + 31) & ~size_t(31);
    size_t wbits = 17;
    if (np > 192) {
        wbits = std::min<size_t>(lg2(np + np / 2) - 8, 18);
        if (wbits < 10)
            wbits = 10;
    } else if (np > 0) {
        wbits = 10;
    }
    const size_t nwins = (255 - 1) / wbits + 1;
    const size_t row = size_t(1) << (wbits - 1);
    const size_t bucket = g2 ? sizeof(g2_bucket) : sizeof(g1_bucket);
    const size_t blob = (nwins * row + (size_t)sm_count * BATCH_ADD_BLOCK_SIZE / WARP_SZ) * bucket +
                        nwins * row * sizeof(uint32_t);
    size_t lgn = lg2(n + n / 2);
    size_t batch = size_t(1) << (std::max(lgn, wbits) - wbits);
    batch >>= 6;
    if (!batch)
        batch = 1;
    size_t stride = (n + batch - 1) / batch;
    stride = (stride + 31) & ~size_t(31);
    const size_t temp = stride * std::max(2 * sizeof(uint2), sizeof(fr_t)) +
                        nwins * stride * sizeof(uint32_t);
    return blob + temp + (size_t(4) << 20);
}

void msm_g1_device(const gpu_t &gpu, g1_proj_raw &out, const void *d_points,
                   const void *d_scalars, size_t n) {
    g1_point p;
    msm_run<g1_bucket, g1_point, g1_affine>(gpu, p, d_points, n, (const fr_t *)d_scalars,
                                            true);
    std::memcpy(&out, &p, sizeof(out));
}

void msm_g2_device(const gpu_t &gpu, g2_proj_raw &out, const void *d_points,
                   const void *d_scalars, size_t n) {
    g2_point p;
    msm_run<g2_bucket, g2_point, g2_affine>(gpu, p, d_points, n, (const fr_t *)d_scalars,
                                            true);
    std::memcpy(&out, &p, sizeof(out));
}

void msm_g1_plan(const gpu_t &gpu, g1_proj_raw &out, const void *d_points,
                 const msm_plan &plan, scratch_t scratch, msm_times &times) {
    g1_point p;
    plan_run<g1_bucket, g1_point, g1_affine, g1_affine_raw>(gpu, p, d_points, plan, scratch,
                                                           times);
    std::memcpy(&out, &p, sizeof(out));
}

void msm_g2_plan(const gpu_t &gpu, g2_proj_raw &out, const void *d_points,
                 const msm_plan &plan, scratch_t scratch, msm_times &times) {
    g2_point p;
    plan_run<g2_bucket, g2_point, g2_affine, g2_affine_raw>(gpu, p, d_points, plan, scratch,
                                                           times);
    std::memcpy(&out, &p, sizeof(out));
}

}  // namespace cp_cuda
