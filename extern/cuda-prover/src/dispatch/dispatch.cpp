// Owns: dispatch() itself: a call's items in order on one device, or in
// contiguous ranges on one thread a device, a failure stopping the others
// at their next item and the lowest failing item's error rethrown.
#include <atomic>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "dispatch/parts.hpp"

namespace cp {

void dispatch(cp_context &ctx, const route &r, const std::vector<dispatch_item> &items,
              cp_mutex *mutex, const std::function<void(size_t, int, device &)> &work,
              std::vector<item_times> &times,
              const std::function<void(size_t, int, device &)> &before,
              const std::function<void(size_t, int, device &)> &after,
              const dispatch_share *share) {
    const size_t n = items.size();
    const run_env env{ctx, items, mutex, work, before, after, share, times};
    times.assign(n, item_times{});
    const int n_gpus = static_cast<int>(r.ordinals.size());
    if (n_gpus == 1) {
        const int ord = r.ordinals[0];
        bind_scope scope(ctx, ord);
        size_t failed = 0;
        for (size_t k = 0; k < n;) k += run_item(env, k, n, ord, &failed);
        return;
    }
    std::mutex err_mu;
    size_t err_index = SIZE_MAX;
    std::exception_ptr err;
    std::atomic<bool> abort{false};
    auto record = [&](size_t k) {
        std::lock_guard<std::mutex> lk(err_mu);
        if (k < err_index) {
            err_index = k;
            err = std::current_exception();
        }
        abort = true;
    };
    auto worker = [&](int tid, size_t lo, size_t hi) {
        const int ord = r.ordinals[static_cast<size_t>(tid)];
        size_t k = lo;
        try {
            ctx.slot(ord).dev->bind_thread();
            set_bound_device(ctx.id, ord);
            size_t failed = k;
            try {
                while (k < hi && !abort.load()) k += run_item(env, k, hi, ord, &failed);
            } catch (...) {
                k = failed;
                throw;
            }
        } catch (...) {
            record(k);
        }
        set_bound_device(ctx.id, -1);
    };
    std::vector<std::thread> threads;
    threads.reserve(static_cast<size_t>(n_gpus));
    try {
        const size_t q = n / static_cast<size_t>(n_gpus), rem = n % static_cast<size_t>(n_gpus);
        size_t lo = 0;
        for (int tid = 0; tid < n_gpus; tid++) {
            size_t len = q + (static_cast<size_t>(tid) < rem ? 1 : 0);
            threads.emplace_back(worker, tid, lo, lo + len);
            lo += len;
        }
    } catch (...) {
        abort = true;
        for (auto &t : threads) t.join();
        throw;
    }
    for (auto &t : threads) t.join();
    if (err) std::rethrow_exception(err);
}

}  // namespace cp
