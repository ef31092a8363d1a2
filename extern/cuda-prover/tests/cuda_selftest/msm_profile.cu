// `cuda_selftest profile [LG]`: where the MSM time of a 2^LG proof goes,
// without tables (profile_msm) and over tables (profile_tables).
#include "common.hpp"

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

void profile_msm(const gpu_t &gpu, uint32_t lg) {
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
