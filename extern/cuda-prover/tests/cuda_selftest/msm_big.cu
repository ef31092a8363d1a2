// `cuda_selftest big [LG]`: Pippenger runs of many batches at the 32 GiB
// C2's size, carried or not, at several widths and batch sizes, sorted in
// line or beside the accumulation.
#include "common.hpp"

// Pippenger runs of many batches, as the 32 GiB C2's H + L (2^27 dense H
// scalars, then 2^27 L scalars that are mostly 0 or 1) and a dense 2^lg G1
// MSM alone: the batches carrying their buckets (the default; also at a
// narrower width) and integrating their own buckets as before (also at a
// wider width);
// each result checked against the default's (the small tests check the
// paths against blst). Points tiled from 2^16.
void big_msm(const gpu_t &gpu, uint32_t lg) {
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
    // batches) and with each batch sorted beside the accumulation of the one
    // before (msm_slot_spec::overlap_sort); the others through
    // CP_MSM_BATCH_LG (read when a context is laid out).
    struct wide_t {
        const char *lg;
        uint32_t w;
        bool spec;
        bool overlap;
    } wides[] = {{"24", 0, false, false},
                 {"25", 0, true, false},
                 {"25", 0, true, true},
                 {"25", 16, true, false},
                 {"26", 0, false, false}};
    for (const auto &v : wides) {
        msm_slot_spec spec{msm_group::g1, 2 * n};
        spec.overlap_sort = v.overlap;
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
                                     (v.overlap ? ", sorted beside" : "") + "]";
            timed_check(wide, job, false, wants[shape], unused2, what, "the default");
        }
    }
    cudaFree(ds);
    cudaFree(d1);
}
