#include "dispatch.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <thread>

namespace cp {
namespace {

using clock_type = std::chrono::steady_clock;

uint64_t ns_between(clock_type::time_point a, clock_type::time_point b) {
    return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(b - a).count());
}

// CP_TRACE_DISPATCH (diagnostics): one line per item on stderr with its
// phases in ms since the core was loaded: `before` from..to, the mutexes
// taken, `work` done, `after` done.
const clock_type::time_point trace_epoch = clock_type::now();

bool trace_dispatch() {
    static const bool on = std::getenv("CP_TRACE_DISPATCH") != nullptr;
    return on;
}

double trace_ms(clock_type::time_point t) {
    return std::chrono::duration<double, std::milli>(t - trace_epoch).count();
}

// One item on device `ordinal`, the thread already bound.
void run_item(cp_context &ctx, size_t k, const dispatch_item &item, int ordinal, cp_mutex *caller_mu,
              const std::function<void(size_t, int, device &)> &work,
              const std::function<void(size_t, int, device &)> &before,
              const std::function<void(size_t, int, device &)> &after, item_times &t) {
    device_slot &s = ctx.slot(ordinal);
    const auto tb = clock_type::now();
    if (before) before(k, ordinal, *s.dev);
    const auto t0 = clock_type::now();
    std::unique_lock<std::mutex> outer;
    if (caller_mu) outer = std::unique_lock<std::mutex>(caller_mu->m);
    std::unique_lock<std::mutex> own(s.own);
    const auto t1 = clock_type::now();
    t.wait_ns = ns_between(t0, t1);

    uint64_t delay = 0;
    {
        std::lock_guard<std::mutex> lk(s.state);
        for (size_t i = 0; i < s.faults.size(); i++) {
            if (s.faults[i] == -1 || s.faults[i] == item.tag) {
                s.faults.erase(s.faults.begin() + static_cast<long>(i));
                fail(CP_ERR_INJECTED_FAULT, "injected fault on device " + std::to_string(ordinal) +
                                                " at tag " + std::to_string(item.tag));
            }
        }
        delay = s.delay_ns;
    }
    {
        std::lock_guard<std::mutex> lk(ctx.tag_delay_mu);
        auto it = ctx.tag_delay_ns.find(item.tag);
        if (it != ctx.tag_delay_ns.end()) delay += it->second;
    }
    clock_type::time_point tw;
    try {
        work(k, ordinal, *s.dev);
        if (delay) std::this_thread::sleep_for(std::chrono::nanoseconds(delay));
        tw = clock_type::now();
        if (after) {
            own.unlock();
            if (outer) outer.unlock();
            after(k, ordinal, *s.dev);
        }
    } catch (error &err) {
        err.message = item.name + " on device " + std::to_string(ordinal) + ": " + err.message;
        throw;
    }
    const auto t2 = clock_type::now();
    t.device_ns = ns_between(t1, t2);
    if (trace_dispatch())
        std::fprintf(stderr,
                     "cp dispatch trace: tag %lld device %d: before %.2f-%.2f, locked %.2f, work "
                     "%.2f, after %.2f\n",
                     static_cast<long long>(item.tag), ordinal, trace_ms(tb), trace_ms(t0),
                     trace_ms(t1), trace_ms(tw), trace_ms(t2));
    std::lock_guard<std::mutex> lk(s.state);
    s.proofs++;
    s.busy_ns += t.device_ns;
}

}  // namespace

bind_scope::bind_scope(cp_context &c, int ordinal) : ctx(c), prev(bound_device(c.id)) {
    ctx.slot(ordinal).dev->bind_thread();
    set_bound_device(ctx.id, ordinal);
}

bind_scope::~bind_scope() {
    set_bound_device(ctx.id, prev);
    if (prev >= 0) {
        try {
            ctx.slot(prev).dev->bind_thread();
        } catch (...) {
        }
    }
}

route resolve_route(const cp_context &ctx, int32_t gpu_index, size_t n, const cp_mutex *mutex,
                    const char *where) {
    const int count = ctx.count();
    route r;
    if (gpu_index >= 0 && gpu_index < count) {
        if (!ctx.is_open(gpu_index))
            fail(CP_ERR_DEVICE_INDEX, std::string(where) + ": gpu_index " + std::to_string(gpu_index) +
                                          " is not in this context's device set " + ctx.open_list());
        r.ordinals.push_back(gpu_index);
    } else if (gpu_index == CP_GPU_AUTO) {
        const size_t k = std::min(ctx.open.size(), n);
        r.ordinals.assign(ctx.open.begin(), ctx.open.begin() + static_cast<long>(k));
    } else if (gpu_index == CP_GPU_BOUND) {
        const int b = bound_device(ctx.id);
        if (b < 0)
            fail(CP_ERR_NO_DEVICE_BOUND, std::string(where) +
                                             ": gpu_index CP_GPU_BOUND: this thread has no device "
                                             "bound; call cp_select_gpu");
        r.ordinals.push_back(b);
    } else {
        fail(CP_ERR_DEVICE_INDEX, std::string(where) + ": gpu_index " + std::to_string(gpu_index) +
                                      " is out of range: this context has " + std::to_string(count) +
                                      " devices, open " + ctx.open_list() +
                                      " (valid: -1 for automatic, -2 for the bound device, or an "
                                      "open ordinal)");
    }
    if (r.ordinals.empty()) fail(CP_ERR_DEVICE, std::string(where) + ": the context has no devices");
    if (mutex && r.ordinals.size() > 1)
        fail(CP_ERR_INVALID_ARGUMENT,
             std::string(where) + ": a cp_mutex belongs to one device, but gpu_index -1 spreads these " +
                 std::to_string(n) + " items over " + std::to_string(r.ordinals.size()) +
                 " devices; pass NULL or route to one device");
    return r;
}

void dispatch(cp_context &ctx, const route &r, const std::vector<dispatch_item> &items,
              cp_mutex *mutex, const std::function<void(size_t, int, device &)> &work,
              std::vector<item_times> &times,
              const std::function<void(size_t, int, device &)> &before,
              const std::function<void(size_t, int, device &)> &after) {
    const size_t n = items.size();
    times.assign(n, item_times{});
    const int n_gpus = static_cast<int>(r.ordinals.size());
    if (n_gpus == 1) {
        const int ord = r.ordinals[0];
        bind_scope scope(ctx, ord);
        for (size_t k = 0; k < n; k++) run_item(ctx, k, items[k], ord, mutex, work, before, after, times[k]);
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
            for (; k < hi && !abort.load(); k++) run_item(ctx, k, items[k], ord, mutex, work, before, after, times[k]);
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
