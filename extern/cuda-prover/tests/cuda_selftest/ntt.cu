// H: the CPU references (radix-2 FFT, naive DFT) and H on the device
// checked (test_h) and timed (timing_h) against them.
#include "common.hpp"

// ---------------------------------------------------------------- CPU H

static const blst_fr ROOT_OF_UNITY = {{0xb9b58d8c5f0e466aULL, 0x5b1b4c801819d7ecULL,
                                       0x0af53ae352a31e64ULL, 0x5bf3adda19e9b27bULL}};

blst_fr omega_for(uint32_t lg) {
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

void fft(std::vector<blst_fr> &a, blst_fr w) {
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
std::vector<blst_fr> cpu_h(std::vector<blst_fr> a, std::vector<blst_fr> b,
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

bool same_fr(const std::vector<blst_fr> &x, const std::vector<blst_fr> &y) {
    return x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size() * 32) == 0;
}

void test_h(const gpu_t &gpu, uint32_t lg, bool naive_too) {
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

void timing_h(const gpu_t &gpu, uint32_t lg) {
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
