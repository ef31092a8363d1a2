// The dispatcher (dispatch.hpp): the `after` callable of an item, run
// without the mutexes, and shared passes (dispatch_share) of one call's
// items and of other callers' waiting items.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <mutex>
#include <thread>

#include "common.hpp"
#include "core.hpp"
#include "dispatch.hpp"

using namespace cp;

// The dispatcher's `after` callable (a device part's tail): it runs once
// per item, after that item's work, on the same thread, with the caller's
// and the device's mutex released (the next item's work may take them);
// its time counts in the item's device_ns, and its error is the item's,
// named with the item and device.
void test_dispatch_after() {
    std::printf("dispatcher: work, then after without the mutexes\n");
    cp_context *ctx = host_ctx(2, 1);
    if (!ctx) return;
    cp_mutex *mu = nullptr;
    EXPECT_OK(cp_mutex_new(&mu));
    cp::route r;
    r.ordinals = {1};
    std::vector<cp::dispatch_item> items(3);
    for (size_t k = 0; k < items.size(); k++) {
        items[k].tag = (int64_t)k;
        items[k].name = "item " + std::to_string(k);
    }
    std::vector<std::string> order;
    bool mutexes_free = true, same_thread = true;
    std::thread::id work_thread;
    std::vector<cp::item_times> times;
    const auto tail = std::chrono::milliseconds(30);
    try {
        cp::dispatch(
            *ctx, r, items, mu,
            [&](size_t k, int, cp::device &) {
                order.push_back("work " + std::to_string(k));
                work_thread = std::this_thread::get_id();
            },
            times, nullptr,
            [&](size_t k, int ordinal, cp::device &) {
                order.push_back("after " + std::to_string(k));
                same_thread = same_thread && std::this_thread::get_id() == work_thread;
                // Another caller could take both mutexes now.
                if (mu->m.try_lock())
                    mu->m.unlock();
                else
                    mutexes_free = false;
                if (ctx->slot(ordinal).own.try_lock())
                    ctx->slot(ordinal).own.unlock();
                else
                    mutexes_free = false;
                std::this_thread::sleep_for(tail);
            });
    } catch (const cp::error &e) {
        CHECK(false, "dispatch failed: %s", e.message.c_str());
    }
    const std::vector<std::string> want = {"work 0", "after 0", "work 1", "after 1",
                                           "work 2", "after 2"};
    CHECK(order == want, "work and after alternate per item (%zu calls)", order.size());
    CHECK(mutexes_free, "after runs with the caller's and the device's mutex released");
    CHECK(same_thread, "after runs on the item's thread");
    bool timed = times.size() == items.size();
    for (const auto &t : times)
        timed = timed && t.device_ns >= (uint64_t)std::chrono::nanoseconds(tail).count();
    CHECK(timed, "device_ns includes after");

    // An error in after is the item's: the later items do not run, and the
    // message names the item and the device.
    order.clear();
    std::string message;
    try {
        cp::dispatch(
            *ctx, r, items, nullptr,
            [&](size_t k, int, cp::device &) { order.push_back("work " + std::to_string(k)); },
            times, nullptr,
            [&](size_t k, int, cp::device &) {
                if (k == 1) cp::fail(CP_ERR_INTERNAL, "tail failed");
            });
    } catch (const cp::error &e) {
        message = e.message;
    }
    CHECK(message == "item 1 on device 1: tail failed", "after's error: '%s'", message.c_str());
    CHECK(order.size() == 2, "no item runs after a failed tail (%zu)", order.size());
    cp_mutex_free(mu);
    cp_context_free(ctx);
}

// Shared passes (dispatch_share): one call's items with equal keys run as
// passes of at most the limit, other keys apart (an item alone runs
// through work); a
// failing item of a pass fails the call under its own name; items of other
// callers that wait while the device is busy join the next pass.
struct share_probe {
    int id;
};
static const char share_kind = 0;

void test_dispatch_share() {
    std::printf("dispatcher: shared passes\n");
    cp_context *ctx = host_ctx(2, 1);
    if (!ctx) return;
    cp::route r;
    r.ordinals = {1};
    const int shapes[2] = {0, 0};
    std::vector<share_probe> probes;
    std::vector<cp::dispatch_item> items;
    for (int k = 0; k < 7; k++) {
        probes.push_back({k});
        cp::dispatch_item it;
        it.tag = k;
        it.name = "item " + std::to_string(k);
        items.push_back(it);
    }
    std::mutex mu;
    std::vector<std::vector<int>> passes;
    int fail_id = -1;
    auto sharing = [&](std::vector<share_probe> &ps, size_t split) {
        cp::dispatch_share sh;
        sh.key = [&ps, split, &shapes](size_t k) {
            cp::share_key key;
            key.kind = &share_kind;
            key.shape = k < split ? &shapes[0] : &shapes[1];
            (void)ps;
            return key;
        };
        sh.payload = [&ps](size_t k) -> void * { return &ps[k]; };
        sh.limit = [](void *const *, size_t n, cp::device &) { return std::min<size_t>(n, 3); };
        sh.run = [&](void *const *payloads, size_t n, int, cp::device &, std::exception_ptr *errs) {
            std::vector<int> ids;
            for (size_t i = 0; i < n; i++) {
                const int id = static_cast<share_probe *>(payloads[i])->id;
                ids.push_back(id);
                if (id == fail_id) {
                    try {
                        cp::fail(CP_ERR_UNSATISFIED, "its witness");
                    } catch (...) {
                        errs[i] = std::current_exception();
                    }
                }
            }
            std::lock_guard<std::mutex> lk(mu);
            passes.push_back(ids);
        };
        return sh;
    };
    std::vector<cp::item_times> times;
    std::vector<size_t> afters;
    int works = 0;
    auto work = [&](size_t, int, cp::device &) { works++; };
    auto after = [&](size_t k, int, cp::device &) { afters.push_back(k); };
    {
        const cp::dispatch_share sh = sharing(probes, 5);
        try {
            cp::dispatch(*ctx, r, items, nullptr, work, times, nullptr, after, &sh);
        } catch (const cp::error &e) {
            CHECK(false, "dispatch failed: %s", e.message.c_str());
        }
    }
    const std::vector<std::vector<int>> want = {{0, 1, 2}, {3, 4}, {5, 6}};
    CHECK(passes == want && works == 0, "one call: passes of at most 3 by key (%zu passes)",
          passes.size());
    CHECK(afters == std::vector<size_t>({0, 1, 2, 3, 4, 5, 6}), "after once per item, in order");

    // Item 4's own failure: the call fails under item 4's name.
    passes.clear();
    fail_id = 4;
    std::string message;
    {
        const cp::dispatch_share sh = sharing(probes, 5);
        try {
            cp::dispatch(*ctx, r, items, nullptr, work, times, nullptr, after, &sh);
        } catch (const cp::error &e) {
            message = e.message;
        }
    }
    CHECK(message == "item 4 on device 1: its witness", "a pass's failing item: '%s'",
          message.c_str());
    CHECK(passes.size() == 2, "no pass after the failing one (%zu)", passes.size());
    fail_id = -1;

    // Other callers: while the first caller's pass holds the device (a
    // delay), three more wait; the first of them leads the next pass and
    // claims the other two.
    passes.clear();
    EXPECT_OK(cp_set_device_delay(ctx, 1, 300u * 1000 * 1000));
    std::vector<std::vector<share_probe>> own(4);
    std::vector<std::thread> callers;
    std::atomic<int> failures{0}, alone{0};
    for (int c = 0; c < 4; c++) {
        own[c] = {share_probe{10 + c}};
        callers.emplace_back([&, c] {
            std::vector<cp::dispatch_item> one(1);
            one[0].tag = 10 + c;
            one[0].name = "caller " + std::to_string(c);
            std::vector<cp::item_times> t;
            const cp::dispatch_share sh = sharing(own[c], 1);
            try {
                cp::dispatch(*ctx, r, one, nullptr, [&](size_t, int, cp::device &) { alone++; },
                             t, nullptr, nullptr, &sh);
            } catch (...) {
                failures++;
            }
        });
        if (c == 0) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    for (auto &t : callers) t.join();
    EXPECT_OK(cp_set_device_delay(ctx, 1, 0));
    size_t in_passes = 0, largest = 0;
    for (const auto &p : passes) {
        in_passes += p.size();
        largest = std::max(largest, p.size());
    }
    CHECK(failures == 0 && in_passes + alone == 4 && alone == 1,
          "every caller's item proved once (%zu in passes, %d alone)", in_passes, alone.load());
    CHECK(largest == 3, "waiting callers joined one pass (largest %zu of %zu passes)", largest,
          passes.size());
    cp_context_free(ctx);
}
