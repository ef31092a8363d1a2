// A dense head before a 0/1 split's rest, and Pippenger runs of several
// batches with their buckets carried or not, and with each batch sorted
// beside the accumulation of the one before (`cuda_selftest carried`).
#include "common.hpp"

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

// A G1 MSM of n points on slot 0 of ctx (as tuned), with the dense head
// given (msm_job::dense = head) and without, each against want; `what`
// labels both.
static void g1_head_runs(msm_context &ctx, void *points, void *scalars, size_t n, size_t head,
                         const blst_p1 &want, const std::string &what) {
    for (size_t dense : {head, size_t(0)}) {
        msm_job job{0, points, scalars, n};
        job.dense = dense;
        ctx.run(&job, 1, nullptr, nullptr);
        g1_proj_raw r;
        ctx.read(0, r);
        blst_p1 got;
        std::memcpy(&got, &r, sizeof(got));
        report(eq1(got, want), what + ", dense head " + std::to_string(dense));
    }
}

void test_msm_dense_head(const gpu_t &gpu) {
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
        g1_head_runs(ctx, d1, ds, n, head, want, "msm tail pattern " + std::to_string(pat));
        cudaFree(ds);
    }
    cudaFree(d1);
}

// The G2 MSM of the runs of several batches: 16385 points (4096 distinct),
// 20% 0s and 20% 1s, uploaded, and blst's sum; `runs` runs it on slot 0 of
// a context (as tuned) with the 0/1 split and all Pippenger, each against
// blst, `what` labelling both.
struct g2_batches {
    static constexpr size_t n = 16385, distinct = 1 << 12;
    void *points = nullptr, *scalars = nullptr;
    blst_p2 want;
    explicit g2_batches(uint64_t seed) {
        const auto p = g2_points(distinct, n, seed);
        const auto sc = scalars_mix(n, 20, 20, seed + 1);
        points = upload(p);
        scalars = upload(sc);
        want = cpu_msm_g2(p.data(), fold(sc, distinct).data(), distinct);
    }
    ~g2_batches() {
        cudaFree(points);
        cudaFree(scalars);
    }
    g2_batches(const g2_batches &) = delete;
    g2_batches &operator=(const g2_batches &) = delete;
    void runs(msm_context &ctx, const std::string &what) const {
        for (bool split : {true, false}) {
            if (split) {
                msm_job job{0, points, scalars, n};
                ctx.run(&job, 1, nullptr, nullptr);
            } else {
                ctx.launch(0, ctx.stream(0), points, scalars, n, false);
                ck(cudaStreamSynchronize(ctx.stream(0)), "sync");
            }
            g2_proj_raw raw;
            ctx.read(0, raw);
            blst_p2 got;
            std::memcpy(&got, &raw, sizeof got);
            report(eq2(got, want), what + ", " + (split ? "0/1 split" : "all Pippenger"));
        }
    }
};

// Pippenger runs of several batches (msm_tuning::batch_cap cuts small runs
// into batches of 2048 or 4096 scalars): the batches carrying their
// buckets (the default) and integrating their own, in G1 with a dense head
// before a 0/1 split's rest (which adds into the head's carried set) and
// without it, and in G2, all against blst.
void test_msm_carried(const gpu_t &gpu) {
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

    const g2_batches g2b(42);
    msm_context ctx2(gpu, {{msm_group::g2, g2_batches::n}});
    for (int carry : {-1, 0}) {
        msm_tuning t;
        t.batch_cap = 4096;
        t.carry_buckets = carry;
        ctx2.tune(0, t);
        g2b.runs(ctx2, std::string("msm G2 in batches of 4096, ") +
                          (carry ? "carried" : "per-batch") + " buckets");
    }
}

// Runs of several batches on slots with a second set of sort buffers
// (msm_slot_spec::overlap_sort): each batch sorted on the slot's second
// stream while the one before accumulates. Not profiled (a profiled run
// sorts in line). G1 with a dense head before a 0/1 split's rest and
// without it, G2 split and all Pippenger, twice each (the buffers reused
// across runs), all against blst.
void test_msm_overlap_sort(const gpu_t &gpu) {
    const size_t n = 12000, head = 9500, distinct = 1 << 12;
    auto pts = g1_points(distinct, n, 43);
    void *d1 = upload(pts);
    msm_slot_spec spec{msm_group::g1, n};
    const size_t plain = msm_context(gpu, {spec}).bytes();
    spec.overlap_sort = true;
    msm_context ctx(gpu, {spec});
    report(ctx.bytes() > plain, "msm overlapped sort: the second sort buffers are laid out");
    msm_tuning t;
    t.batch_cap = 2048;
    ctx.tune(0, t);
    for (int pat = 0; pat < 2; pat++) {
        const auto sc = head_then(n, head, 330 + pat,
                                  pat == 0 ? scalars_mix(n - head, 45, 45, 340)
                                           : scalars_short(n - head, 20, 10, 341));
        void *ds = upload(sc);
        const blst_p1 want = cpu_msm_g1(pts.data(), fold(sc, distinct).data(), distinct);
        for (int round = 0; round < 2; round++)
            g1_head_runs(ctx, d1, ds, n, head, want,
                         "msm G1 in batches of 2048, sorted beside the accumulation, tail "
                         "pattern " + std::to_string(pat) + " round " + std::to_string(round));
        cudaFree(ds);
    }
    cudaFree(d1);

    const g2_batches g2b(44);
    msm_slot_spec spec2{msm_group::g2, g2_batches::n};
    spec2.overlap_sort = true;
    msm_context ctx2(gpu, {spec2});
    msm_tuning t2;
    t2.batch_cap = 4096;
    ctx2.tune(0, t2);
    for (int round = 0; round < 2; round++)
        g2b.runs(ctx2, "msm G2 in batches of 4096, sorted beside the accumulation, round " +
                          std::to_string(round));
}
