// One msm_context reused for several sizes and four MSMs at once, and
// table runs over the same scalars sharing one sort.
#include "common.hpp"

// Table runs over the same scalars in one run (B in G1 and in G2): the
// later ones take the first one's sorted digits (msm_context::start). G1
// then G2, G2 then G1, and G1, G2, G1 with a second G1 over other scalars
// in between; each result against blst, twice with new scalars each time,
// so stale digits would show.
void test_shared_sort(const gpu_t &gpu) {
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
void test_msm_context(const gpu_t &gpu) {
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
