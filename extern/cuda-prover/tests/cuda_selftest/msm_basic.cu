// One MSM in G1 or G2 through a one-slot context, with and without the
// 0/1 split, against blst: one test over each group's table of cases.
#include "common.hpp"

namespace {

// What a group's test needs: its points, blst's MSM, equality, the raw
// result the context reads, and how many distinct points it draws (the
// rest repeat them, so that blst sums the folded scalars).
struct g1_group {
    static constexpr msm_group group = msm_group::g1;
    static constexpr const char *name = "G1";
    static constexpr size_t distinct_max = 1 << 16;
    using raw = g1_proj_raw;
    using point = blst_p1;
    static std::vector<blst_p1_affine> points(size_t n, size_t total, uint64_t seed) {
        return g1_points(n, total, seed);
    }
    static point msm(const blst_p1_affine *p, const blst_fr *s, size_t n) {
        return cpu_msm_g1(p, s, n);
    }
    static bool eq(const point &a, const point &b) { return eq1(a, b); }
};

struct g2_group {
    static constexpr msm_group group = msm_group::g2;
    static constexpr const char *name = "G2";
    static constexpr size_t distinct_max = 1 << 14;
    using raw = g2_proj_raw;
    using point = blst_p2;
    static std::vector<blst_p2_affine> points(size_t n, size_t total, uint64_t seed) {
        return g2_points(n, total, seed);
    }
    static point msm(const blst_p2_affine *p, const blst_fr *s, size_t n) {
        return cpu_msm_g2(p, s, n);
    }
    static bool eq(const point &a, const point &b) { return eq2(a, b); }
};

// One case: n scalars, zpct % of them 0 and opct % 1, drawn from seed.
struct msm_case {
    size_t n;
    int zpct, opct;
    uint64_t seed;
};

template<class G>
typename G::point read_point(const msm_context &ctx) {
    typename G::raw raw;
    ctx.read(0, raw);
    typename G::point got;
    std::memcpy(&got, &raw, sizeof(got));
    return got;
}

// One MSM through a one-slot context, with the 0/1 split (run) and without
// (launch on the slot's stream), both against blst.
template<class G>
void test_msm_of(const gpu_t &gpu, const msm_case &c) {
    const size_t distinct = std::min(c.n, G::distinct_max);
    auto pts = G::points(distinct, c.n, c.seed);
    auto sc = scalars_mix(c.n, c.zpct, c.opct, c.seed + 1);
    void *dp = upload(pts);
    void *ds = upload(sc);
    const typename G::point want = c.n > distinct
                                       ? G::msm(pts.data(), fold(sc, distinct).data(), distinct)
                                       : G::msm(pts.data(), sc.data(), c.n);
    msm_context ctx(gpu, {{G::group, c.n}});
    msm_job job{0, dp, ds, c.n};
    ctx.run(&job, 1, nullptr, nullptr);
    char buf[160];
    std::snprintf(buf, sizeof buf, "msm %s n=%zu zeros=%d%% ones=%d%% (0/1 split)", G::name, c.n,
                  c.zpct, c.opct);
    report(G::eq(read_point<G>(ctx), want), buf);
    ctx.launch(0, ctx.stream(0), dp, ds, c.n, false);
    ck(cudaStreamSynchronize(ctx.stream(0)), "sync");
    std::snprintf(buf, sizeof buf, "msm %s n=%zu zeros=%d%% ones=%d%% (all Pippenger)", G::name,
                  c.n, c.zpct, c.opct);
    report(G::eq(read_point<G>(ctx), want), buf);
    cudaFree(dp);
    cudaFree(ds);
}

}  // namespace

// ---------------------------------------------------------------- tests

void test_msm_basic(const gpu_t &gpu) {
    std::vector<msm_case> g1, g2;
    for (size_t n : {1, 5, 100, 1000, 4097, 65536, 300001})
        g1.insert(g1.end(), {{n, 45, 45, n}, {n, 0, 0, n + 7}, {n, 90, 5, n + 9}});
    for (size_t n : {33, 65539})  // all ones, all zeros
        g1.insert(g1.end(), {{n, 0, 100, n + 3}, {n, 100, 0, n + 4}});
    for (size_t n : {1, 7, 300, 16385, 100003})
        g2.insert(g2.end(), {{n, 45, 45, n}, {n, 0, 0, n + 7}});
    g2.insert(g2.end(), {{16385, 0, 100, 5}, {16385, 100, 0, 6}});
    for (const msm_case &c : g1)
        test_msm_of<g1_group>(gpu, c);
    for (const msm_case &c : g2)
        test_msm_of<g2_group>(gpu, c);
}
