// Standalone GPU check of the CUDA backend: device MSMs (G1, G2; dense,
// 0/1-heavy, all-0 and all-1 scalars, with and without the 0/1 split, one
// context reused and four MSMs at once) against blst's CPU Pippenger, H on the device against a
// naive CPU DFT (2^10) and a CPU radix-2 FFT (2^10, 2^16, 2^20), and whole
// device parts through cp::cuda_devices() against a CPU reference, with the
// phase breakdown of whole device parts at 2^20 for a chain-like (dense) and
// a bits-like (0/1 heavy) witness, and cp::device::prepare. Prints PASS/FAIL
// lines; exits non-zero on any FAIL. `cuda_selftest profile [LG]` prints only
// where the MSM time of a 2^LG proof goes (phases, window widths);
// `cuda_selftest big [LG]` times Pippenger runs of many batches (an H + L of
// 2^(LG+1) scalars like the 32 GiB C2's, LG 27 by default) with their
// buckets carried across batches or not, and in batches larger than the
// default's at wider windows (CP_MSM_BATCH_LG); `cuda_selftest ntt-big [LG]`
// times H's transforms at 2^LG (27 by default) one by one and together;
// `cuda_selftest carried` runs only the tests of Pippenger runs of several
// batches.
//
// Files (common.hpp declares what they share):
//   common.cu        report and the failure count, now_s, ck, random
//                    scalars and points, blst's CPU MSMs, eq1/eq2, fold
//   ntt.cu           the CPU H (FFT, naive DFT), H on the device
//   msm_basic.cu     one MSM in G1 and in G2, 0/1 split or not
//   msm_tables.cu    MSMs over tables of multiples, make_table
//   msm_context.cu   one context reused, four at once, a shared sort
//   msm_carried.cu   a dense head, runs of several batches (carried)
//   msm_timing.cu    the MSMs of a proof timed, the timing helpers
//   msm_profile.cu   profile: where an MSM's time goes
//   msm_tune.cu      tune: the variants of msm_tuning side by side
//   msm_big.cu       big: runs of many batches at the C2's size
//   ntt_big.cu       ntt-big: H's transforms at the C2's size, timed
//   device_part.cu   whole device parts against the CPU, timed
//   stage.cu         stage: upload rates and the staging ring
//   main.cu          the modes (quick, profile, tune, stage, big, ntt-big,
//                    carried, cpucheck) and the order the tests run in
#include "common.hpp"

int main(int argc, char **argv) {
    const bool quick = argc > 1 && std::string(argv[1]) == "quick";
    const bool profile_only = argc > 1 && std::string(argv[1]) == "profile";
    const bool tune_only = argc > 1 && std::string(argv[1]) == "tune";
    const bool stage_only = argc > 1 && std::string(argv[1]) == "stage";
    const bool big_only = argc > 1 && std::string(argv[1]) == "big";
    const bool carried_only = argc > 1 && std::string(argv[1]) == "carried";
    const bool ntt_big_only = argc > 1 && std::string(argv[1]) == "ntt-big";
    if (argc > 1 && std::string(argv[1]) == "cpucheck") {
        // The CPU references agree with each other (no GPU needed).
        rng_t g(1);
        std::vector<blst_fr> a(1024), b(1024), c(1024);
        for (size_t i = 0; i < 1024; i++) {
            a[i] = fr_rand(g);
            b[i] = fr_rand(g);
            c[i] = fr_rand(g);
        }
        report(same_fr(cpu_h(a, b, c, 10, false), cpu_h(a, b, c, 10, true)), "CPU FFT H == naive H 2^10");
        auto pts = g1_points(64, 256, 3);
        auto sc = scalars_mix(256, 30, 30, 4);
        report(eq1(cpu_msm_g1(pts.data(), sc.data(), 256), cpu_msm_g1(pts.data(), fold(sc, 64).data(), 64)),
               "CPU MSM fold");
        double t0 = now_s();
        std::vector<blst_fr> big(1 << 20, fr_u64(3));
        fft(big, omega_for(20));
        std::printf("INFO CPU FFT 2^20: %.2f s\n", now_s() - t0);
        return g_failures ? 1 : 0;
    }
    std::string why;
    int n = cp::cuda_device_count(&why);
    std::printf("INFO cuda_device_count = %d%s%s\n", n, why.empty() ? "" : ", why: ", why.c_str());
    if (n == 0) {
        report(!why.empty(), "no device: count 0 with a reason");
        return g_failures ? 1 : 0;
    }
    std::vector<std::unique_ptr<cp::device>> devs;
    for (int id : cp::cuda_claim({}))
        devs.push_back(cp::cuda_device_for(id));
    for (auto &d : devs) {
        cp_device_info i = d->info();
        std::printf("INFO device %d: %s cc %d.%d, %.1f / %.1f GiB free\n", i.ordinal, i.name,
                    i.cc_major, i.cc_minor, i.free_bytes / 1073741824.0,
                    i.total_bytes / 1073741824.0);
    }
    devs[0]->bind_thread();
    const gpu_t &gpu = select_gpu(0);
    try {
        if (stage_only) {
            stage_bench(gpu);
            std::printf("%s: %d failure(s)\n", g_failures ? "FAIL" : "PASS", g_failures);
            return g_failures ? 1 : 0;
        }
        if (carried_only) {
            test_msm_dense_head(gpu);
            test_msm_carried(gpu);
            test_msm_overlap_sort(gpu);
            std::printf("%s: %d failure(s)\n", g_failures ? "FAIL" : "PASS", g_failures);
            return g_failures ? 1 : 0;
        }
        if (ntt_big_only) {
            ntt_big(gpu, argc > 2 ? (uint32_t)std::stoul(argv[2]) : 27);
            std::printf("%s: %d failure(s)\n", g_failures ? "FAIL" : "PASS", g_failures);
            return g_failures ? 1 : 0;
        }
        if (big_only) {
            big_msm(gpu, argc > 2 ? (uint32_t)std::stoul(argv[2]) : 27);
            std::printf("%s: %d failure(s)\n", g_failures ? "FAIL" : "PASS", g_failures);
            return g_failures ? 1 : 0;
        }
        if (profile_only || tune_only) {
            const uint32_t lg = argc > 2 ? (uint32_t)std::stoul(argv[2]) : 20;
            if (tune_only)
                tune_msm(gpu, lg);
            else
                profile_msm(gpu, lg);
            std::printf("%s: %d failure(s)\n", g_failures ? "FAIL" : "PASS", g_failures);
            return g_failures ? 1 : 0;
        }
        double t0 = now_s();
        test_h(gpu, 10, true);
        test_h(gpu, 16, false);
        test_msm_basic(gpu);
        test_msm_context(gpu);
        test_msm_dense_head(gpu);
        test_msm_carried(gpu);
        test_msm_overlap_sort(gpu);
        test_msm_tables(gpu);
        test_shared_sort(gpu);
        std::printf("INFO small tests took %.1f s\n", now_s() - t0);
        test_device_part(*devs[0]);
        if (!quick) {
            timing_msm(gpu, 20);
            timing_h(gpu, 20);
        }
    } catch (const cp::error &e) {
        report(false, "cp::error " + std::to_string(e.code) + ": " + e.message);
    } catch (const std::exception &e) {
        report(false, std::string("exception: ") + e.what());
    }
    std::printf("%s: %d failure(s)\n", g_failures ? "FAIL" : "PASS", g_failures);
    return g_failures ? 1 : 0;
}
