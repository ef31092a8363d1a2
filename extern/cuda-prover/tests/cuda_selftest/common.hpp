// Shared by the GPU self-test's files: the includes, the failure count and
// report, random values and points, the CPU references, upload, the
// timing helpers and the tests main() runs; each group names its file.
#pragma once

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
#include "gpu_ops.hpp"

using namespace cp_cuda;

// ---------------------------------------------------------------- helpers

// common.cu
extern int g_failures;
void report(bool ok, const std::string &what);
double now_s();
void ck(cudaError_t e, const char *what);

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

blst_fr fr_u64(uint64_t v);
blst_fr fr_rand(rng_t &g);

inline const blst_fr FR_ZERO = {{0, 0, 0, 0}};

std::vector<blst_fr> scalars_mix(size_t n, int zero_pct, int one_pct, uint64_t seed);
std::vector<blst_fr> scalars_short(size_t n, int bits, int long_pct, uint64_t seed);
std::vector<blst_p1_affine> g1_points(size_t n, size_t total, uint64_t seed);
std::vector<blst_p2_affine> g2_points(size_t n, size_t total, uint64_t seed);

blst_p1 cpu_msm_g1(const blst_p1_affine *p, const blst_fr *s, size_t n);
blst_p2 cpu_msm_g2(const blst_p2_affine *p, const blst_fr *s, size_t n);
bool eq1(const blst_p1 &a, const blst_p1 &b);
bool eq2(const blst_p2 &a, const blst_p2 &b);
std::vector<blst_fr> fold(const std::vector<blst_fr> &s, size_t n);

template<class P>
void *upload(const std::vector<P> &v) {
    void *p = nullptr;
    ck(cudaMalloc(&p, v.size() * sizeof(P) + 256), "cudaMalloc");
    ck(cudaMemcpy(p, v.data(), v.size() * sizeof(P), cudaMemcpyHostToDevice), "HtoD");
    return p;
}

// ntt.cu
blst_fr omega_for(uint32_t lg);
void fft(std::vector<blst_fr> &a, blst_fr w);
std::vector<blst_fr> cpu_h(std::vector<blst_fr> a, std::vector<blst_fr> b,
                           std::vector<blst_fr> c, uint32_t lg, bool naive);
bool same_fr(const std::vector<blst_fr> &x, const std::vector<blst_fr> &y);

// msm_tables.cu
void *make_table(cudaStream_t s, msm_group g, const void *d, size_t n, uint32_t &wbits);

// msm_timing.cu
void print_profile(const char *label, const msm_profile &p, double wall_ms);
double profiled_run(msm_context &ctx, const msm_job &job, bool g2, msm_profile &prof,
                    blst_p1 &p1, blst_p2 &p2);
void timed_check(msm_context &ctx, const msm_job &job, bool g2, const blst_p1 &want1,
                 const blst_p2 &want2, const std::string &label,
                 const char *reference);
void time_four(msm_context &ctx, const msm_job (&jobs)[4], uint32_t lg,
               const std::string &label);

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

// ---------------------------------------------------------------- tests

// ntt.cu
void test_h(const gpu_t &gpu, uint32_t lg, bool naive_too);
void timing_h(const gpu_t &gpu, uint32_t lg);

// msm_basic.cu
void test_msm_basic(const gpu_t &gpu);

// msm_tables.cu
void test_msm_tables(const gpu_t &gpu);

// msm_context.cu
void test_shared_sort(const gpu_t &gpu);
void test_msm_context(const gpu_t &gpu);

// msm_carried.cu
void test_msm_dense_head(const gpu_t &gpu);
void test_msm_carried(const gpu_t &gpu);
void test_msm_overlap_sort(const gpu_t &gpu);

// msm_timing.cu
void timing_msm(const gpu_t &gpu, uint32_t lg);

// msm_profile.cu
void profile_msm(const gpu_t &gpu, uint32_t lg);

// msm_tune.cu
void tune_msm(const gpu_t &gpu, uint32_t lg);

// msm_big.cu
void big_msm(const gpu_t &gpu, uint32_t lg);

// ntt_big.cu
void ntt_big(const gpu_t &gpu, uint32_t lg);

// stage.cu
void stage_bench(const gpu_t &gpu);

// device_part.cu
void test_device_part(cp::device &dev);
