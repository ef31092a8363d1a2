// gpu_index routing on a 4-device host context (explicit, automatic,
// bound, out of range, with a caller's mutex), unsatisfied and shape errors
// naming the circuit, fault injection, statistics and trim, prepare, and
// the context options (backend, CUDA_PROVER_HOST_DEVICES).
#include <cstdlib>
#include <thread>
#include <utility>

#include "common.hpp"
#include "field.hpp"

using namespace cp;

void test_routing() {
    std::printf("routing, checks and faults on a 4-device host context\n");
    cp_context *ctx = host_ctx(4, 1);
    if (!ctx) return;
    int32_t count = 0;
    EXPECT_OK(cp_device_count(ctx, &count));
    CHECK(count == 4, "device count %d", count);
    CHECK(std::strcmp(cp_context_backend_name(ctx), "host") == 0, "backend name");
    cp_device_info info;
    EXPECT_OK(cp_device_info_get(ctx, 3, &info));
    CHECK(info.simulated == 1 && std::strcmp(info.name, "host-sim-3") == 0, "info %s", info.name);
    EXPECT_CODE(cp_device_info_get(ctx, 4, &info), CP_ERR_DEVICE_INDEX);

    const size_t nc = 20, ni = 2, na = 9;
    key_parts k = key_for(nc, ni, na);
    cp_key_parts kp = k.parts();
    cp_key *key = nullptr;
    EXPECT_OK(cp_key_from_parts(&kp, &key));
    std::vector<test_circuit> tcs;
    for (int i = 0; i < 6; i++) tcs.push_back(random_circuit(nc, ni, na));
    std::vector<cp_circuit> cs;
    for (int i = 0; i < 6; i++) cs.push_back(tcs[size_t(i)].view(i));
    std::vector<cp_proof> proofs(6);

    auto devices_of = [&](size_t n, int32_t gpu, cp_mutex *mu, std::vector<int> &devs) {
        cp_pending *p = nullptr;
        cp_status st = cp_prove_start(ctx, key, cs.data(), n, gpu, mu, &p);
        int code = st.code;
        std::string m = take(st);
        devs.clear();
        if (code == CP_OK) {
            CHECK(cp_pending_len(p) == n, "pending len");
            for (size_t i = 0; i < n; i++) devs.push_back(cp_pending_device(p, i));
            EXPECT_OK(cp_prove_finish(p, proofs.data()));
            for (size_t i = 0; i < n; i++) CHECK(proofs[i].device == devs[i], "proof device");
        }
        return std::make_pair(code, m);
    };
    std::vector<int> d;
    auto r = devices_of(6, 2, nullptr, d);
    CHECK(r.first == CP_OK && d == std::vector<int>(6, 2), "explicit device 2: %s", r.second.c_str());
    r = devices_of(6, CP_GPU_AUTO, nullptr, d);
    CHECK(r.first == CP_OK && (d == std::vector<int>{0, 0, 1, 1, 2, 3}), "auto 6 over 4: %s", r.second.c_str());
    r = devices_of(2, CP_GPU_AUTO, nullptr, d);
    CHECK(r.first == CP_OK && (d == std::vector<int>{0, 1}), "auto 2 over 4");
    r = devices_of(5, CP_GPU_AUTO, nullptr, d);
    CHECK(r.first == CP_OK && (d == std::vector<int>{0, 0, 1, 2, 3}), "auto 5 over 4");
    r = devices_of(1, CP_GPU_BOUND, nullptr, d);
    CHECK(r.first == CP_ERR_NO_DEVICE_BOUND, "bound without binding: %d", r.first);
    int32_t cur = -1;
    EXPECT_CODE(cp_current_gpu(ctx, &cur), CP_ERR_NO_DEVICE_BOUND);
    EXPECT_OK(cp_select_gpu(ctx, 3));
    EXPECT_OK(cp_current_gpu(ctx, &cur));
    CHECK(cur == 3, "current %d", cur);
    r = devices_of(3, CP_GPU_BOUND, nullptr, d);
    CHECK(r.first == CP_OK && d == std::vector<int>(3, 3), "bound device 3");
    r = devices_of(2, 1, nullptr, d);
    CHECK(r.first == CP_OK && d == std::vector<int>(2, 1), "explicit device 1");
    EXPECT_OK(cp_current_gpu(ctx, &cur));
    CHECK(cur == 3, "binding restored after an explicit call: %d", cur);
    // Another thread has no binding.
    std::thread([&] { EXPECT_CODE(cp_current_gpu(ctx, &cur), CP_ERR_NO_DEVICE_BOUND); }).join();
    // A second context does not see this thread's binding.
    cp_context *ctx2 = host_ctx(2, 1);
    EXPECT_CODE(cp_current_gpu(ctx2, &cur), CP_ERR_NO_DEVICE_BOUND);
    cp_context_free(ctx2);
    EXPECT_OK(cp_select_gpu(ctx, -1));
    EXPECT_CODE(cp_current_gpu(ctx, &cur), CP_ERR_NO_DEVICE_BOUND);
    EXPECT_CODE(cp_select_gpu(ctx, 4), CP_ERR_DEVICE_INDEX);
    EXPECT_CODE(cp_select_gpu(ctx, -2), CP_ERR_DEVICE_INDEX);

    r = devices_of(2, 4, nullptr, d);
    CHECK(r.first == CP_ERR_DEVICE_INDEX && r.second.find("gpu_index 4") != std::string::npos,
          "out of range 4: %d %s", r.first, r.second.c_str());
    std::printf("  e.g. %s\n", r.second.c_str());
    r = devices_of(2, -3, nullptr, d);
    CHECK(r.first == CP_ERR_DEVICE_INDEX, "out of range -3");
    EXPECT_CODE(cp_prove(ctx, key, cs.data(), 0, 0, nullptr, proofs.data()), CP_ERR_INVALID_ARGUMENT);
    EXPECT_CODE(cp_prove(ctx, key, nullptr, 1, 0, nullptr, proofs.data()), CP_ERR_INVALID_ARGUMENT);

    cp_mutex *mu = nullptr;
    EXPECT_OK(cp_mutex_new(&mu));
    r = devices_of(3, CP_GPU_AUTO, mu, d);
    CHECK(r.first == CP_ERR_INVALID_ARGUMENT, "mutex with auto over several devices: %d", r.first);
    r = devices_of(1, CP_GPU_AUTO, mu, d);
    CHECK(r.first == CP_OK && d == std::vector<int>{0}, "mutex with auto over one device");
    r = devices_of(2, 2, mu, d);
    CHECK(r.first == CP_OK, "mutex with explicit device");
    cp_mutex_free(mu);

    // Unsatisfied and shape errors name the circuit.
    {
        std::vector<cp_circuit> bad = cs;
        test_circuit t = tcs[4];
        t.c[7] = fr_add(t.c[7], fr_one());
        bad[4] = t.view(44);
        cp_status st = cp_prove(ctx, key, bad.data(), 6, CP_GPU_AUTO, nullptr, proofs.data());
        int code = st.code;
        std::string m = take(st);
        CHECK(code == CP_ERR_UNSATISFIED && m.find("circuit 4 (tag 44)") != std::string::npos &&
                  m.find("constraint 7") != std::string::npos,
              "unsatisfied: %d %s", code, m.c_str());
        std::printf("  e.g. %s\n", m.c_str());
        test_circuit t2 = random_circuit(nc, ni, na + 1);
        bad = cs;
        bad[1] = t2.view(11);
        st = cp_prove(ctx, key, bad.data(), 3, 0, nullptr, proofs.data());
        code = st.code;
        m = take(st);
        CHECK(code == CP_ERR_SHAPE_MISMATCH && m.find("circuit 1 (tag 11)") != std::string::npos,
              "shape: %d %s", code, m.c_str());
        std::printf("  e.g. %s\n", m.c_str());
        test_circuit t3 = random_circuit(nc + 20, ni, na);  // domain 64: h size differs
        bad = cs;
        bad[0] = t3.view(0);
        EXPECT_CODE(cp_prove(ctx, key, bad.data(), 1, 0, nullptr, proofs.data()), CP_ERR_SHAPE_MISMATCH);
    }

    // Faults: one shot, matched by device and tag.
    {
        EXPECT_OK(cp_inject_fault(ctx, 1, 3));
        cp_status st = cp_prove(ctx, key, cs.data(), 6, CP_GPU_AUTO, nullptr, proofs.data());
        int code = st.code;
        std::string m = take(st);
        CHECK(code == CP_ERR_INJECTED_FAULT && m.find("injected fault on device 1 at tag 3") != std::string::npos,
              "fault: %d %s", code, m.c_str());
        EXPECT_OK(cp_prove(ctx, key, cs.data(), 6, CP_GPU_AUTO, nullptr, proofs.data()));
        EXPECT_OK(cp_inject_fault(ctx, 2, -1));
        EXPECT_OK(cp_prove(ctx, key, cs.data(), 2, 0, nullptr, proofs.data()));  // other device
        EXPECT_CODE(cp_prove(ctx, key, cs.data(), 1, 2, nullptr, proofs.data()), CP_ERR_INJECTED_FAULT);
        EXPECT_OK(cp_inject_fault(ctx, 0, 5));
        EXPECT_OK(cp_inject_fault(ctx, -1, 0));
        EXPECT_OK(cp_prove(ctx, key, cs.data(), 6, 0, nullptr, proofs.data()));
        EXPECT_CODE(cp_inject_fault(ctx, 7, 0), CP_ERR_DEVICE_INDEX);
    }

    // Stats and trim.
    {
        cp_device_stats st;
        EXPECT_OK(cp_device_stats_get(ctx, 0, &st));
        CHECK(st.proofs > 0 && st.busy_ns > 0 && st.cache_bytes > 0 && st.cache_allocations >= 1,
              "stats proofs=%llu busy=%llu cache=%llu allocs=%llu", (unsigned long long)st.proofs,
              (unsigned long long)st.busy_ns, (unsigned long long)st.cache_bytes,
              (unsigned long long)st.cache_allocations);
        uint64_t allocs = st.cache_allocations;
        EXPECT_OK(cp_prove(ctx, key, cs.data(), 1, 0, nullptr, proofs.data()));
        EXPECT_OK(cp_device_stats_get(ctx, 0, &st));
        CHECK(st.cache_allocations == allocs, "cache reused");
        uint64_t freed = 0;
        EXPECT_OK(cp_device_trim(ctx, 0, &freed));
        CHECK(freed > 0, "trim freed %llu", (unsigned long long)freed);
        EXPECT_OK(cp_device_stats_get(ctx, 0, &st));
        CHECK(st.trims == 1 && st.cache_bytes == 0, "after trim");
        EXPECT_OK(cp_device_trim(ctx, 0, &freed));
        EXPECT_OK(cp_device_stats_get(ctx, 0, &st));
        CHECK(freed == 0 && st.trims == 1, "second trim");
        cp_memory_estimate est;
        EXPECT_OK(cp_memory_estimate_get(key, nc, &est));
        CHECK(est.working_bytes > 0 && est.key_bytes > 0, "estimate");
    }

    // Prepare: allocates the cache ahead of the proof, under the device's
    // mutex, and leaves the thread's binding as it was.
    {
        std::printf("  prepare\n");
        EXPECT_CODE(cp_device_prepare(nullptr, 0, key, nc), CP_ERR_INVALID_ARGUMENT);
        EXPECT_CODE(cp_device_prepare(ctx, 0, nullptr, nc), CP_ERR_INVALID_ARGUMENT);
        EXPECT_CODE(cp_device_prepare(ctx, 4, key, nc), CP_ERR_DEVICE_INDEX);
        EXPECT_CODE(cp_device_prepare(ctx, -1, key, nc), CP_ERR_DEVICE_INDEX);
        EXPECT_CODE(cp_device_prepare(ctx, 0, key, 0), CP_ERR_INVALID_ARGUMENT);
        EXPECT_CODE(cp_device_prepare(ctx, 0, key, (uint64_t(1) << 31) + 1), CP_ERR_INVALID_ARGUMENT);
        cp_device_stats st;
        EXPECT_OK(cp_device_stats_get(ctx, 0, &st));
        CHECK(st.cache_bytes == 0, "cache empty after trim (%llu)", (unsigned long long)st.cache_bytes);
        const uint64_t allocs = st.cache_allocations;
        EXPECT_OK(cp_select_gpu(ctx, 1));
        EXPECT_OK(cp_device_prepare(ctx, 0, key, nc));
        int32_t cur = -1;
        EXPECT_OK(cp_current_gpu(ctx, &cur));
        CHECK(cur == 1, "binding restored after prepare: %d", cur);
        EXPECT_OK(cp_select_gpu(ctx, -1));
        EXPECT_OK(cp_device_prepare(ctx, 0, key, nc));
        EXPECT_CODE(cp_current_gpu(ctx, &cur), CP_ERR_NO_DEVICE_BOUND);
        EXPECT_OK(cp_device_stats_get(ctx, 0, &st));
        CHECK(st.cache_allocations == allocs + 1 && st.cache_bytes > 0,
              "prepare allocates the cache once: %llu -> %llu, %llu bytes",
              (unsigned long long)allocs, (unsigned long long)st.cache_allocations,
              (unsigned long long)st.cache_bytes);
        EXPECT_OK(cp_prove(ctx, key, cs.data(), 1, 0, nullptr, proofs.data()));
        EXPECT_OK(cp_device_stats_get(ctx, 0, &st));
        CHECK(st.cache_allocations == allocs + 1, "the proof after prepare does not allocate: %llu",
              (unsigned long long)st.cache_allocations);
        EXPECT_OK(cp_set_device_memory_limit(ctx, 2, 1024));
        EXPECT_CODE(cp_device_prepare(ctx, 2, key, nc), CP_ERR_OUT_OF_MEMORY);
        EXPECT_OK(cp_set_device_memory_limit(ctx, 2, 0));
    }
    cp_key_free(key);
    cp_context_free(ctx);

    // Options.
    cp_context_options o{CP_BACKEND_CUDA, 0, 0};
    cp_context *c = nullptr;
    if (!cp_built_with_cuda()) {
        EXPECT_CODE(cp_context_new(&o, &c), CP_ERR_UNSUPPORTED);
        int32_t n = -1;
        cp_status st = cp_cuda_device_count(&n);
        CHECK(st.code == CP_OK && n == 0, "cuda count");
        take(st);
    }
    setenv("CUDA_PROVER_HOST_DEVICES", "3", 1);
    o = {CP_BACKEND_HOST, 0, 1};
    EXPECT_OK(cp_context_new(&o, &c));
    int32_t n = 0;
    if (c) EXPECT_OK(cp_device_count(c, &n));
    CHECK(n == 3, "env device count %d", n);
    cp_context_free(c);
    setenv("CUDA_PROVER_HOST_DEVICES", "x3", 1);
    EXPECT_CODE(cp_context_new(&o, &c), CP_ERR_INVALID_ARGUMENT);
    unsetenv("CUDA_PROVER_HOST_DEVICES");
    EXPECT_OK(cp_context_new(&o, &c));
    if (c) EXPECT_OK(cp_device_count(c, &n));
    CHECK(n == 1, "default device count %d", n);
    cp_context_free(c);
}
