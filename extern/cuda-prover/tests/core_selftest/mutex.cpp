// The per-device mutex: two proofs on one device run one after the other
// (the device's own mutex or the caller's), proofs on two devices at once.
#include <algorithm>
#include <chrono>
#include <thread>

#include "common.hpp"

void test_mutex() {
    std::printf("per-device mutex\n");
    cp_context *ctx = host_ctx(2, 1);
    if (!ctx) return;
    const size_t nc = 8, ni = 1, na = 3;
    key_parts k = key_for(nc, ni, na);
    cp_key_parts kp = k.parts();
    cp_key *key = nullptr;
    EXPECT_OK(cp_key_from_parts(&kp, &key));
    test_circuit t = random_circuit(nc, ni, na);
    const uint64_t delay = 150 * 1000 * 1000ull;
    EXPECT_OK(cp_set_device_delay(ctx, 0, delay));
    EXPECT_OK(cp_set_device_delay(ctx, 1, delay));
    using clk = std::chrono::steady_clock;
    for (int use_mutex = 0; use_mutex < 2; use_mutex++) {
        cp_mutex *mu = nullptr;
        if (use_mutex) EXPECT_OK(cp_mutex_new(&mu));
        cp_proof p1, p2;
        auto t0 = clk::now();
        std::thread th1([&] {
            cp_circuit c = t.view(1);
            EXPECT_OK(cp_prove(ctx, key, &c, 1, 0, mu, &p1));
        });
        std::thread th2([&] {
            cp_circuit c = t.view(2);
            EXPECT_OK(cp_prove(ctx, key, &c, 1, 0, mu, &p2));
        });
        th1.join();
        th2.join();
        double wall = std::chrono::duration<double>(clk::now() - t0).count();
        uint64_t max_wait = std::max(p1.timings.wait_ns, p2.timings.wait_ns);
        CHECK(wall >= 0.29 && max_wait >= delay * 8 / 10 && p1.timings.device_ns >= delay,
              "serialized (mutex=%d): wall %.3f s, max wait %.3f s", use_mutex, wall, max_wait / 1e9);
        std::printf("  same device, %s mutex: wall %.3f s, waits %.3f / %.3f s\n",
                    use_mutex ? "caller's" : "own", wall, p1.timings.wait_ns / 1e9, p2.timings.wait_ns / 1e9);
        cp_mutex_free(mu);
    }
    // Two devices run concurrently.
    {
        cp_circuit cs[2] = {t.view(1), t.view(2)};
        cp_proof ps[2];
        auto t0 = clk::now();
        EXPECT_OK(cp_prove(ctx, key, cs, 2, CP_GPU_AUTO, nullptr, ps));
        double wall = std::chrono::duration<double>(clk::now() - t0).count();
        CHECK(wall < 0.28 && ps[0].device == 0 && ps[1].device == 1, "auto concurrent: wall %.3f", wall);
        std::printf("  auto over 2 devices: wall %.3f s\n", wall);
        cp_device_stats st;
        EXPECT_OK(cp_device_stats_get(ctx, 1, &st));
        CHECK(st.busy_ns >= delay, "busy_ns counts the delay");
    }
    cp_key_free(key);
    cp_context_free(ctx);
}
