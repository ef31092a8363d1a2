// MSMs over tables of multiples (msm_build_table): table_case and its
// variants (test_msm_tables), and make_table for the other tests.
#include "common.hpp"

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

void test_msm_tables(const gpu_t &gpu) {
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

// A table of multiples of the first n points at d (rows of n, built with
// width wbits, 0: msm_table_window_bits(n)); cudaFree it.
void *make_table(cudaStream_t s, msm_group g, const void *d, size_t n, uint32_t &wbits) {
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
