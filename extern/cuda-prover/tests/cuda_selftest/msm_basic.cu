// One MSM in G1 or G2 through a one-slot context, with and without the
// 0/1 split, against blst.
#include "common.hpp"

// ---------------------------------------------------------------- tests

// One MSM through a one-slot context, with the 0/1 split (run) and without
// (launch on the slot's stream), both against blst.
void test_msm_g1(const gpu_t &gpu, size_t n, int zpct, int opct, uint64_t seed) {
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

void test_msm_g2(const gpu_t &gpu, size_t n, int zpct, int opct, uint64_t seed) {
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
