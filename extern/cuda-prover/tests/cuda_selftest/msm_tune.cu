// `cuda_selftest tune [LG]`: the variants of msm_tuning side by side.
#include "common.hpp"

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
void tune_msm(const gpu_t &gpu, uint32_t lg) {
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
