// The MSMs of a proof timed (timing_msm) and the timing helpers the
// profile, tune and big modes share: profiled_run, timed_check, time_four.
#include "common.hpp"

// The MSMs of a 2^lg proof (h + l over 2^(lg+1) points, a, b_g1 in G1,
// b_g2 in G2), one at a time and all four at once, for dense and 0/1-heavy
// scalars; the concurrent results checked against blst (points tiled).
void timing_msm(const gpu_t &gpu, uint32_t lg) {
    const size_t n = size_t(1) << lg;
    auto p1 = g1_points(1 << 16, 2 * n, 11);
    auto p2 = g2_points(1 << 14, n, 12);
    void *d1 = upload(p1);
    void *d2 = upload(p2);
    msm_context ctx(gpu, {{msm_group::g1, 2 * n},
                          {msm_group::g1, n},
                          {msm_group::g1, n},
                          {msm_group::g2, n}});
    std::printf("INFO msm context for 2^%u: %.0f MiB\n", lg, ctx.bytes() / 1048576.0);
    struct shape {
        const char *name;
        int z, o;
    } shapes[] = {{"dense", 0, 0}, {"bits(48% 0, 48% 1)", 48, 48}};
    const char *names[4] = {"h+l", "a", "b_g1", "b_g2"};
    {
        // The fixed cost of one MSM: 32 dense scalars, 0/1 split or not.
        auto sc = scalars_mix(32, 0, 0, 97);
        void *ds = upload(sc);
        for (int i : {1, 3}) {
            msm_job job{(size_t)i, i == 3 ? d2 : d1, ds, 32};
            uint64_t ns[1];
            ctx.run(&job, 1, nullptr, ns);
            double t0 = now_s();
            for (int r = 0; r < 5; r++)
                ctx.run(&job, 1, nullptr, ns);
            const double split = (now_s() - t0) / 5;
            t0 = now_s();
            for (int r = 0; r < 5; r++) {
                ctx.launch(i, ctx.stream(i), job.d_points, ds, 32, false);
                ck(cudaStreamSynchronize(ctx.stream(i)), "sync");
            }
            std::printf("TIME msm fixed cost (n=32) %s: %.2f ms with the 0/1 split, %.2f ms "
                        "without\n",
                        i == 3 ? "G2" : "G1", split * 1e3, (now_s() - t0) / 5 * 1e3);
        }
        cudaFree(ds);
    }
    for (auto &sh : shapes) {
        auto hl = scalars_mix(2 * n, sh.z, sh.o, 98);
        auto sc = scalars_mix(n, sh.z, sh.o, 99);
        void *dhl = upload(hl);
        void *ds = upload(sc);
        msm_job jobs[4] = {{0, d1, dhl, 2 * n}, {1, d1, ds, n}, {2, d1, ds, n}, {3, d2, ds, n}};
        uint64_t ns[4];
        for (int i = 0; i < 4; i++) {
            ctx.run(&jobs[i], 1, nullptr, ns);  // warm-up
            double t0 = now_s();
            const int reps = 3;
            for (int r = 0; r < reps; r++)
                ctx.run(&jobs[i], 1, nullptr, ns);
            std::printf("TIME msm 2^%u %s %s alone: %.2f ms wall, %.2f ms on its stream\n", lg,
                        sh.name, names[i], (now_s() - t0) / reps * 1e3, ns[0] / 1e6);
        }
        ctx.run(jobs, 4, nullptr, ns);
        double t0 = now_s();
        const int reps = 3;
        for (int r = 0; r < reps; r++)
            ctx.run(jobs, 4, nullptr, ns);
        std::printf("TIME msm 2^%u %s all four at once: %.2f ms wall (streams: h+l %.2f, a %.2f, "
                    "b_g1 %.2f, b_g2 %.2f ms)\n",
                    lg, sh.name, (now_s() - t0) / reps * 1e3, ns[0] / 1e6, ns[1] / 1e6,
                    ns[2] / 1e6, ns[3] / 1e6);
        g1_proj_raw r1;
        g2_proj_raw r2;
        blst_p1 got1;
        blst_p2 got2;
        ctx.read(0, r1);
        std::memcpy(&got1, &r1, sizeof(got1));
        report(eq1(got1, cpu_msm_g1(p1.data(), fold(hl, 1 << 16).data(), 1 << 16)),
               std::string("msm G1 2^") + std::to_string(lg + 1) + " " + sh.name);
        ctx.read(2, r1);
        std::memcpy(&got1, &r1, sizeof(got1));
        report(eq1(got1, cpu_msm_g1(p1.data(), fold(sc, 1 << 16).data(), 1 << 16)),
               std::string("msm G1 2^") + std::to_string(lg) + " " + sh.name);
        ctx.read(3, r2);
        std::memcpy(&got2, &r2, sizeof(got2));
        report(eq2(got2, cpu_msm_g2(p2.data(), fold(sc, 1 << 14).data(), 1 << 14)),
               std::string("msm G2 2^") + std::to_string(lg) + " " + sh.name);
        cudaFree(dhl);
        cudaFree(ds);
    }
    cudaFree(d1);
    cudaFree(d2);
}

// Where an MSM's time goes (msm_context::profile): each phase of the MSMs
// of a 2^lg proof, one MSM at a time, for dense scalars, 0/1-heavy ones,
// and the h+l of a 0/1-heavy circuit (H dense, L 0/1); then Pippenger's
// window width swept for a dense 2^lg G1 and G2 MSM, each result checked
// against the automatic width's.
void print_profile(const char *label, const msm_profile &p, double wall_ms) {
    std::printf("PROFILE %s: wall %.2f ms | wbits %u windows %u batches %u pippenger %zu |",
                label, wall_ms, p.wbits, p.windows, p.batches, p.pippenger_points);
    for (int k = 0; k < msm_phase_count; k++)
        if (p.ms[k] > 0)
            std::printf(" %s %.2f", msm_phase_name(k), p.ms[k]);
    std::printf("\n");
}

// One profiled run of `job` (its phases into prof); its result read back
// into p1 or p2 (g2) while profiled, so the host combination is counted.
// Returns the wall time in ms.
// The result a slot's last run left, into p1 or (g2) p2.
static void read_result(msm_context &ctx, size_t slot, bool g2, blst_p1 &p1, blst_p2 &p2) {
    if (g2) {
        g2_proj_raw r;
        ctx.read(slot, r);
        std::memcpy(&p2, &r, sizeof p2);
    } else {
        g1_proj_raw r;
        ctx.read(slot, r);
        std::memcpy(&p1, &r, sizeof p1);
    }
}

double profiled_run(msm_context &ctx, const msm_job &job, bool g2, msm_profile &prof,
                    blst_p1 &p1, blst_p2 &p2) {
    ctx.profile(job.slot, &prof);
    const double t0 = now_s();
    uint64_t ns[1];
    ctx.run(&job, 1, nullptr, ns);
    read_result(ctx, job.slot, g2, p1, p2);
    const double wall = (now_s() - t0) * 1e3;
    ctx.profile(job.slot, nullptr);
    return wall;
}

// One MSM timed (a warm-up, then the mean of three runs) and profiled once,
// the results of the last timed run and of the profiled one checked
// against want1 or want2 (g2; a profiled run may take another path, e.g.
// it sorts in line); `reference` names what those are.
void timed_check(msm_context &ctx, const msm_job &job, bool g2, const blst_p1 &want1,
                 const blst_p2 &want2, const std::string &label,
                 const char *reference) {
    uint64_t ns[1];
    ctx.run(&job, 1, nullptr, ns);
    const int reps = 3;
    double t0 = now_s();
    for (int k = 0; k < reps; k++)
        ctx.run(&job, 1, nullptr, ns);
    const double plain = (now_s() - t0) / reps * 1e3;
    blst_p1 got1;
    blst_p2 got2;
    read_result(ctx, job.slot, g2, got1, got2);
    report(g2 ? eq2(got2, want2) : eq1(got1, want1),
           label + " equals " + reference + " (unprofiled)");
    msm_profile prof;
    const double wall = profiled_run(ctx, job, g2, prof, got1, got2);
    report(g2 ? eq2(got2, want2) : eq1(got1, want1), label + " equals " + reference);
    std::printf("TIME msm %s: %.2f ms unprofiled\n", label.c_str(), plain);
    print_profile(label.c_str(), prof, wall);
}

// The four MSMs of a proof at once: jobs h+l, a, b_g1 (or a stand-in),
// b_g2 (G2, last), timed over three runs with their results read back.
void time_four(msm_context &ctx, const msm_job (&jobs)[4], uint32_t lg,
               const std::string &label) {
    uint64_t ns[4];
    ctx.run(jobs, 4, nullptr, ns);
    const int reps = 3;
    double t0 = now_s();
    for (int k = 0; k < reps; k++) {
        ctx.run(jobs, 4, nullptr, ns);
        g1_proj_raw r1;
        g2_proj_raw r2;
        ctx.read(jobs[0].slot, r1);
        ctx.read(jobs[1].slot, r1);
        ctx.read(jobs[2].slot, r1);
        ctx.read(jobs[3].slot, r2);
    }
    std::printf("TIME msm 2^%u %s, all four at once: %.2f ms wall (streams: h+l %.2f, a "
                "%.2f, b_g1 %.2f, b_g2 %.2f ms)\n",
                lg, label.c_str(), (now_s() - t0) / reps * 1e3, ns[0] / 1e6, ns[1] / 1e6,
                ns[2] / 1e6, ns[3] / 1e6);
}
