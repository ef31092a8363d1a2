// Standalone GPU check of the CUDA backend: device MSMs (G1, G2; dense,
// 0/1-heavy, all-0 and all-1 scalars, with and without the 0/1 split, one
// context reused and four MSMs at once) against blst's CPU Pippenger, H on the device against a
// naive CPU DFT (2^10) and a CPU radix-2 FFT (2^10, 2^16, 2^20), and whole
// device parts through cp::cuda_devices() against a CPU reference, with the
// phase breakdown of whole device parts at 2^20 for a chain-like (dense) and
// a bits-like (0/1 heavy) witness, and cp::device::prepare. Prints PASS/FAIL
// lines; exits non-zero on any FAIL. `cuda_selftest profile [LG]` prints only
// where the MSM time of a 2^LG proof goes (phases, window widths);
// `cuda_selftest big [LG]` times Pippenger runs of many batches (an H + L of
// 2^(LG+1) scalars like the 32 GiB C2's, LG 27 by default) with their
// buckets carried across batches or not, and in batches larger than the
// default's at wider windows (CP_MSM_BATCH_LG); `cuda_selftest carried` runs only
// the tests of Pippenger runs of several batches.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <cuda_runtime.h>

#include "backend.hpp"
#include "device/staging.hpp"
#include "gpu_ops.hpp"

using namespace cp_cuda;

static int g_failures = 0;

static void report(bool ok, const std::string &what) {
    std::printf("%s %s\n", ok ? "PASS" : "FAIL", what.c_str());
    std::fflush(stdout);
    if (!ok)
        g_failures++;
}

static double now_s() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

static void ck(cudaError_t e, const char *what) {
    if (e != cudaSuccess) {
        std::printf("FAIL cuda %s: %s\n", what, cudaGetErrorString(e));
        std::exit(2);
    }
}

// ---------------------------------------------------------------- random

struct rng_t {
    uint64_t s;
    explicit rng_t(uint64_t seed) : s(seed * 0x9e3779b97f4a7c15ULL + 1) {}
    uint64_t next() {
        s ^= s >> 12;
        s ^= s << 25;
        s ^= s >> 27;
        return s * 0x2545f4914f6cdd1dULL;
    }
};

static blst_fr fr_u64(uint64_t v) {
    const uint64_t a[4] = {v, 0, 0, 0};
    blst_fr r;
    blst_fr_from_uint64(&r, a);
    return r;
}

static blst_fr fr_rand(rng_t &g) {
    uint64_t a[4] = {g.next(), g.next(), g.next(), g.next() & 0x3fffffffffffffffULL};
    blst_fr r;
    blst_fr_from_uint64(&r, a);
    return r;
}

static const blst_fr FR_ZERO = {{0, 0, 0, 0}};

// zero_pct% zeros, one_pct% ones, the rest random.
static std::vector<blst_fr> scalars_mix(size_t n, int zero_pct, int one_pct, uint64_t seed) {
    rng_t g(seed);
    std::vector<blst_fr> s(n);
    const blst_fr one = fr_u64(1);
    for (size_t i = 0; i < n; i++) {
        int r = (int)(g.next() % 100);
        s[i] = r < zero_pct ? FR_ZERO : r < zero_pct + one_pct ? one : fr_rand(g);
    }
    return s;
}

// long_pct% random, the rest short: below 2^bits (bits <= 64), half of
// them negated (r - v, short in absolute value, as Pippenger's digits see
// it). Few bits pile many scalars into few buckets.
static std::vector<blst_fr> scalars_short(size_t n, int bits, int long_pct, uint64_t seed) {
    rng_t g(seed);
    std::vector<blst_fr> s(n);
    const uint64_t mask = bits >= 64 ? ~0ULL : (1ULL << bits) - 1;
    for (size_t i = 0; i < n; i++) {
        if ((int)(g.next() % 100) < long_pct) {
            s[i] = fr_rand(g);
            continue;
        }
        s[i] = fr_u64(g.next() & mask);
        if (g.next() & 1)
            blst_fr_sub(&s[i], &FR_ZERO, &s[i]);
    }
    return s;
}

// n distinct-ish points P_i = (i+1)*Q + R, then tiled to `total`.
static std::vector<blst_p1_affine> g1_points(size_t n, size_t total, uint64_t seed) {
    blst_p1 q, r;
    blst_scalar k;
    blst_fr f;
    rng_t g(seed);
    f = fr_rand(g);
    blst_scalar_from_fr(&k, &f);
    blst_p1_mult(&q, blst_p1_generator(), k.b, 255);
    f = fr_rand(g);
    blst_scalar_from_fr(&k, &f);
    blst_p1_mult(&r, blst_p1_generator(), k.b, 255);
    std::vector<blst_p1> pr(n);
    blst_p1 acc = r;
    for (size_t i = 0; i < n; i++) {
        blst_p1_add_or_double(&acc, &acc, &q);
        pr[i] = acc;
    }
    std::vector<blst_p1_affine> out(total);
    const blst_p1 *ptrs[2] = {pr.data(), nullptr};
    blst_p1s_to_affine(out.data(), ptrs, n);
    for (size_t i = n; i < total; i++)
        out[i] = out[i % n];
    return out;
}

static std::vector<blst_p2_affine> g2_points(size_t n, size_t total, uint64_t seed) {
    blst_p2 q, r;
    blst_scalar k;
    blst_fr f;
    rng_t g(seed);
    f = fr_rand(g);
    blst_scalar_from_fr(&k, &f);
    blst_p2_mult(&q, blst_p2_generator(), k.b, 255);
    f = fr_rand(g);
    blst_scalar_from_fr(&k, &f);
    blst_p2_mult(&r, blst_p2_generator(), k.b, 255);
    std::vector<blst_p2> pr(n);
    blst_p2 acc = r;
    for (size_t i = 0; i < n; i++) {
        blst_p2_add_or_double(&acc, &acc, &q);
        pr[i] = acc;
    }
    std::vector<blst_p2_affine> out(total);
    const blst_p2 *ptrs[2] = {pr.data(), nullptr};
    blst_p2s_to_affine(out.data(), ptrs, n);
    for (size_t i = n; i < total; i++)
        out[i] = out[i % n];
    return out;
}

// ---------------------------------------------------------------- CPU MSM

static std::vector<blst_scalar> to_scalars(const blst_fr *s, size_t n) {
    std::vector<blst_scalar> out(n);
    for (size_t i = 0; i < n; i++)
        blst_scalar_from_fr(&out[i], &s[i]);
    return out;
}

static blst_p1 cpu_msm_g1(const blst_p1_affine *p, const blst_fr *s, size_t n) {
    blst_p1 r;
    std::memset(&r, 0, sizeof(r));
    if (n == 0)
        return r;
    auto sc = to_scalars(s, n);
    if (n < 4) {
        for (size_t i = 0; i < n; i++) {
            blst_p1 a, t;
            blst_p1_from_affine(&a, &p[i]);
            blst_p1_mult(&t, &a, sc[i].b, 255);
            blst_p1_add_or_double(&r, &r, &t);
        }
        return r;
    }
    std::vector<limb_t> scratch(blst_p1s_mult_pippenger_scratch_sizeof(n) / sizeof(limb_t) + 1);
    const blst_p1_affine *pp[2] = {p, nullptr};
    const byte *sp[2] = {sc[0].b, nullptr};
    blst_p1s_mult_pippenger(&r, pp, n, sp, 255, scratch.data());
    return r;
}

static blst_p2 cpu_msm_g2(const blst_p2_affine *p, const blst_fr *s, size_t n) {
    blst_p2 r;
    std::memset(&r, 0, sizeof(r));
    if (n == 0)
        return r;
    auto sc = to_scalars(s, n);
    if (n < 4) {
        for (size_t i = 0; i < n; i++) {
            blst_p2 a, t;
            blst_p2_from_affine(&a, &p[i]);
            blst_p2_mult(&t, &a, sc[i].b, 255);
            blst_p2_add_or_double(&r, &r, &t);
        }
        return r;
    }
    std::vector<limb_t> scratch(blst_p2s_mult_pippenger_scratch_sizeof(n) / sizeof(limb_t) + 1);
    const blst_p2_affine *pp[2] = {p, nullptr};
    const byte *sp[2] = {sc[0].b, nullptr};
    blst_p2s_mult_pippenger(&r, pp, n, sp, 255, scratch.data());
    return r;
}

static bool eq1(const blst_p1 &a, const blst_p1 &b) {
    if (blst_p1_is_inf(&a) || blst_p1_is_inf(&b))
        return blst_p1_is_inf(&a) && blst_p1_is_inf(&b);
    return blst_p1_is_equal(&a, &b);
}
static bool eq2(const blst_p2 &a, const blst_p2 &b) {
    if (blst_p2_is_inf(&a) || blst_p2_is_inf(&b))
        return blst_p2_is_inf(&a) && blst_p2_is_inf(&b);
    return blst_p2_is_equal(&a, &b);
}

// Scalars of a tiled MSM folded onto the n distinct points.
static std::vector<blst_fr> fold(const std::vector<blst_fr> &s, size_t n) {
    std::vector<blst_fr> out(n, FR_ZERO);
    for (size_t i = 0; i < s.size(); i++)
        blst_fr_add(&out[i % n], &out[i % n], &s[i]);
    return out;
}

// ---------------------------------------------------------------- CPU H

static const blst_fr ROOT_OF_UNITY = {{0xb9b58d8c5f0e466aULL, 0x5b1b4c801819d7ecULL,
                                       0x0af53ae352a31e64ULL, 0x5bf3adda19e9b27bULL}};

static blst_fr omega_for(uint32_t lg) {
    blst_fr w = ROOT_OF_UNITY;
    for (uint32_t i = lg; i < 32; i++)
        blst_fr_sqr(&w, &w);
    return w;
}

static blst_fr fr_pow(blst_fr b, uint64_t e) {
    blst_fr r = fr_u64(1);
    while (e) {
        if (e & 1)
            blst_fr_mul(&r, &r, &b);
        blst_fr_sqr(&b, &b);
        e >>= 1;
    }
    return r;
}

static void fft(std::vector<blst_fr> &a, blst_fr w) {
    const size_t n = a.size();
    for (size_t i = 1, j = 0; i < n; i++) {
        size_t bit = n >> 1;
        for (; j & bit; bit >>= 1)
            j ^= bit;
        j ^= bit;
        if (i < j)
            std::swap(a[i], a[j]);
    }
    for (size_t len = 2; len <= n; len <<= 1) {
        blst_fr wl = fr_pow(w, n / len);
        std::vector<blst_fr> tw(len / 2);
        tw[0] = fr_u64(1);
        for (size_t j = 1; j < len / 2; j++)
            blst_fr_mul(&tw[j], &tw[j - 1], &wl);
        for (size_t i = 0; i < n; i += len)
            for (size_t j = 0; j < len / 2; j++) {
                blst_fr u = a[i + j], v;
                blst_fr_mul(&v, &a[i + j + len / 2], &tw[j]);
                blst_fr_add(&a[i + j], &u, &v);
                blst_fr_sub(&a[i + j + len / 2], &u, &v);
            }
    }
}

static void naive_dft(std::vector<blst_fr> &a, blst_fr w) {
    const size_t n = a.size();
    std::vector<blst_fr> out(n);
    blst_fr wk = fr_u64(1);
    for (size_t k = 0; k < n; k++) {
        blst_fr acc = FR_ZERO, p = fr_u64(1), t;
        for (size_t j = 0; j < n; j++) {
            blst_fr_mul(&t, &a[j], &p);
            blst_fr_add(&acc, &acc, &t);
            blst_fr_mul(&p, &p, &wk);
        }
        out[k] = acc;
        blst_fr_mul(&wk, &wk, &w);
    }
    a = out;
}

// The H formula on the CPU with either transform.
static std::vector<blst_fr> cpu_h(std::vector<blst_fr> a, std::vector<blst_fr> b,
                                  std::vector<blst_fr> c, uint32_t lg, bool naive) {
    const size_t n = size_t(1) << lg;
    const blst_fr w = omega_for(lg);
    blst_fr winv, ninv, g = fr_u64(7), ginv;
    blst_fr_inverse(&winv, &w);
    blst_fr nn = fr_u64(n);
    blst_fr_inverse(&ninv, &nn);
    blst_fr_inverse(&ginv, &g);
    auto xf = [&](std::vector<blst_fr> &v, const blst_fr &root) {
        if (naive)
            naive_dft(v, root);
        else
            fft(v, root);
    };
    auto inv = [&](std::vector<blst_fr> &v) {
        xf(v, winv);
        for (auto &x : v)
            blst_fr_mul(&x, &x, &ninv);
    };
    auto scale = [&](std::vector<blst_fr> &v, const blst_fr &s) {
        blst_fr p = fr_u64(1);
        for (auto &x : v) {
            blst_fr_mul(&x, &x, &p);
            blst_fr_mul(&p, &p, &s);
        }
    };
    for (auto *v : {&a, &b, &c}) {
        inv(*v);
        scale(*v, g);
        xf(*v, w);
    }
    blst_fr z = fr_pow(g, n), one = fr_u64(1);
    blst_fr_sub(&z, &z, &one);
    blst_fr_inverse(&z, &z);
    for (size_t i = 0; i < n; i++) {
        blst_fr t;
        blst_fr_mul(&t, &a[i], &b[i]);
        blst_fr_sub(&t, &t, &c[i]);
        blst_fr_mul(&a[i], &t, &z);
    }
    inv(a);
    scale(a, ginv);
    return a;
}

// ---------------------------------------------------------------- GPU helpers

struct dbuf {
    void *p = nullptr;
    explicit dbuf(size_t bytes) { ck(cudaMalloc(&p, bytes ? bytes : 1), "cudaMalloc"); }
    ~dbuf() { cudaFree(p); }
};

static std::vector<blst_fr> gpu_h(const gpu_t &gpu, const std::vector<blst_fr> &a,
                                  const std::vector<blst_fr> &b, const std::vector<blst_fr> &c,
                                  uint32_t lg, double *secs) {
    const size_t n = a.size();
    dbuf d(3 * n * sizeof(blst_fr));
    blst_fr *da = (blst_fr *)d.p;
    ck(cudaMemcpy(da, a.data(), n * 32, cudaMemcpyHostToDevice), "HtoD");
    ck(cudaMemcpy(da + n, b.data(), n * 32, cudaMemcpyHostToDevice), "HtoD");
    ck(cudaMemcpy(da + 2 * n, c.data(), n * 32, cudaMemcpyHostToDevice), "HtoD");
    blst_fr g = fr_u64(7), one = fr_u64(1), z = fr_pow(g, n);
    blst_fr_sub(&z, &z, &one);
    blst_fr_inverse(&z, &z);
    fr_raw zr;
    std::memcpy(&zr, &z, 32);
    double t0 = now_s();
    compute_h_async(gpu, da, da + n, da + 2 * n, lg, zr);
    gpu_sync_default(gpu);
    if (secs)
        *secs = now_s() - t0;
    std::vector<blst_fr> out(n);
    ck(cudaMemcpy(out.data(), da, n * 32, cudaMemcpyDeviceToHost), "DtoH");
    return out;
}

static bool same_fr(const std::vector<blst_fr> &x, const std::vector<blst_fr> &y) {
    return x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size() * 32) == 0;
}

template<class P>
static void *upload(const std::vector<P> &v) {
    void *p = nullptr;
    ck(cudaMalloc(&p, v.size() * sizeof(P) + 256), "cudaMalloc");
    ck(cudaMemcpy(p, v.data(), v.size() * sizeof(P), cudaMemcpyHostToDevice), "HtoD");
    return p;
}

// ---------------------------------------------------------------- tests

// One MSM through a one-slot context, with the 0/1 split (run) and without
// (launch on the slot's stream), both against blst.
static void test_msm_g1(const gpu_t &gpu, size_t n, int zpct, int opct, uint64_t seed) {
    auto pts = g1_points(std::min<size_t>(n, 1 << 16), n, seed);
    auto sc = scalars_mix(n, zpct, opct, seed + 1);
    void *dp = upload(pts);
    void *ds = upload(sc);
    blst_p1 want = n > (1u << 16) ? cpu_msm_g1(pts.data(), fold(sc, 1 << 16).data(), 1 << 16)
                                  : cpu_msm_g1(pts.data(), sc.data(), n);
    msm_context ctx(gpu, {{msm_group::g1, n}});
    msm_job job{0, dp, ds, n};
    ctx.run(&job, 1, nullptr, nullptr);
    g1_proj_raw raw;
    ctx.read(0, raw);
    blst_p1 got;
    std::memcpy(&got, &raw, sizeof(got));
    char buf[160];
    std::snprintf(buf, sizeof buf, "msm G1 n=%zu zeros=%d%% ones=%d%% (0/1 split)", n, zpct, opct);
    report(eq1(got, want), buf);
    ctx.launch(0, ctx.stream(0), dp, ds, n, false);
    ck(cudaStreamSynchronize(ctx.stream(0)), "sync");
    ctx.read(0, raw);
    std::memcpy(&got, &raw, sizeof(got));
    std::snprintf(buf, sizeof buf, "msm G1 n=%zu zeros=%d%% ones=%d%% (all Pippenger)", n, zpct,
                  opct);
    report(eq1(got, want), buf);
    cudaFree(dp);
    cudaFree(ds);
}

static void test_msm_g2(const gpu_t &gpu, size_t n, int zpct, int opct, uint64_t seed) {
    const size_t distinct = std::min<size_t>(n, 1 << 14);
    auto pts = g2_points(distinct, n, seed);
    auto sc = scalars_mix(n, zpct, opct, seed + 1);
    void *dp = upload(pts);
    void *ds = upload(sc);
    blst_p2 want = n > distinct ? cpu_msm_g2(pts.data(), fold(sc, distinct).data(), distinct)
                                : cpu_msm_g2(pts.data(), sc.data(), n);
    msm_context ctx(gpu, {{msm_group::g2, n}});
    msm_job job{0, dp, ds, n};
    ctx.run(&job, 1, nullptr, nullptr);
    g2_proj_raw raw;
    ctx.read(0, raw);
    blst_p2 got;
    std::memcpy(&got, &raw, sizeof(got));
    char buf[160];
    std::snprintf(buf, sizeof buf, "msm G2 n=%zu zeros=%d%% ones=%d%% (0/1 split)", n, zpct, opct);
    report(eq2(got, want), buf);
    ctx.launch(0, ctx.stream(0), dp, ds, n, false);
    ck(cudaStreamSynchronize(ctx.stream(0)), "sync");
    ctx.read(0, raw);
    std::memcpy(&got, &raw, sizeof(got));
    std::snprintf(buf, sizeof buf, "msm G2 n=%zu zeros=%d%% ones=%d%% (all Pippenger)", n, zpct,
                  opct);
    report(eq2(got, want), buf);
    cudaFree(dp);
    cudaFree(ds);
}

// A table of multiples built on the device (msm_build_table) and MSMs over
// it, against blst: row 1 of a few bases against wbits doublings, then the
// MSM through run (the 0/1 split decides) and through launch without the
// split (always the table). Without tiling, every 97th base is infinity
// (blst's all-zero affine point). With short_bits, the scalars are
// scalars_short(n, short_bits, long_pct) instead of zpct% 0 and opct% 1.
// tune: a variant of the table run (msm_tuning), named in the label.
template <class Aff, class Proj>
static void table_case(const gpu_t &gpu, bool g2, size_t n, int zpct, int opct, uint32_t wbits,
                       uint64_t seed, int short_bits = 0, int long_pct = 0,
                       msm_tuning tune = {}) {
    const size_t distinct = std::min<size_t>(n, g2 ? 1 << 14 : 1 << 16);
    std::vector<Aff> pts;
    if constexpr (sizeof(Aff) == sizeof(blst_p2_affine))
        pts = g2_points(distinct, n, seed);
    else
        pts = g1_points(distinct, n, seed);
    if (distinct == n)
        for (size_t i = 3; i < n; i += 97)
            std::memset(&pts[i], 0, sizeof(Aff));
    auto sc = short_bits ? scalars_short(n, short_bits, long_pct, seed + 1)
                         : scalars_mix(n, zpct, opct, seed + 1);
    // A slot wide enough for any forced width (2^20 bases: 2^19 buckets,
    // 13 x 2^20 digits).
    const size_t slot_n = wbits ? std::max(n, size_t(1) << 20) : n;
    if (!wbits)
        wbits = msm_table_window_bits(n);
    const size_t rows = msm_table_windows(wbits);
    const msm_group group = g2 ? msm_group::g2 : msm_group::g1;
    msm_context ctx(gpu, {{group, slot_n, true}});
    ctx.tune(0, tune);
    void *dt = nullptr;
    ck(cudaMalloc(&dt, rows * n * sizeof(Aff)), "cudaMalloc(table)");
    ck(cudaMemcpy(dt, pts.data(), n * sizeof(Aff), cudaMemcpyHostToDevice), "HtoD");
    msm_build_table(ctx.stream(0), group, dt, n, wbits);
    ck(cudaStreamSynchronize(ctx.stream(0)), "table");
    char label[200];
    if (short_bits)
        std::snprintf(label, sizeof label, "table %s n=%zu wbits %u %d%% long, %d-bit short",
                      g2 ? "G2" : "G1", n, wbits, long_pct, short_bits);
    else
        std::snprintf(label, sizeof label, "table %s n=%zu wbits %u zeros=%d%% ones=%d%%",
                      g2 ? "G2" : "G1", n, wbits, zpct, opct);
    if (tune.table_chunk || tune.fit_waves >= 0 || tune.weigh >= 0 || tune.weigh_sbits ||
        tune.window_chunk || tune.acc_block || tune.small_runs >= 0 || tune.dot_add >= 0 ||
        tune.weigh_tail >= 0 || tune.affine >= 0 || tune.affine_pairs) {
        const size_t len = std::strlen(label);
        std::snprintf(label + len, sizeof label - len,
                      " [chunk %u, fit %d, weigh %d, sbits %u, window chunk %u, block %u,"
                      " small runs %d, dot add %d, tail %d, affine %d, pairs %u-%u]",
                      tune.table_chunk, tune.fit_waves, tune.weigh, tune.weigh_sbits,
                      tune.window_chunk, tune.acc_block, tune.small_runs, tune.dot_add,
                      tune.weigh_tail, tune.affine, tune.affine_pairs_min, tune.affine_pairs);
    }
    bool rows_ok = true;
    for (size_t i : {size_t(0), size_t(3), n / 2, n - 1}) {
        if (i >= n || rows < 2)
            continue;
        Aff got, want;
        ck(cudaMemcpy(&got, (char *)dt + (n + i) * sizeof(Aff), sizeof(Aff),
                      cudaMemcpyDeviceToHost),
           "DtoH");
        Proj p;
        if constexpr (sizeof(Aff) == sizeof(blst_p2_affine)) {
            blst_p2_from_affine(&p, &pts[i]);
            for (uint32_t b = 0; b < wbits; b++)
                blst_p2_double(&p, &p);
            blst_p2_to_affine(&want, &p);
        } else {
            blst_p1_from_affine(&p, &pts[i]);
            for (uint32_t b = 0; b < wbits; b++)
                blst_p1_double(&p, &p);
            blst_p1_to_affine(&want, &p);
        }
        rows_ok = rows_ok && std::memcmp(&got, &want, sizeof(Aff)) == 0;
    }
    report(rows_ok, std::string(label) + ": row 1");
    void *ds = upload(sc);
    Proj want;
    if constexpr (sizeof(Aff) == sizeof(blst_p2_affine))
        want = n > distinct ? cpu_msm_g2(pts.data(), fold(sc, distinct).data(), distinct)
                            : cpu_msm_g2(pts.data(), sc.data(), n);
    else
        want = n > distinct ? cpu_msm_g1(pts.data(), fold(sc, distinct).data(), distinct)
                            : cpu_msm_g1(pts.data(), sc.data(), n);
    auto read = [&](Proj &out) {
        if constexpr (sizeof(Aff) == sizeof(blst_p2_affine)) {
            g2_proj_raw r;
            ctx.read(0, r);
            std::memcpy(&out, &r, sizeof out);
        } else {
            g1_proj_raw r;
            ctx.read(0, r);
            std::memcpy(&out, &r, sizeof out);
        }
    };
    auto same = [&](const Proj &a) {
        if constexpr (sizeof(Aff) == sizeof(blst_p2_affine))
            return eq2(a, want);
        else
            return eq1(a, want);
    };
    msm_job job{0, dt, ds, n, wbits};
    ctx.run(&job, 1, nullptr, nullptr);
    Proj got;
    read(got);
    report(same(got), std::string(label) + ": msm (0/1 split decides)");
    msm_profile prof;
    ctx.profile(0, &prof);
    ctx.launch(0, ctx.stream(0), dt, ds, n, false, wbits);
    ck(cudaStreamSynchronize(ctx.stream(0)), "sync");
    read(got);
    ctx.profile(0, nullptr);
    report(same(got) && prof.wbits == wbits && prof.windows == rows,
           std::string(label) + ": msm over the table");
    cudaFree(ds);
    cudaFree(dt);
}

static void test_msm_tables(const gpu_t &gpu) {
    for (size_t n : {size_t(1), size_t(100), size_t(5000), size_t(65536), size_t(300001)}) {
        table_case<blst_p1_affine, blst_p1>(gpu, false, n, 0, 0, 0, n + 1);
        table_case<blst_p1_affine, blst_p1>(gpu, false, n, 45, 45, 0, n + 2);
    }
    table_case<blst_p1_affine, blst_p1>(gpu, false, 70001, 10, 5, 15, 7);
    table_case<blst_p1_affine, blst_p1>(gpu, false, 70001, 0, 0, 20, 8);
    table_case<blst_p1_affine, blst_p1>(gpu, false, 70001, 100, 0, 17, 9);
    table_case<blst_p1_affine, blst_p1>(gpu, false, 70001, 0, 100, 0, 10);
    for (size_t n : {size_t(7), size_t(16385), size_t(100003)}) {
        table_case<blst_p2_affine, blst_p2>(gpu, true, n, 0, 0, 0, n + 3);
        table_case<blst_p2_affine, blst_p2>(gpu, true, n, 45, 45, 0, n + 4);
    }
    table_case<blst_p2_affine, blst_p2>(gpu, true, 20000, 0, 0, 17, 11);
    // Pile-ups the chunked accumulation spreads: buckets of tens of
    // thousands of entries (3-bit scalars: digits 2..4 only; every bucket
    // spans many chunks and groups of carries), 63-bit scalars next to
    // dense ones (the `bits` circuit's H + L), and 12-bit and 2-bit scalars
    // in G2.
    table_case<blst_p1_affine, blst_p1>(gpu, false, 300001, 0, 0, 20, 12, 3, 0);
    table_case<blst_p1_affine, blst_p1>(gpu, false, 70001, 0, 0, 0, 13, 63, 50);
    table_case<blst_p1_affine, blst_p1>(gpu, false, 1 << 20, 0, 0, 20, 14, 63, 2);
    table_case<blst_p2_affine, blst_p2>(gpu, true, 100003, 0, 0, 0, 15, 12, 10);
    table_case<blst_p2_affine, blst_p2>(gpu, true, 65536, 0, 0, 17, 16, 2, 0);
    // The variants of a table run (msm_tuning): sppark's integrate with our
    // finish instead of the weighted sum in levels, other segment widths,
    // other chunk lengths (fitted to whole waves or not), the chunks being
    // the table run's accumulation (affine 0).
    msm_tuning variants[] = {{32, 0, 0, 0}, {0, 1, 1, 2}, {64, 0, 1, 6}, {128, 1, 0, 3}};
    for (auto &v : variants) {
        v.affine = 0;
        table_case<blst_p1_affine, blst_p1>(gpu, false, 70001, 10, 5, 0, 17, 0, 0, v);
        table_case<blst_p2_affine, blst_p2>(gpu, true, 16385, 10, 5, 0, 18, 0, 0, v);
    }
    {
        msm_tuning piles{64, 1, 1, 2}, shorts{48, 1, 0, 0};
        piles.affine = shorts.affine = 0;
        table_case<blst_p1_affine, blst_p1>(gpu, false, 300001, 0, 0, 20, 19, 3, 0, piles);
        table_case<blst_p2_affine, blst_p2>(gpu, true, 100003, 0, 0, 0, 20, 12, 10, shorts);
    }
    // The affine accumulation (G2's default) in G1 too, on small runs; with
    // other most pairs per thread and round: one pair (an inversion per
    // addition), 5, 64; on
    // dense runs, 0/1-heavy ones and pile-ups (3-bit and 2-bit scalars:
    // buckets of tens of thousands of entries, rounds far past the span's
    // cap), in both groups. The tiled bases put equal points in one bucket
    // (doublings, sums of zero), every 97th base is infinity.
    for (size_t n : {size_t(1), size_t(100), size_t(5000)}) {
        msm_tuning t{};
        t.affine = 1;
        table_case<blst_p1_affine, blst_p1>(gpu, false, n, 0, 0, 0, n + 34, 0, 0, t);
        table_case<blst_p1_affine, blst_p1>(gpu, false, n, 45, 45, 0, n + 35, 0, 0, t);
    }
    for (uint32_t pairs : {1u, 5u, 64u}) {
        msm_tuning t{};
        t.affine = 1;
        t.affine_pairs = pairs;
        table_case<blst_p1_affine, blst_p1>(gpu, false, 70001, 10, 5, 0, 30, 0, 0, t);
        table_case<blst_p2_affine, blst_p2>(gpu, true, 16385, 10, 5, 0, 31, 0, 0, t);
        table_case<blst_p1_affine, blst_p1>(gpu, false, 300001, 0, 0, 20, 32, 3, 0, t);
        table_case<blst_p2_affine, blst_p2>(gpu, true, 65536, 0, 0, 17, 33, 2, 0, t);
    }
    // The weighted sum's tail in levels of 2 (before the tail by bits), on
    // a dense run and on one of mostly 0s and 1s, in both groups.
    {
        msm_tuning levels{};
        levels.weigh_tail = 0;
        table_case<blst_p1_affine, blst_p1>(gpu, false, 300001, 0, 0, 20, 27, 0, 0, levels);
        table_case<blst_p1_affine, blst_p1>(gpu, false, 70001, 45, 45, 0, 28, 0, 0, levels);
        table_case<blst_p2_affine, blst_p2>(gpu, true, 100003, 0, 0, 0, 29, 0, 0, levels);
    }
    // Pippenger's windows (the split's rest) in longer chunks, fitted.
    table_case<blst_p1_affine, blst_p1>(gpu, false, 300001, 45, 45, 0, 21, 0, 0,
                                        {0, -1, -1, 0, 128});
    table_case<blst_p2_affine, blst_p2>(gpu, true, 100003, 30, 30, 0, 22, 0, 0,
                                        {0, -1, -1, 0, 96});
    // The accumulation's other block sizes, what small runs do and either
    // addition in both groups, over a table and in Pippenger's windows (the
    // split's rest).
    for (int v = 0; v < 8; v++) {
        msm_tuning t = v < 3   ? msm_tuning{0, -1, -1, 0, 0, 64u << v}
                       : v < 6 ? msm_tuning{0, -1, -1, 0, 0, 0, v - 2}
                               : msm_tuning{0, -1, -1, 0, 0, 0, -1, v - 6};
        t.affine = 0;
        table_case<blst_p1_affine, blst_p1>(gpu, false, 70001, 10, 5, 0, 23, 0, 0, t);
        table_case<blst_p2_affine, blst_p2>(gpu, true, 16385, 10, 5, 0, 24, 0, 0, t);
        table_case<blst_p1_affine, blst_p1>(gpu, false, 300001, 45, 45, 0, 25, 0, 0, t);
        table_case<blst_p2_affine, blst_p2>(gpu, true, 100003, 30, 30, 0, 26, 0, 0, t);
    }
}

static void *make_table(cudaStream_t s, msm_group g, const void *d, size_t n, uint32_t &wbits);

// Table runs over the same scalars in one run (B in G1 and in G2): the
// later ones take the first one's sorted digits (msm_context::start). G1
// then G2, G2 then G1, and G1, G2, G1 with a second G1 over other scalars
// in between; each result against blst, twice with new scalars each time,
// so stale digits would show.
static void test_shared_sort(const gpu_t &gpu) {
    const size_t n = 70001, d1n = 1 << 16, d2n = 1 << 14;
    auto p1 = g1_points(d1n, n, 31);
    auto p2 = g2_points(d2n, n, 32);
    void *d1 = upload(p1), *d2 = upload(p2);
    msm_context ctx(gpu, {{msm_group::g1, n, true},
                          {msm_group::g2, n, true},
                          {msm_group::g1, n, true},
                          {msm_group::g1, n, true}});
    uint32_t w1 = 0, w2 = 0;
    void *t1 = make_table(ctx.stream(0), msm_group::g1, d1, n, w1);
    void *t2 = make_table(ctx.stream(1), msm_group::g2, d2, n, w2);
    bool ok = true;
    for (int round = 0; round < 2; round++) {
        auto sc = scalars_mix(n, round ? 20 : 0, round ? 20 : 0, 33 + round);
        auto other = scalars_mix(n, 0, 0, 40 + round);
        void *ds = upload(sc), *dother = upload(other);
        const blst_p1 want1 = cpu_msm_g1(p1.data(), fold(sc, d1n).data(), d1n);
        const blst_p1 want_other = cpu_msm_g1(p1.data(), fold(other, d1n).data(), d1n);
        const blst_p2 want2 = cpu_msm_g2(p2.data(), fold(sc, d2n).data(), d2n);
        const msm_job g1{0, t1, ds, n, w1}, g2{1, t2, ds, n, w2}, g1b{2, t1, dother, n, w1},
            g1c{3, t1, ds, n, w1};
        const std::vector<std::vector<msm_job>> orders = {
            {g1, g2}, {g2, g1}, {g1, g1b, g2, g1c}};
        for (const auto &jobs : orders) {
            ctx.run(jobs.data(), jobs.size(), nullptr, nullptr);
            for (const auto &j : jobs) {
                if (j.slot == 1) {
                    g2_proj_raw r;
                    ctx.read(1, r);
                    blst_p2 got;
                    std::memcpy(&got, &r, sizeof got);
                    ok = ok && eq2(got, want2);
                } else {
                    g1_proj_raw r;
                    ctx.read(j.slot, r);
                    blst_p1 got;
                    std::memcpy(&got, &r, sizeof got);
                    ok = ok && eq1(got, j.d_scalars == dother ? want_other : want1);
                }
            }
        }
        cudaFree(ds);
        cudaFree(dother);
    }
    report(ok, "table runs over the same scalars share one sort (G1 and G2, in any order)");
    for (void *p : {d1, d2, t1, t2})
        cudaFree(p);
}

// One context reused for several sizes and patterns, and four MSMs (three
// G1, one G2) at the same time on their streams, as in a proof.
static void test_msm_context(const gpu_t &gpu) {
    const size_t nmax = 70001;
    auto p1 = g1_points(1 << 16, nmax, 21);
    auto p2 = g2_points(1 << 14, nmax, 22);
    void *d1 = upload(p1);
    void *d2 = upload(p2);
    msm_context ctx(gpu, {{msm_group::g1, nmax},
                          {msm_group::g1, nmax},
                          {msm_group::g1, 3000},
                          {msm_group::g2, nmax}});
    report(ctx.bytes() == msm_context_bytes({{msm_group::g1, nmax},
                                             {msm_group::g1, nmax},
                                             {msm_group::g1, 3000},
                                             {msm_group::g2, nmax}},
                                            gpu.sm_count()),
           "msm context bytes");
    struct pat { size_t n; int z, o; } pats[4] = {{nmax, 45, 45}, {1000, 0, 0}, {2999, 100, 0},
                                                  {nmax - 17, 0, 100}};
    for (int round = 0; round < 2; round++) {
        std::vector<std::vector<blst_fr>> sc(4);
        std::vector<void *> ds(4);
        msm_job jobs[4];
        for (int i = 0; i < 4; i++) {
            const pat &p = pats[(i + round) % 4];
            const size_t n = std::min(p.n, i == 2 ? (size_t)3000 : nmax);
            sc[i] = scalars_mix(n, p.z, p.o, 100 + i + 10 * round);
            ds[i] = upload(sc[i]);
            jobs[i] = msm_job{(size_t)i, i == 3 ? d2 : d1, ds[i], n};
        }
        uint64_t ns[4];
        ctx.run(jobs, 4, nullptr, ns);
        for (int i = 0; i < 4; i++) {
            const size_t n = jobs[i].n;
            bool ok;
            if (i == 3) {
                g2_proj_raw r;
                ctx.read(3, r);
                blst_p2 got;
                std::memcpy(&got, &r, sizeof(got));
                ok = eq2(got, n > (1u << 14)
                                  ? cpu_msm_g2(p2.data(), fold(sc[i], 1 << 14).data(), 1 << 14)
                                  : cpu_msm_g2(p2.data(), sc[i].data(), n));
            } else {
                g1_proj_raw r;
                ctx.read(i, r);
                blst_p1 got;
                std::memcpy(&got, &r, sizeof(got));
                ok = eq1(got, n > (1u << 16)
                                  ? cpu_msm_g1(p1.data(), fold(sc[i], 1 << 16).data(), 1 << 16)
                                  : cpu_msm_g1(p1.data(), sc[i].data(), n));
            }
            report(ok, "msm context round " + std::to_string(round) + " slot " +
                           std::to_string(i) + " n=" + std::to_string(n));
            cudaFree(ds[i]);
        }
    }
    cudaFree(d1);
    cudaFree(d2);
}

// An MSM with a dense head (msm_job::dense, H's scalars before L's) larger
// than the 0/1 split can gather (3/4 of the slot's points): only the
// scalars past it are split into 0s, 1s and the rest, which Pippenger runs
// over at the head's width (msm_engine::run_split_after). Tails of 0/1
// mixes, of short scalars and of long ones; the sum equals the CPU's, with
// the head given and without it (Pippenger over every point).
// n dense scalars (seed) whose last n - head are replaced by `tail`.
static std::vector<blst_fr> head_then(size_t n, size_t head, uint64_t seed,
                                      const std::vector<blst_fr> &tail) {
    auto sc = scalars_mix(n, 0, 0, seed);
    std::copy(tail.begin(), tail.end(), sc.begin() + head);
    return sc;
}

static void test_msm_dense_head(const gpu_t &gpu) {
    const size_t n = 12000, head = 9500, distinct = 1 << 12;
    auto pts = g1_points(distinct, n, 31);
    void *d1 = upload(pts);
    msm_context ctx(gpu, {{msm_group::g1, n}});
    for (int pat = 0; pat < 4; pat++) {
        auto sc = head_then(n, head, 200 + pat,
                            pat == 0   ? scalars_mix(n - head, 45, 45, 210)
                            : pat == 1 ? scalars_mix(n - head, 0, 100, 211)
                            : pat == 2 ? scalars_short(n - head, 20, 10, 212)
                                       : scalars_mix(n - head, 30, 30, 213));
        if (pat == 3)  // a few 0s and 1s inside the head too
            for (size_t i = 0; i < head; i += 97)
                sc[i] = i % 2 ? fr_u64(1) : FR_ZERO;
        void *ds = upload(sc);
        const blst_p1 want = cpu_msm_g1(pts.data(), fold(sc, distinct).data(), distinct);
        for (size_t dense : {head, size_t(0)}) {
            msm_job job{0, d1, ds, n};
            job.dense = dense;
            ctx.run(&job, 1, nullptr, nullptr);
            g1_proj_raw r;
            ctx.read(0, r);
            blst_p1 got;
            std::memcpy(&got, &r, sizeof(got));
            report(eq1(got, want), "msm dense head " + std::to_string(dense) + " tail pattern " +
                                       std::to_string(pat));
        }
        cudaFree(ds);
    }
    cudaFree(d1);
}

static double profiled_run(msm_context &ctx, const msm_job &job, bool g2, msm_profile &prof,
                           blst_p1 &p1, blst_p2 &p2);

// Pippenger runs of several batches (msm_tuning::batch_cap cuts small runs
// into batches of 2048 or 4096 scalars): the batches carrying their
// buckets (the default) and integrating their own, in G1 with a dense head
// before a 0/1 split's rest (which adds into the head's carried set) and
// without it, and in G2, all against blst.
static void test_msm_carried(const gpu_t &gpu) {
    const size_t n = 12000, head = 9500, distinct = 1 << 12;
    auto pts = g1_points(distinct, n, 41);
    void *d1 = upload(pts);
    msm_context ctx(gpu, {{msm_group::g1, n}});
    for (int pat = 0; pat < 3; pat++) {
        const auto sc = head_then(n, head, 300 + pat,
                                  pat == 0   ? scalars_mix(n - head, 45, 45, 310)
                                  : pat == 1 ? scalars_short(n - head, 20, 10, 311)
                                             : scalars_mix(n - head, 0, 0, 312));
        void *ds = upload(sc);
        const blst_p1 want = cpu_msm_g1(pts.data(), fold(sc, distinct).data(), distinct);
        for (int carry : {-1, 0}) {
            msm_tuning t;
            t.batch_cap = 2048;
            t.carry_buckets = carry;
            ctx.tune(0, t);
            for (size_t dense : {head, size_t(0)}) {
                msm_job job{0, d1, ds, n};
                job.dense = dense;
                msm_profile prof;
                blst_p1 got;
                blst_p2 unused;
                profiled_run(ctx, job, false, prof, got, unused);
                char label[200];
                std::snprintf(label, sizeof label,
                              "msm G1 in batches of 2048, %s buckets (width %u, %u batches), "
                              "dense head %zu, tail pattern %d",
                              carry ? "carried" : "per-batch", prof.wbits, prof.batches, dense,
                              pat);
                report(eq1(got, want) && prof.batches > 1, label);
            }
        }
        ctx.tune(0, msm_tuning{});
        cudaFree(ds);
    }
    cudaFree(d1);

    const size_t n2 = 16385, distinct2 = 1 << 12;
    auto p2 = g2_points(distinct2, n2, 42);
    auto sc2 = scalars_mix(n2, 20, 20, 320);
    void *dp2 = upload(p2), *ds2 = upload(sc2);
    const blst_p2 want2 = cpu_msm_g2(p2.data(), fold(sc2, distinct2).data(), distinct2);
    msm_context ctx2(gpu, {{msm_group::g2, n2}});
    for (int carry : {-1, 0}) {
        msm_tuning t;
        t.batch_cap = 4096;
        t.carry_buckets = carry;
        ctx2.tune(0, t);
        for (bool split : {true, false}) {
            if (split) {
                msm_job job{0, dp2, ds2, n2};
                ctx2.run(&job, 1, nullptr, nullptr);
            } else {
                ctx2.launch(0, ctx2.stream(0), dp2, ds2, n2, false);
                ck(cudaStreamSynchronize(ctx2.stream(0)), "sync");
            }
            g2_proj_raw raw;
            ctx2.read(0, raw);
            blst_p2 got;
            std::memcpy(&got, &raw, sizeof got);
            report(eq2(got, want2), std::string("msm G2 in batches of 4096, ") +
                                        (carry ? "carried" : "per-batch") + " buckets, " +
                                        (split ? "0/1 split" : "all Pippenger"));
        }
    }
    cudaFree(dp2);
    cudaFree(ds2);
}

static void test_h(const gpu_t &gpu, uint32_t lg, bool naive_too) {
    const size_t n = size_t(1) << lg;
    rng_t g(lg);
    std::vector<blst_fr> a(n), b(n), c(n);
    for (size_t i = 0; i < n; i++) {
        a[i] = fr_rand(g);
        b[i] = fr_rand(g);
        c[i] = fr_rand(g);
    }
    double secs = 0;
    auto got = gpu_h(gpu, a, b, c, lg, &secs);
    auto want = cpu_h(a, b, c, lg, false);
    report(same_fr(got, want), "H 2^" + std::to_string(lg) + " vs CPU FFT");
    if (naive_too)
        report(same_fr(got, cpu_h(a, b, c, lg, true)), "H 2^" + std::to_string(lg) + " vs naive DFT");
}

// The MSMs of a 2^lg proof (h + l over 2^(lg+1) points, a, b_g1 in G1,
// b_g2 in G2), one at a time and all four at once, for dense and 0/1-heavy
// scalars; the concurrent results checked against blst (points tiled).
static void timing_msm(const gpu_t &gpu, uint32_t lg) {
    const size_t n = size_t(1) << lg;
    auto p1 = g1_points(1 << 16, 2 * n, 11);
    auto p2 = g2_points(1 << 14, n, 12);
    void *d1 = upload(p1);
    void *d2 = upload(p2);
    msm_context ctx(gpu, {{msm_group::g1, 2 * n},
                          {msm_group::g1, n},
                          {msm_group::g1, n},
                          {msm_group::g2, n}});
    std::printf("INFO msm context for 2^%u: %.0f MiB\n", lg, ctx.bytes() / 1048576.0);
    struct shape {
        const char *name;
        int z, o;
    } shapes[] = {{"dense", 0, 0}, {"bits(48% 0, 48% 1)", 48, 48}};
    const char *names[4] = {"h+l", "a", "b_g1", "b_g2"};
    {
        // The fixed cost of one MSM: 32 dense scalars, 0/1 split or not.
        auto sc = scalars_mix(32, 0, 0, 97);
        void *ds = upload(sc);
        for (int i : {1, 3}) {
            msm_job job{(size_t)i, i == 3 ? d2 : d1, ds, 32};
            uint64_t ns[1];
            ctx.run(&job, 1, nullptr, ns);
            double t0 = now_s();
            for (int r = 0; r < 5; r++)
                ctx.run(&job, 1, nullptr, ns);
            const double split = (now_s() - t0) / 5;
            t0 = now_s();
            for (int r = 0; r < 5; r++) {
                ctx.launch(i, ctx.stream(i), job.d_points, ds, 32, false);
                ck(cudaStreamSynchronize(ctx.stream(i)), "sync");
            }
            std::printf("TIME msm fixed cost (n=32) %s: %.2f ms with the 0/1 split, %.2f ms "
                        "without\n",
                        i == 3 ? "G2" : "G1", split * 1e3, (now_s() - t0) / 5 * 1e3);
        }
        cudaFree(ds);
    }
    for (auto &sh : shapes) {
        auto hl = scalars_mix(2 * n, sh.z, sh.o, 98);
        auto sc = scalars_mix(n, sh.z, sh.o, 99);
        void *dhl = upload(hl);
        void *ds = upload(sc);
        msm_job jobs[4] = {{0, d1, dhl, 2 * n}, {1, d1, ds, n}, {2, d1, ds, n}, {3, d2, ds, n}};
        uint64_t ns[4];
        for (int i = 0; i < 4; i++) {
            ctx.run(&jobs[i], 1, nullptr, ns);  // warm-up
            double t0 = now_s();
            const int reps = 3;
            for (int r = 0; r < reps; r++)
                ctx.run(&jobs[i], 1, nullptr, ns);
            std::printf("TIME msm 2^%u %s %s alone: %.2f ms wall, %.2f ms on its stream\n", lg,
                        sh.name, names[i], (now_s() - t0) / reps * 1e3, ns[0] / 1e6);
        }
        ctx.run(jobs, 4, nullptr, ns);
        double t0 = now_s();
        const int reps = 3;
        for (int r = 0; r < reps; r++)
            ctx.run(jobs, 4, nullptr, ns);
        std::printf("TIME msm 2^%u %s all four at once: %.2f ms wall (streams: h+l %.2f, a %.2f, "
                    "b_g1 %.2f, b_g2 %.2f ms)\n",
                    lg, sh.name, (now_s() - t0) / reps * 1e3, ns[0] / 1e6, ns[1] / 1e6,
                    ns[2] / 1e6, ns[3] / 1e6);
        g1_proj_raw r1;
        g2_proj_raw r2;
        blst_p1 got1;
        blst_p2 got2;
        ctx.read(0, r1);
        std::memcpy(&got1, &r1, sizeof(got1));
        report(eq1(got1, cpu_msm_g1(p1.data(), fold(hl, 1 << 16).data(), 1 << 16)),
               std::string("msm G1 2^") + std::to_string(lg + 1) + " " + sh.name);
        ctx.read(2, r1);
        std::memcpy(&got1, &r1, sizeof(got1));
        report(eq1(got1, cpu_msm_g1(p1.data(), fold(sc, 1 << 16).data(), 1 << 16)),
               std::string("msm G1 2^") + std::to_string(lg) + " " + sh.name);
        ctx.read(3, r2);
        std::memcpy(&got2, &r2, sizeof(got2));
        report(eq2(got2, cpu_msm_g2(p2.data(), fold(sc, 1 << 14).data(), 1 << 14)),
               std::string("msm G2 2^") + std::to_string(lg) + " " + sh.name);
        cudaFree(dhl);
        cudaFree(ds);
    }
    cudaFree(d1);
    cudaFree(d2);
}

// Where an MSM's time goes (msm_context::profile): each phase of the MSMs
// of a 2^lg proof, one MSM at a time, for dense scalars, 0/1-heavy ones,
// and the h+l of a 0/1-heavy circuit (H dense, L 0/1); then Pippenger's
// window width swept for a dense 2^lg G1 and G2 MSM, each result checked
// against the automatic width's.
static void print_profile(const char *label, const msm_profile &p, double wall_ms) {
    std::printf("PROFILE %s: wall %.2f ms | wbits %u windows %u batches %u pippenger %zu |",
                label, wall_ms, p.wbits, p.windows, p.batches, p.pippenger_points);
    for (int k = 0; k < msm_phase_count; k++)
        if (p.ms[k] > 0)
            std::printf(" %s %.2f", msm_phase_name(k), p.ms[k]);
    std::printf("\n");
}

// One profiled run of `job` (its phases into prof); its result read back
// into p1 or p2 (g2) while profiled, so the host combination is counted.
// Returns the wall time in ms.
static double profiled_run(msm_context &ctx, const msm_job &job, bool g2, msm_profile &prof,
                           blst_p1 &p1, blst_p2 &p2) {
    ctx.profile(job.slot, &prof);
    const double t0 = now_s();
    uint64_t ns[1];
    ctx.run(&job, 1, nullptr, ns);
    if (g2) {
        g2_proj_raw r;
        ctx.read(job.slot, r);
        std::memcpy(&p2, &r, sizeof p2);
    } else {
        g1_proj_raw r;
        ctx.read(job.slot, r);
        std::memcpy(&p1, &r, sizeof p1);
    }
    const double wall = (now_s() - t0) * 1e3;
    ctx.profile(job.slot, nullptr);
    return wall;
}

// One MSM timed (a warm-up, then the mean of three runs) and profiled once,
// its result checked against want1 or want2 (g2); `reference` names what
// those are.
static void timed_check(msm_context &ctx, const msm_job &job, bool g2, const blst_p1 &want1,
                        const blst_p2 &want2, const std::string &label,
                        const char *reference) {
    uint64_t ns[1];
    ctx.run(&job, 1, nullptr, ns);
    const int reps = 3;
    double t0 = now_s();
    for (int k = 0; k < reps; k++)
        ctx.run(&job, 1, nullptr, ns);
    const double plain = (now_s() - t0) / reps * 1e3;
    msm_profile prof;
    blst_p1 got1;
    blst_p2 got2;
    const double wall = profiled_run(ctx, job, g2, prof, got1, got2);
    report(g2 ? eq2(got2, want2) : eq1(got1, want1), label + " equals " + reference);
    std::printf("TIME msm %s: %.2f ms unprofiled\n", label.c_str(), plain);
    print_profile(label.c_str(), prof, wall);
}

// The four MSMs of a proof at once: jobs h+l, a, b_g1 (or a stand-in),
// b_g2 (G2, last), timed over three runs with their results read back.
static void time_four(msm_context &ctx, const msm_job (&jobs)[4], uint32_t lg,
                      const std::string &label) {
    uint64_t ns[4];
    ctx.run(jobs, 4, nullptr, ns);
    const int reps = 3;
    double t0 = now_s();
    for (int k = 0; k < reps; k++) {
        ctx.run(jobs, 4, nullptr, ns);
        g1_proj_raw r1;
        g2_proj_raw r2;
        ctx.read(jobs[0].slot, r1);
        ctx.read(jobs[1].slot, r1);
        ctx.read(jobs[2].slot, r1);
        ctx.read(jobs[3].slot, r2);
    }
    std::printf("TIME msm 2^%u %s, all four at once: %.2f ms wall (streams: h+l %.2f, a "
                "%.2f, b_g1 %.2f, b_g2 %.2f ms)\n",
                lg, label.c_str(), (now_s() - t0) / reps * 1e3, ns[0] / 1e6, ns[1] / 1e6,
                ns[2] / 1e6, ns[3] / 1e6);
}

// A table of multiples of the first n points at d (rows of n, built with
// width wbits, 0: msm_table_window_bits(n)); cudaFree it.
static void *make_table(cudaStream_t s, msm_group g, const void *d, size_t n, uint32_t &wbits) {
    const size_t pb = g == msm_group::g2 ? sizeof(blst_p2_affine) : sizeof(blst_p1_affine);
    if (!wbits)
        wbits = msm_table_window_bits(n);
    void *t = nullptr;
    ck(cudaMalloc(&t, msm_table_windows(wbits) * n * pb), "cudaMalloc(table)");
    ck(cudaMemcpy(t, d, n * pb, cudaMemcpyDeviceToDevice), "DtoD");
    const double t0 = now_s();
    msm_build_table(s, g, t, n, wbits);
    ck(cudaStreamSynchronize(s), "table");
    std::printf("TIME table %s 2^%.0f wbits %u: built in %.1f ms, %.0f MiB\n",
                g == msm_group::g2 ? "G2" : "G1", std::log2((double)n), wbits,
                (now_s() - t0) * 1e3, msm_table_windows(wbits) * n * pb / 1048576.0);
    return t;
}

// The same MSMs over tables of multiples (profile_msm's slots 0-4): each
// alone with its phases, the four of a proof at once, and the table's
// width swept; every result checked against Pippenger without a table.
static void profile_tables(msm_context &ctx, void *d1, void *d2, size_t n, uint32_t lg) {
    uint32_t w_hl = 0, w_a = 0, w_b2 = 0;
    void *t_hl = make_table(ctx.stream(0), msm_group::g1, d1, 2 * n, w_hl);
    void *t_a = make_table(ctx.stream(1), msm_group::g1, d1, n, w_a);
    void *t_b2 = make_table(ctx.stream(2), msm_group::g2, d2, n, w_b2);
    auto dense = scalars_mix(n, 0, 0, 99);
    auto bits = scalars_mix(n, 48, 48, 98);
    auto hl_dense = scalars_mix(2 * n, 0, 0, 97);
    auto hl_circuit = scalars_mix(2 * n, 48, 48, 96);
    std::copy(dense.begin(), dense.end(), hl_circuit.begin());  // H dense, L 0/1
    // The `bits` circuit's L: every 64th scalar a 63-bit packed value.
    auto hl_shorts = hl_circuit;
    const auto packed = scalars_short(n / 64, 63, 0, 95);
    for (size_t i = 0; i < packed.size(); i++)
        hl_shorts[n + 64 * i] = packed[i];
    // Half 0/1, a quarter 32-bit, a quarter dense.
    auto mixed = scalars_short(n, 32, 25, 94);
    const auto mixed01 = scalars_mix(n / 2, 50, 50, 93);
    std::copy(mixed01.begin(), mixed01.end(), mixed.begin());
    void *dd = upload(dense), *db = upload(bits), *dhd = upload(hl_dense),
         *dhc = upload(hl_circuit), *dhs = upload(hl_shorts), *dm = upload(mixed);
    struct run_t {
        const char *label;
        size_t slot;
        void *pts, *table, *sc;
        size_t n;
        uint32_t wbits;
        bool g2;
    } runs[] = {{"h+l dense", 0, d1, t_hl, dhd, 2 * n, w_hl, false},
                {"h+l bits-circuit (H dense, L 0/1)", 0, d1, t_hl, dhc, 2 * n, w_hl, false},
                {"h+l bits-circuit, L with n/64 63-bit", 0, d1, t_hl, dhs, 2 * n, w_hl, false},
                {"a dense", 1, d1, t_a, dd, n, w_a, false},
                {"a 1/2 0-1, 1/4 32-bit, 1/4 dense", 1, d1, t_a, dm, n, w_a, false},
                {"b_g2 dense", 2, d2, t_b2, dd, n, w_b2, true}};
    for (const auto &r : runs) {
        msm_job plain_job{r.slot, r.pts, r.sc, r.n};
        msm_job job{r.slot, r.table, r.sc, r.n, r.wbits};
        msm_profile unused;
        blst_p1 want1;
        blst_p2 want2;
        profiled_run(ctx, plain_job, r.g2, unused, want1, want2);
        char label[128];
        std::snprintf(label, sizeof label, "2^%u %s, table", lg, r.label);
        timed_check(ctx, job, r.g2, want1, want2, label, "Pippenger");
    }
    struct four_t { const char *label; void *hl, *sc; } fours[] = {
        {"dense", dhd, dd}, {"bits-circuit", dhc, db}};
    for (const auto &f : fours) {
        const msm_job jobs[4] = {{0, t_hl, f.hl, 2 * n, w_hl}, {1, t_a, f.sc, n, w_a},
                                 {3, t_a, f.sc, n, w_a}, {2, t_b2, f.sc, n, w_b2}};
        time_four(ctx, jobs, lg, std::string(f.label) + " with tables");
    }
    // Widths swept on the wide slots, dense scalars.
    for (int g = 0; g < 2; g++) {
        const size_t slot = g ? 4 : 3;
        msm_job plain_job{slot, g ? d2 : d1, dd, n};
        msm_profile unused;
        blst_p1 want1;
        blst_p2 want2;
        profiled_run(ctx, plain_job, g, unused, want1, want2);
        for (uint32_t w : {15u, 16u, 17u, 18u, 19u, 20u}) {
            const msm_group grp = g ? msm_group::g2 : msm_group::g1;
            void *t = make_table(ctx.stream(slot), grp, g ? d2 : d1, n, w);
            msm_job job{slot, t, dd, n, w};
            char label[96];
            std::snprintf(label, sizeof label, "2^%u %s dense, table wbits %u", lg,
                          g ? "G2" : "G1", w);
            timed_check(ctx, job, g, want1, want2, label, "Pippenger");
            cudaFree(t);
        }
    }
    for (void *p : {dd, db, dhd, dhc, dhs, dm, t_hl, t_a, t_b2})
        cudaFree(p);
}

// The bases of the MSMs of a 2^lg proof on the host and the device: 2^(lg+1)
// in G1 (H + L), 2^lg in G2, tiled from 2^16 and 2^14 distinct points.
struct proof_bases {
    std::vector<blst_p1_affine> p1;
    std::vector<blst_p2_affine> p2;
    void *d1, *d2;
    explicit proof_bases(size_t n)
        : p1(g1_points(1 << 16, 2 * n, 11)), p2(g2_points(1 << 14, n, 12)), d1(upload(p1)),
          d2(upload(p2)) {}
    ~proof_bases() {
        cudaFree(d1);
        cudaFree(d2);
    }
};

// Whether the four slots of a proof's MSMs (tune_msm's context) hold
// their expected sums: H + L in slot 0, A and B in G1 in slots 1 and 3,
// B in G2 in slot 2.
static bool four_equal(msm_context &ctx, const blst_p1 &want_hl, const blst_p1 &want_g1,
                       const blst_p2 &want_g2) {
    g1_proj_raw r1;
    g2_proj_raw r2;
    blst_p1 got1;
    blst_p2 got2;
    bool ok = true;
    for (size_t slot : {0, 1, 3}) {
        ctx.read(slot, r1);
        std::memcpy(&got1, &r1, sizeof got1);
        ok = ok && eq1(got1, slot ? want_g1 : want_hl);
    }
    ctx.read(2, r2);
    std::memcpy(&got2, &r2, sizeof got2);
    return ok && eq2(got2, want_g2);
}

// The variants of msm_tuning side by side at 2^lg: over tables, a dense
// H + L, G1 and G2 MSM alone (phases profiled) and the four MSMs of a dense
// proof at once; without tables, Pippenger's window chunks on dense and
// 0/1-heavy scalars; then the four at once with B's sort shared or not.
// Every result checked against Pippenger without a table or the default.
static void tune_msm(const gpu_t &gpu, uint32_t lg) {
    const size_t n = size_t(1) << lg;
    const proof_bases bases(n);
    void *d1 = bases.d1, *d2 = bases.d2;
    msm_context ctx(gpu, {{msm_group::g1, 2 * n, true},
                          {msm_group::g1, n, true},
                          {msm_group::g2, n, true},
                          {msm_group::g1, n, true}});
    uint32_t w_hl = 0, w_a = 0, w_b2 = 0;
    void *t_hl = make_table(ctx.stream(0), msm_group::g1, d1, 2 * n, w_hl);
    void *t_a = make_table(ctx.stream(1), msm_group::g1, d1, n, w_a);
    void *t_b2 = make_table(ctx.stream(2), msm_group::g2, d2, n, w_b2);
    auto dense = scalars_mix(n, 0, 0, 99);
    auto hl_dense = scalars_mix(2 * n, 0, 0, 97);
    void *dd = upload(dense), *dhd = upload(hl_dense);
    blst_p1 want_a, want_hl;
    blst_p2 want_b2;
    {
        msm_profile unused;
        blst_p1 o1;
        blst_p2 o2;
        profiled_run(ctx, msm_job{0, d1, dhd, 2 * n}, false, unused, want_hl, o2);
        profiled_run(ctx, msm_job{1, d1, dd, n}, false, unused, want_a, o2);
        profiled_run(ctx, msm_job{2, d2, dd, n}, true, unused, o1, want_b2);
    }
    struct variant_t {
        const char *label;
        msm_tuning t;
    } variants[] = {
        {"default: affine rounds in G2, in G1 beside two more table runs", {}},
        {"affine rounds in G1 and G2 (32 to 128 pairs per thread)", {0, -1, -1, 0, 0, 0, -1, -1, -1, 1}},
        {"affine rounds, 16 to 32 pairs", {0, -1, -1, 0, 0, 0, -1, -1, -1, 1, 32, 16}},
        {"affine rounds, 16 to 128 pairs", {0, -1, -1, 0, 0, 0, -1, -1, -1, 1, 128, 16}},
        {"affine rounds, 64 pairs", {0, -1, -1, 0, 0, 0, -1, -1, -1, 1, 64, 64}},
        {"affine rounds, 128 pairs", {0, -1, -1, 0, 0, 0, -1, -1, -1, 1, 128, 128}},
        {"affine rounds in G2, chunks in G1", {0, -1, -1, 0, 0, 0, -1, -1, -1, -2}},
        {"chunks of xyzz additions in G1 and G2", {0, -1, -1, 0, 0, 0, -1, -1, -1, 0}},
        {"weighted sum's tail in levels of 2", {0, -1, -1, 0, 0, 0, -1, -1, 0}},
        {"integrate+finish, chunk 32", {32, 0, 0, 0, 0, 0, -1, -1, -1, 0}},
        {"chunks, sppark's addition", {0, -1, -1, 0, 0, 0, -1, 0, -1, 0}},
        {"chunks, madd_dot in G1 and G2", {0, -1, -1, 0, 0, 0, -1, 1, -1, 0}},
    };
    for (const auto &v : variants) {
        for (size_t slot = 0; slot < 4; slot++)
            ctx.tune(slot, v.t);
        const std::string tag = std::string(" [") + v.label + "]";
        timed_check(ctx, msm_job{0, t_hl, dhd, 2 * n, w_hl}, false, want_hl, want_b2,
                    "2^" + std::to_string(lg) + " h+l dense, table" + tag, "Pippenger");
        timed_check(ctx, msm_job{1, t_a, dd, n, w_a}, false, want_a, want_b2,
                    "2^" + std::to_string(lg) + " G1 dense, table" + tag, "Pippenger");
        timed_check(ctx, msm_job{2, t_b2, dd, n, w_b2}, true, want_a, want_b2,
                    "2^" + std::to_string(lg) + " G2 dense, table" + tag, "Pippenger");
        const msm_job jobs[4] = {{0, t_hl, dhd, 2 * n, w_hl}, {1, t_a, dd, n, w_a},
                                 {3, t_a, dd, n, w_a}, {2, t_b2, dd, n, w_b2}};
        time_four(ctx, jobs, lg, "dense with tables" + tag);
        // B in G1 (slot 3) and in G2 took A's sorted digits (same scalars).
        report(four_equal(ctx, want_hl, want_a, want_b2),
               "2^" + std::to_string(lg) + " four at once" + tag);
    }
    // Pippenger's windows without a table, dense and 0/1-heavy scalars (the
    // split's rest), in chunks of 64 and of other lengths, fitted to whole
    // waves or not.
    {
        auto bits = scalars_mix(n, 48, 48, 98);
        void *dbits = upload(bits);
        struct wvar_t {
            const char *label;
            msm_tuning t;
        } wvars[] = {{"default (small runs as before)", {}},
                     {"small runs in blocks of 128", {0, -1, -1, 0, 0, 0, 1}},
                     {"small runs in shorter chunks", {0, -1, -1, 0, 0, 0, 2}},
                     {"small runs in blocks of 128 and shorter chunks", {0, -1, -1, 0, 0, 0, 3}},
                     {"all runs in blocks of 128", {0, -1, -1, 0, 0, 128, 0}},
                     {"sppark's addition", {0, -1, -1, 0, 0, 0, -1, 0}}};
        // The bits circuit's four at once over tables (H dense, L, A and B
        // 0/1-heavy), checked against Pippenger.
        auto hl_bits = scalars_mix(2 * n, 48, 48, 96);
        std::copy(dense.begin(), dense.end(), hl_bits.begin());
        void *dhb = upload(hl_bits);
        blst_p1 want_bits1, want_hlb;
        blst_p2 want_bits2;
        {
            for (size_t slot = 0; slot < 4; slot++)
                ctx.tune(slot, msm_tuning{});
            msm_profile unused;
            blst_p1 o1;
            blst_p2 o2;
            profiled_run(ctx, msm_job{1, d1, dbits, n}, false, unused, want_bits1, o2);
            profiled_run(ctx, msm_job{2, d2, dbits, n}, true, unused, o1, want_bits2);
            profiled_run(ctx, msm_job{0, d1, dhb, 2 * n}, false, unused, want_hlb, o2);
        }
        for (const auto &v : wvars) {
            for (size_t slot = 0; slot < 4; slot++)
                ctx.tune(slot, v.t);
            const std::string tag = std::string(" [") + v.label + "]";
            const std::string lgs = "2^" + std::to_string(lg);
            timed_check(ctx, msm_job{1, d1, dd, n}, false, want_a, want_b2,
                        lgs + " G1 dense, Pippenger" + tag, "the default");
            timed_check(ctx, msm_job{2, d2, dd, n}, true, want_a, want_b2,
                        lgs + " G2 dense, Pippenger" + tag, "the default");
            timed_check(ctx, msm_job{1, d1, dbits, n}, false, want_bits1, want_bits2,
                        lgs + " G1 bits, split" + tag, "the default");
            timed_check(ctx, msm_job{2, d2, dbits, n}, true, want_bits1, want_bits2,
                        lgs + " G2 bits, split" + tag, "the default");
            const msm_job jobs[4] = {{0, t_hl, dhb, 2 * n, w_hl}, {1, t_a, dbits, n, w_a},
                                     {3, t_a, dbits, n, w_a}, {2, t_b2, dbits, n, w_b2}};
            time_four(ctx, jobs, lg, "bits circuit with tables" + tag);
            report(four_equal(ctx, want_hlb, want_bits1, want_bits2),
                   lgs + " bits circuit, four at once" + tag);
        }
        cudaFree(dbits);
        cudaFree(dhb);
    }
    // The default again with the scalars of B (same values) in buffers of
    // their own: B in G1 and in G2 sharing one sort (as a proof's pass has
    // them), then each MSM sorting its own digits.
    {
        for (size_t slot = 0; slot < 4; slot++)
            ctx.tune(slot, msm_tuning{});
        void *db = upload(dense), *db2 = upload(dense);
        const msm_job pass[4] = {{0, t_hl, dhd, 2 * n, w_hl}, {1, t_a, dd, n, w_a},
                                 {3, t_a, db, n, w_a}, {2, t_b2, db, n, w_b2}};
        time_four(ctx, pass, lg, "dense with tables [default, B in G1 and G2 share a sort]");
        const msm_job apart[4] = {{0, t_hl, dhd, 2 * n, w_hl}, {1, t_a, dd, n, w_a},
                                  {3, t_a, db, n, w_a}, {2, t_b2, db2, n, w_b2}};
        time_four(ctx, apart, lg, "dense with tables [default, every MSM sorts its own]");
        cudaFree(db);
        cudaFree(db2);
    }
    for (void *p : {dd, dhd, t_hl, t_a, t_b2})
        cudaFree(p);
}

static void profile_msm(const gpu_t &gpu, uint32_t lg) {
    const size_t n = size_t(1) << lg;
    const proof_bases bases(n);
    void *d1 = bases.d1, *d2 = bases.d2;
    // Slots 0-2 as a proof of 2^lg holds them; 3 and 4 wide enough for the
    // window sweep.
    const size_t wide1 = size_t(1) << 24, wide2 = size_t(1) << 22;
    msm_context ctx(gpu, {{msm_group::g1, 2 * n, true},
                          {msm_group::g1, n, true},
                          {msm_group::g2, n, true},
                          {msm_group::g1, wide1, true},
                          {msm_group::g2, wide2, true}});
    std::printf("INFO profile context: %.0f MiB\n", ctx.bytes() / 1048576.0);
    auto dense = scalars_mix(n, 0, 0, 99);
    auto bits = scalars_mix(n, 48, 48, 98);
    auto hl_dense = scalars_mix(2 * n, 0, 0, 97);
    auto hl_bits = scalars_mix(2 * n, 48, 48, 96);
    auto hl_circuit = hl_bits;
    std::copy(dense.begin(), dense.end(), hl_circuit.begin());  // H dense, L 0/1
    struct run_t {
        const char *label;
        size_t slot;
        const std::vector<blst_fr> *sc;
        bool g2;
    } runs[] = {{"h+l dense", 0, &hl_dense, false},
                {"h+l bits", 0, &hl_bits, false},
                {"h+l bits-circuit (H dense, L 0/1)", 0, &hl_circuit, false},
                {"a dense", 1, &dense, false},
                {"a bits", 1, &bits, false},
                {"b_g2 dense", 2, &dense, true},
                {"b_g2 bits", 2, &bits, true}};
    for (const auto &r : runs) {
        void *ds = upload(*r.sc);
        msm_job job{r.slot, r.g2 ? d2 : d1, ds, r.sc->size()};
        uint64_t ns[1];
        ctx.run(&job, 1, nullptr, ns);  // warm-up
        double t0 = now_s();
        ctx.run(&job, 1, nullptr, ns);
        const double plain = (now_s() - t0) * 1e3;
        msm_profile prof;
        blst_p1 o1;
        blst_p2 o2;
        const double wall = profiled_run(ctx, job, r.g2, prof, o1, o2);
        std::printf("TIME msm 2^%u %s: %.2f ms unprofiled\n", lg, r.label, plain);
        print_profile((std::string("2^") + std::to_string(lg) + " " + r.label).c_str(), prof,
                      wall);
        cudaFree(ds);
    }
    // The four MSMs of a proof at once, as the Groth16 pass runs them: a
    // dense circuit and a 0/1-heavy one (H dense, the rest 0/1).
    {
        void *dd = upload(dense), *db = upload(bits), *dhd = upload(hl_dense),
             *dhc = upload(hl_circuit);
        struct four_t { const char *label; void *hl, *sc; } fours[] = {
            {"dense", dhd, dd}, {"bits-circuit", dhc, db}};
        // Slot 3 (wide, G1) stands in for b_g1: a proof's context has one
        // slot per MSM.
        for (const auto &f : fours) {
            const msm_job jobs[4] = {{0, d1, f.hl, 2 * n}, {1, d1, f.sc, n}, {3, d1, f.sc, n},
                                     {2, d2, f.sc, n}};
            time_four(ctx, jobs, lg, f.label);
        }
        for (void *p : {dd, db, dhd, dhc})
            cudaFree(p);
    }
    // Window sweep on the wide slots (one batch), dense scalars.
    for (int g = 0; g < 2; g++) {
        const size_t slot = g ? 4 : 3;
        void *ds = upload(dense);
        msm_job job{slot, g ? d2 : d1, ds, n};
        ctx.window_bits(slot, 0);
        msm_profile unused;
        blst_p1 want1;
        blst_p2 want2;
        profiled_run(ctx, job, g, unused, want1, want2);
        for (uint32_t w = 10; w <= (g ? 15u : 17u); w++) {
            ctx.window_bits(slot, w);
            char label[96];
            std::snprintf(label, sizeof label, "2^%u %s dense, wbits %u, one batch", lg,
                          g ? "G2" : "G1", w);
            timed_check(ctx, job, g, want1, want2, label, "the automatic width");
        }
        ctx.window_bits(slot, 0);
        cudaFree(ds);
    }
    profile_tables(ctx, d1, d2, n, lg);
}

// Pippenger runs of many batches, as the 32 GiB C2's H + L (2^27 dense H
// scalars, then 2^27 L scalars that are mostly 0 or 1) and a dense 2^lg G1
// MSM alone: the batches carrying their buckets (the default; also at a
// narrower width) and integrating their own buckets as before (also at a
// wider width);
// each result checked against the default's (the small tests check the
// paths against blst). Points tiled from 2^16.
static void big_msm(const gpu_t &gpu, uint32_t lg) {
    const size_t n = size_t(1) << lg;
    double t0 = now_s();
    auto p1 = g1_points(1 << 16, 2 * n, 51);
    void *d1 = upload(p1);
    p1.clear();
    p1.shrink_to_fit();
    auto hl = scalars_mix(2 * n, 0, 0, 52);
    {
        const auto l = scalars_mix(n, 47, 47, 53);  // L: 47% 0s, 47% 1s, the rest long
        std::copy(l.begin(), l.end(), hl.begin() + n);
    }
    void *ds = upload(hl);
    hl.clear();
    hl.shrink_to_fit();
    std::printf("INFO big 2^%u: inputs made and uploaded in %.1f s\n", lg, now_s() - t0);
    blst_p1 wants[2];
    blst_p2 unused2;
    msm_context ctx(gpu, {{msm_group::g1, 2 * n}});
    std::printf("INFO big context: %.0f MiB\n", ctx.bytes() / 1048576.0);
    struct variant_t {
        const char *label;
        int carry;
        uint32_t w;
    } variants[] = {{"carried buckets", -1, 0},
                    {"carried buckets, width 15", -1, 15},
                    {"carried buckets, width 17", -1, 17},
                    {"per-batch buckets (as before)", 0, 0},
                    {"per-batch buckets, width 17", 0, 17}};
    for (int shape = 0; shape < 2; shape++) {
        msm_job job{0, d1, ds, shape ? n : 2 * n};
        job.dense = shape ? 0 : n;
        const std::string what = std::string("2^") + std::to_string(lg) +
                                 (shape ? " G1 dense" : " h+l (H dense, L 0/1)");
        blst_p1 want;
        blst_p2 unused;
        msm_profile first;
        ctx.tune(0, msm_tuning{});
        ctx.window_bits(0, 0);
        profiled_run(ctx, job, false, first, want, unused);
        for (const auto &v : variants) {
            msm_tuning t;
            t.carry_buckets = v.carry;
            ctx.tune(0, t);
            ctx.window_bits(0, v.w);
            timed_check(ctx, job, false, want, unused, what + " [" + v.label + "]", "the default");
        }
        ctx.tune(0, msm_tuning{});
        ctx.window_bits(0, 0);
        wants[shape] = want;
    }
    // Larger batches at their wider automatic widths: 2^24 scalars 18 bits,
    // 2^25 19 bits (14 windows), 2^26 20 bits (13 windows). 2^25 as the
    // proofs' H + L slot asks for it (msm_slot_spec::batch_max), also at a
    // forced 16 bits (more digit rows than its layout has: cut into smaller
    // batches); the others through CP_MSM_BATCH_LG (read when a context is
    // laid out).
    struct wide_t {
        const char *lg;
        uint32_t w;
        bool spec;
    } wides[] = {{"24", 0, false}, {"25", 0, true}, {"25", 16, true}, {"26", 0, false}};
    for (const auto &v : wides) {
        msm_slot_spec spec{msm_group::g1, 2 * n};
        if (v.spec)
            spec.batch_max = size_t(1) << std::atoi(v.lg);
        else
            setenv("CP_MSM_BATCH_LG", v.lg, 1);
        msm_context wide(gpu, {spec});
        unsetenv("CP_MSM_BATCH_LG");
        std::printf("INFO big context with batches of 2^%s: %.0f MiB\n", v.lg,
                    wide.bytes() / 1048576.0);
        wide.window_bits(0, v.w);
        for (int shape = 0; shape < 2; shape++) {
            msm_job job{0, d1, ds, shape ? n : 2 * n};
            job.dense = shape ? 0 : n;
            const std::string what = std::string("2^") + std::to_string(lg) +
                                     (shape ? " G1 dense" : " h+l (H dense, L 0/1)") +
                                     " [carried, batches of 2^" + v.lg +
                                     (v.w ? ", width " + std::to_string(v.w) : std::string()) +
                                     "]";
            timed_check(wide, job, false, wants[shape], unused2, what, "the default");
        }
    }
    cudaFree(ds);
    cudaFree(d1);
}

static void timing_h(const gpu_t &gpu, uint32_t lg) {
    const size_t n = size_t(1) << lg;
    rng_t g(5);
    std::vector<blst_fr> a(n), b(n), c(n);
    for (size_t i = 0; i < n; i++) {
        a[i] = fr_rand(g);
        b[i] = fr_rand(g);
        c[i] = fr_rand(g);
    }
    double s0 = 0, s1 = 0;
    gpu_h(gpu, a, b, c, lg, &s0);
    auto got = gpu_h(gpu, a, b, c, lg, &s1);
    std::printf("TIME H 2^%u (7 NTTs + pointwise, data on device): first %.1f ms, next %.1f ms\n",
                lg, s0 * 1e3, s1 * 1e3);
    double t0 = now_s();
    report(same_fr(got, cpu_h(a, b, c, lg, false)), "H 2^" + std::to_string(lg) + " vs CPU FFT");
    std::printf("  (CPU FFT reference took %.1f s)\n", now_s() - t0);
}

// ---------------------------------------------------------------- device_part

struct circuit_data {
    std::vector<blst_fr> a, b, c, inputs, aux;
    std::vector<uint64_t> a_aux, b_in, b_aux;
    cp_circuit c_abi;
    cp::circuit_job job;
};

static size_t popcount(const std::vector<uint64_t> &v) {
    size_t n = 0;
    for (auto w : v)
        n += __builtin_popcountll(w);
    return n;
}

// Random witness (not satisfying: the device part does not check it).
static void make_circuit(circuit_data &d, size_t nc, size_t ni, size_t na, int zpct, int opct,
                         uint64_t seed) {
    rng_t g(seed);
    d.a.resize(nc);
    d.b.resize(nc);
    d.c.resize(nc);
    for (size_t i = 0; i < nc; i++) {
        d.a[i] = fr_rand(g);
        d.b[i] = fr_rand(g);
        d.c[i] = fr_rand(g);
    }
    d.inputs = scalars_mix(ni, 0, 0, seed + 1);
    d.inputs[0] = fr_u64(1);
    d.aux = scalars_mix(na, zpct, opct, seed + 2);
    auto bits = [&](size_t n, int pct) {
        std::vector<uint64_t> v((n + 63) / 64, 0);
        for (size_t i = 0; i < n; i++)
            if ((int)(g.next() % 100) < pct)
                v[i / 64] |= 1ull << (i % 64);
        return v;
    };
    d.a_aux = bits(na, 70);
    d.b_in = bits(ni, 60);
    d.b_in[0] |= 1;
    d.b_aux = bits(na, 50);
    std::memset(&d.c_abi, 0, sizeof(d.c_abi));
    d.c_abi.a = (const cp_fr *)d.a.data();
    d.c_abi.b = (const cp_fr *)d.b.data();
    d.c_abi.c = (const cp_fr *)d.c.data();
    d.c_abi.num_constraints = nc;
    d.c_abi.inputs = (const cp_fr *)d.inputs.data();
    d.c_abi.num_inputs = ni;
    d.c_abi.aux = (const cp_fr *)d.aux.data();
    d.c_abi.num_aux = na;
    d.c_abi.a_aux_density = d.a_aux.data();
    d.c_abi.b_input_density = d.b_in.data();
    d.c_abi.b_aux_density = d.b_aux.data();
    d.c_abi.tag = -1;
    uint32_t lg = 0;
    while ((size_t(1) << lg) < nc)
        lg++;
    d.job.a = d.a.data();
    d.job.b = d.b.data();
    d.job.c = d.c.data();
    d.job.num_constraints = nc;
    d.job.inputs = d.inputs.data();
    d.job.num_inputs = ni;
    d.job.aux = d.aux.data();
    d.job.num_aux = na;
    d.job.a_aux_density = d.a_aux.data();
    d.job.b_input_density = d.b_in.data();
    d.job.b_aux_density = d.b_aux.data();
    d.job.lg_domain = lg;
    d.job.a_aux_count = popcount(d.a_aux);
    d.job.b_input_count = popcount(d.b_in);
    d.job.b_aux_count = popcount(d.b_aux);
}

static void make_key(cp::srs &k, const circuit_data &d, size_t distinct) {
    const size_t m = size_t(1) << d.job.lg_domain;
    const size_t na = d.c_abi.num_inputs + d.job.a_aux_count;
    const size_t nb = d.job.b_input_count + d.job.b_aux_count;
    auto g1 = g1_points(std::min(distinct, std::max<size_t>(m, d.aux.size())),
                        std::max({m, d.aux.size(), na, nb}), 21);
    k.ic.assign(g1.begin() + 2, g1.begin() + 2 + d.c_abi.num_inputs);
    k.h.assign(g1.begin() + 1, g1.begin() + m);  // shifted so arrays differ
    k.l.assign(g1.begin(), g1.begin() + d.aux.size());
    std::reverse(k.l.begin(), k.l.end());
    k.a.assign(g1.begin(), g1.begin() + na);
    k.b_g1.assign(g1.rbegin(), g1.rbegin() + nb);
    const auto g2 = g2_points(std::min<size_t>(nb, 1 << 14), nb, 22);
    k.b_g2.assign(g2.begin(), g2.end());
}

static std::vector<blst_fr> filtered(const std::vector<blst_fr> &v, const std::vector<uint64_t> &bits) {
    std::vector<blst_fr> out;
    for (size_t i = 0; i < v.size(); i++)
        if ((bits[i / 64] >> (i % 64)) & 1)
            out.push_back(v[i]);
    return out;
}

static void check_abb(const cp::srs &k, const circuit_data &d, const cp::device_partials &p,
                      const std::string &label);

static void check_partials(const cp::srs &k, const circuit_data &d, const cp::device_partials &p,
                           const std::string &label) {
    const uint32_t lg = d.job.lg_domain;
    const size_t m = size_t(1) << lg;
    auto pad = [&](std::vector<blst_fr> v) { v.resize(m, FR_ZERO); return v; };
    auto h = cpu_h(pad(d.a), pad(d.b), pad(d.c), lg, false);
    // The backend may return h and l as one sum (the proof uses only h + l).
    blst_p1 hl_got, hl_want;
    blst_p1_add_or_double(&hl_got, &p.h, &p.l);
    blst_p1 hw = cpu_msm_g1(k.h.data(), h.data(), m - 1);
    blst_p1 lw = cpu_msm_g1(k.l.data(), d.aux.data(), d.aux.size());
    blst_p1_add_or_double(&hl_want, &hw, &lw);
    report(eq1(hl_got, hl_want), label + ": h + l");
    check_abb(k, d, p, label);
}

static void check_abb(const cp::srs &k, const circuit_data &d, const cp::device_partials &p,
                      const std::string &label) {
    auto sa = d.inputs;
    auto fa = filtered(d.aux, d.a_aux);
    sa.insert(sa.end(), fa.begin(), fa.end());
    report(eq1(p.a, cpu_msm_g1(k.a.data(), sa.data(), sa.size())), label + ": a");
    auto sb = filtered(d.inputs, d.b_in);
    auto fb = filtered(d.aux, d.b_aux);
    sb.insert(sb.end(), fb.begin(), fb.end());
    report(eq1(p.b_g1, cpu_msm_g1(k.b_g1.data(), sb.data(), sb.size())), label + ": b_g1");
    report(eq2(p.b_g2, cpu_msm_g2(k.b_g2.data(), sb.data(), sb.size())), label + ": b_g2");
}

static void print_timings(const char *label, const cp_timings &t, double wall) {
    // The MSMs run at the same time on their own streams: their times
    // overlap, the longest one counts.
    const uint64_t msm = std::max({t.msm_h_ns, t.msm_l_ns, t.msm_a_ns, t.msm_b_g1_ns,
                                   t.msm_b_g2_ns});
    const double sum = (t.upload_ns + t.ntt_ns + msm + t.batch_add_ns) / 1e6;
    std::printf("TIME device_part %s: wall %.1f ms | upload %.1f ntt %.1f msm_h %.1f msm_l %.1f "
                "msm_a %.1f msm_b_g1 %.1f msm_b_g2 %.1f batch_add %.1f | unattributed %.1f ms "
                "| peak %.0f MiB\n",
                label, wall * 1e3, t.upload_ns / 1e6, t.ntt_ns / 1e6, t.msm_h_ns / 1e6,
                t.msm_l_ns / 1e6, t.msm_a_ns / 1e6, t.msm_b_g1_ns / 1e6, t.msm_b_g2_ns / 1e6,
                t.batch_add_ns / 1e6, wall * 1e3 - sum, t.peak_device_bytes / 1048576.0);
}

// Host to device upload rates (GB/s) of a witness-sized pageable buffer:
// the ceilings (one DMA from pinned memory, the pool's copy into pinned
// memory alone, cudaMemcpy from pageable memory), then the staging ring
// (device/staging.hpp) at several buffer and piece sizes, its result
// checked against the source.
static void stage_bench(const gpu_t &gpu) {
    std::printf("INFO host threads in the gpu's pool: %zu\n", gpu.ncpus());
    for (size_t bytes : {size_t(32) << 20, size_t(83200000)}) {
        std::vector<unsigned char> host(bytes);
        for (size_t i = 0; i < bytes; i++)
            host[i] = (unsigned char)(i * 131 + (i >> 12));
        void *dev = nullptr, *pin = nullptr;
        ck(cudaMalloc(&dev, bytes), "cudaMalloc");
        ck(cudaHostAlloc(&pin, bytes, cudaHostAllocDefault), "cudaHostAlloc");
        std::memcpy(pin, host.data(), bytes);
        cudaStream_t s;
        ck(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "stream");
        const double mb = bytes / 1e6;
        auto rate = [&](const char *what, auto &&f) {
            f();
            const int reps = 5;
            const double t0 = now_s();
            for (int r = 0; r < reps; r++)
                f();
            const double ms = (now_s() - t0) / reps * 1e3;
            std::printf("TIME stage %.0f MB %s: %.2f ms, %.1f GB/s\n", mb, what, ms,
                        bytes / ms / 1e6);
        };
        rate("DMA from pinned", [&] {
            ck(cudaMemcpyAsync(dev, pin, bytes, cudaMemcpyHostToDevice, s), "DMA");
            ck(cudaStreamSynchronize(s), "sync");
        });
        rate("pool copy into pinned (512 KiB pieces)", [&] {
            const size_t piece = 512 * 1024, pieces = (bytes + piece - 1) / piece;
            gpu.par_map(pieces, 1, [&](size_t i) {
                const size_t off = i * piece;
                std::memcpy((char *)pin + off, host.data() + off, std::min(piece, bytes - off));
            });
        });
        rate("cudaMemcpy from pageable", [&] {
            ck(cudaMemcpy(dev, host.data(), bytes, cudaMemcpyHostToDevice), "cudaMemcpy");
        });
        struct cfg_t { size_t chunk, piece; } cfgs[] = {
            {8 << 20, 512 << 10}, {8 << 20, 1 << 20}, {16 << 20, 1 << 20}, {16 << 20, 2 << 20},
            {32 << 20, 1 << 20}, {32 << 20, 2 << 20}, {4 << 20, 256 << 10}, {2 << 20, 256 << 10}};
        for (const auto &c : cfgs) {
            cp::cuda_dev::stager st;
            st.tune(c.chunk, c.piece);
            st.ensure();
            char label[96];
            std::snprintf(label, sizeof label, "staged, buffers of %zu KiB, pieces of %zu KiB",
                          c.chunk >> 10, c.piece >> 10);
            ck(cudaMemset(dev, 0, bytes), "memset");
            rate(label, [&] {
                st.stage(gpu, dev, host.data(), bytes);
                ck(cudaStreamSynchronize(st.stream()), "sync");
            });
            std::vector<unsigned char> back(bytes);
            ck(cudaMemcpy(back.data(), dev, bytes, cudaMemcpyDeviceToHost), "DtoH");
            report(back == host, std::string("stage ") + label + " copies the bytes");
            st.release();
        }
        cudaStreamDestroy(s);
        cudaFreeHost(pin);
        cudaFree(dev);
    }
}

// A device part's tail, when it left one (a pass overlapped on the
// device's second lane), finished at once.
static void finish(std::unique_ptr<cp::device_tail> tail) {
    if (tail)
        tail->finish();
}

static void test_device_part(cp::device &dev) {
    cp::groth16_device &g16 = dev.groth16();
    // small shape, fully checked, twice (cache and key reuse)
    for (int shape = 0; shape < 2; shape++) {
        circuit_data d;
        make_circuit(d, 3000, 3, 2900, shape ? 45 : 0, shape ? 45 : 0, 40 + shape);
        cp::srs k;
        make_key(k, d, 1 << 16);
        const uint64_t up0 = g16.srs_uploads();
        uint64_t al1 = 0;  // after the first proof (lane 0's cache, lane 1 opened)
        for (int rep = 0; rep < 2; rep++) {
            if (rep == 1)
                al1 = dev.cache_allocations();
            cp::device_partials p;
            cp_timings t;
            std::memset(&t, 0, sizeof(t));
            dev.bind_thread();
            finish(g16.device_part(k, d.job, p, t));
            check_partials(k, d, p, std::string("device_part 2^12 ") + (shape ? "bits" : "dense") +
                                        " run " + std::to_string(rep));
        }
        report(g16.srs_uploads() == up0 + 1, "key uploaded once for two proofs");
        report(dev.cache_allocations() == al1, "the second proof reuses the caches");
    }
    // 2^20 shapes, timed (components are checked above and in the MSM/H tests)
    for (int shape = 0; shape < 2; shape++) {
        circuit_data d;
        const size_t nc = (size_t(1) << 20) - 64;
        make_circuit(d, nc, 2, nc - 8, shape ? 49 : 0, shape ? 49 : 0, 60 + shape);
        cp::srs k;
        make_key(k, d, 1 << 16);
        auto est = g16.estimate(k, nc);
        {
            // prepare uploads the key and sizes the cache: the first proof
            // after it pays neither.
            double t0 = now_s();
            dev.bind_thread();
            g16.prepare(k, nc, nullptr);
            double secs = now_s() - t0;
            const uint64_t up = g16.srs_uploads(), al = dev.cache_allocations();
            cp::device_partials p;
            cp_timings t;
            std::memset(&t, 0, sizeof(t));
            double t1 = now_s();
            finish(g16.device_part(k, d.job, p, t));
            std::string label = std::string(shape ? "bits" : "chain") + " 2^20 first after prepare";
            print_timings(label.c_str(), t, now_s() - t1);
            std::printf("INFO prepare 2^20 %s: %.1f ms\n", shape ? "bits" : "chain", secs * 1e3);
            report(g16.srs_uploads() == up && dev.cache_allocations() == al,
                   std::string("prepare 2^20 ") + (shape ? "bits" : "chain") +
                       ": the next proof uploads and allocates nothing");
        }
        for (int rep = 0; rep < 3; rep++) {
            cp::device_partials p;
            cp_timings t;
            std::memset(&t, 0, sizeof(t));
            double t0 = now_s();
            finish(g16.device_part(k, d.job, p, t));
            double wall = now_s() - t0;
            std::string label = std::string(shape ? "bits" : "chain") + " 2^20 run " +
                                std::to_string(rep);
            print_timings(label.c_str(), t, wall);
            if (rep == 2) {
                // a, b_g1, b_g2 against blst at full size (h + l is covered
                // at 2^12 and by the H and MSM tests at 2^20).
                double c0 = now_s();
                check_abb(k, d, p, std::string("device_part ") + label);
                std::printf("  (CPU reference took %.1f s)\n", now_s() - c0);
            }
        }
        std::printf("INFO estimate 2^20: working %.0f MiB, srs %.0f MiB; cache %.0f MiB, "
                    "allocations %llu, uploads %llu\n",
                    est.working_bytes / 1048576.0, est.srs_bytes / 1048576.0,
                    dev.cache_bytes() / 1048576.0, (unsigned long long)dev.cache_allocations(),
                    (unsigned long long)g16.srs_uploads());
    }
    uint64_t freed = dev.trim();
    report(freed > 0 && dev.cache_bytes() == 0, "trim frees the cache (" +
                                                    std::to_string(freed >> 20) + " MiB)");
}

int main(int argc, char **argv) {
    const bool quick = argc > 1 && std::string(argv[1]) == "quick";
    const bool profile_only = argc > 1 && std::string(argv[1]) == "profile";
    const bool tune_only = argc > 1 && std::string(argv[1]) == "tune";
    const bool stage_only = argc > 1 && std::string(argv[1]) == "stage";
    const bool big_only = argc > 1 && std::string(argv[1]) == "big";
    const bool carried_only = argc > 1 && std::string(argv[1]) == "carried";
    if (argc > 1 && std::string(argv[1]) == "cpucheck") {
        // The CPU references agree with each other (no GPU needed).
        rng_t g(1);
        std::vector<blst_fr> a(1024), b(1024), c(1024);
        for (size_t i = 0; i < 1024; i++) {
            a[i] = fr_rand(g);
            b[i] = fr_rand(g);
            c[i] = fr_rand(g);
        }
        report(same_fr(cpu_h(a, b, c, 10, false), cpu_h(a, b, c, 10, true)), "CPU FFT H == naive H 2^10");
        auto pts = g1_points(64, 256, 3);
        auto sc = scalars_mix(256, 30, 30, 4);
        report(eq1(cpu_msm_g1(pts.data(), sc.data(), 256), cpu_msm_g1(pts.data(), fold(sc, 64).data(), 64)),
               "CPU MSM fold");
        double t0 = now_s();
        std::vector<blst_fr> big(1 << 20, fr_u64(3));
        fft(big, omega_for(20));
        std::printf("INFO CPU FFT 2^20: %.2f s\n", now_s() - t0);
        return g_failures ? 1 : 0;
    }
    std::string why;
    int n = cp::cuda_device_count(&why);
    std::printf("INFO cuda_device_count = %d%s%s\n", n, why.empty() ? "" : ", why: ", why.c_str());
    if (n == 0) {
        report(!why.empty(), "no device: count 0 with a reason");
        return g_failures ? 1 : 0;
    }
    std::vector<std::unique_ptr<cp::device>> devs;
    for (int id : cp::cuda_claim({}))
        devs.push_back(cp::cuda_device_for(id));
    for (auto &d : devs) {
        cp_device_info i = d->info();
        std::printf("INFO device %d: %s cc %d.%d, %.1f / %.1f GiB free\n", i.ordinal, i.name,
                    i.cc_major, i.cc_minor, i.free_bytes / 1073741824.0,
                    i.total_bytes / 1073741824.0);
    }
    devs[0]->bind_thread();
    const gpu_t &gpu = select_gpu(0);
    try {
        if (stage_only) {
            stage_bench(gpu);
            std::printf("%s: %d failure(s)\n", g_failures ? "FAIL" : "PASS", g_failures);
            return g_failures ? 1 : 0;
        }
        if (carried_only) {
            test_msm_dense_head(gpu);
            test_msm_carried(gpu);
            std::printf("%s: %d failure(s)\n", g_failures ? "FAIL" : "PASS", g_failures);
            return g_failures ? 1 : 0;
        }
        if (big_only) {
            big_msm(gpu, argc > 2 ? (uint32_t)std::stoul(argv[2]) : 27);
            std::printf("%s: %d failure(s)\n", g_failures ? "FAIL" : "PASS", g_failures);
            return g_failures ? 1 : 0;
        }
        if (profile_only || tune_only) {
            const uint32_t lg = argc > 2 ? (uint32_t)std::stoul(argv[2]) : 20;
            if (tune_only)
                tune_msm(gpu, lg);
            else
                profile_msm(gpu, lg);
            std::printf("%s: %d failure(s)\n", g_failures ? "FAIL" : "PASS", g_failures);
            return g_failures ? 1 : 0;
        }
        double t0 = now_s();
        test_h(gpu, 10, true);
        test_h(gpu, 16, false);
        for (size_t nn : {1, 5, 100, 1000, 4097, 65536, 300001}) {
            test_msm_g1(gpu, nn, 45, 45, nn);
            test_msm_g1(gpu, nn, 0, 0, nn + 7);
            test_msm_g1(gpu, nn, 90, 5, nn + 9);
        }
        for (size_t nn : {33, 65539}) {
            test_msm_g1(gpu, nn, 0, 100, nn + 3);
            test_msm_g1(gpu, nn, 100, 0, nn + 4);
        }
        for (size_t nn : {1, 7, 300, 16385, 100003}) {
            test_msm_g2(gpu, nn, 45, 45, nn);
            test_msm_g2(gpu, nn, 0, 0, nn + 7);
        }
        test_msm_g2(gpu, 16385, 0, 100, 5);
        test_msm_g2(gpu, 16385, 100, 0, 6);
        test_msm_context(gpu);
        test_msm_dense_head(gpu);
        test_msm_carried(gpu);
        test_msm_tables(gpu);
        test_shared_sort(gpu);
        std::printf("INFO small tests took %.1f s\n", now_s() - t0);
        test_device_part(*devs[0]);
        if (!quick) {
            timing_msm(gpu, 20);
            timing_h(gpu, 20);
        }
    } catch (const cp::error &e) {
        report(false, "cp::error " + std::to_string(e.code) + ": " + e.message);
    } catch (const std::exception &e) {
        report(false, std::string("exception: ") + e.what());
    }
    std::printf("%s: %d failure(s)\n", g_failures ? "FAIL" : "PASS", g_failures);
    return g_failures ? 1 : 0;
}
