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

// What every item of one dispatch call shares.
struct run_env {
    cp_context &ctx;
    const std::vector<dispatch_item> &items;
    cp_mutex *caller_mu;
    const std::function<void(size_t, int, device &)> &work;
    const std::function<void(size_t, int, device &)> &before;
    const std::function<void(size_t, int, device &)> &after;
    const dispatch_share *share;
    std::vector<item_times> &times;
};

// Rethrows e with the item's name and device in front of its message.
[[noreturn]] void rethrow_named(std::exception_ptr e, const dispatch_item &item, int ordinal) {
    try {
        std::rethrow_exception(e);
    } catch (error &err) {
        err.message = item.name + " on device " + std::to_string(ordinal) + ": " + err.message;
        throw;
    }
}

// A copy of e that another thread may change (errors get their name
// prefixed by the thread that rethrows them).
std::exception_ptr own_copy(std::exception_ptr e) {
    if (!e) return e;
    try {
        std::rethrow_exception(e);
    } catch (const error &err) {
        try {
            return std::make_exception_ptr(error(err));
        } catch (...) {
            return e;
        }
    } catch (...) {
        return e;
    }
}

// The pending one-shot fault for `tag`, consumed and thrown; the slot's
// device delay plus the tag's delay otherwise.
uint64_t faults_and_delay(cp_context &ctx, device_slot &s, int ordinal, int64_t tag) {
    uint64_t delay = 0;
    {
        std::lock_guard<std::mutex> lk(s.state);
        for (size_t i = 0; i < s.faults.size(); i++) {
            if (s.faults[i] == -1 || s.faults[i] == tag) {
                s.faults.erase(s.faults.begin() + static_cast<long>(i));
                fail(CP_ERR_INJECTED_FAULT, "injected fault on device " + std::to_string(ordinal) +
                                                " at tag " + std::to_string(tag));
            }
        }
        delay = s.delay_ns;
    }
    std::lock_guard<std::mutex> lk(ctx.tag_delay_mu);
    auto it = ctx.tag_delay_ns.find(tag);
    if (it != ctx.tag_delay_ns.end()) delay += it->second;
    return delay;
}

// Whether an item with `tag` may join another item's pass: no fault is
// pending for it and no delay is set for its tag.
bool may_join(cp_context &ctx, device_slot &s, int64_t tag) {
    {
        std::lock_guard<std::mutex> lk(s.state);
        for (int64_t f : s.faults)
            if (f == -1 || f == tag) return false;
    }
    std::lock_guard<std::mutex> lk(ctx.tag_delay_mu);
    return ctx.tag_delay_ns.find(tag) == ctx.tag_delay_ns.end();
}

void count_proofs(device_slot &s, uint64_t proofs, uint64_t busy_ns) {
    std::lock_guard<std::mutex> lk(s.state);
    s.proofs += proofs;
    s.busy_ns += busy_ns;
}

// Takes the head's place in the queue away on every way out (the next
// waiting item then goes on to the mutexes).
struct queue_exit {
    share_queue *q = nullptr;
    share_member *m = nullptr;
    void leave() {
        if (!q) return;
        {
            std::lock_guard<std::mutex> lk(q->mu);
            for (auto it = q->waiting.begin(); it != q->waiting.end(); ++it)
                if (*it == m) {
                    q->waiting.erase(it);
                    break;
                }
        }
        q->cv.notify_all();
        q = nullptr;
    }
    ~queue_exit() { leave(); }
};

// Items [k, k + returned) on device `ordinal` (hi: the end of this thread's
// items), the thread already bound: item k alone, or item k leading a
// shared pass with the next items of this call it claims. On a failure,
// *failed is the failing item.
size_t run_item(const run_env &env, size_t k, size_t hi, int ordinal, size_t *failed) {
    *failed = k;
    cp_context &ctx = env.ctx;
    const dispatch_item &item = env.items[k];
    item_times &t = env.times[k];
    device_slot &s = ctx.slot(ordinal);
    const auto tb = clock_type::now();
    if (env.before) env.before(k, ordinal, *s.dev);
    const auto t0 = clock_type::now();

    // An item that may share waits in the device's queue: claimed by
    // another item's pass, or at the head and then on to the mutexes.
    share_member me;
    queue_exit head;
    if (env.share) {
        me.key = env.share->key(k);
        if (me.key.kind) {
            me.key.caller_mutex = env.caller_mu;
            me.payload = env.share->payload(k);
            me.tag = item.tag;
            share_queue &q = s.joins;
            std::unique_lock<std::mutex> lk(q.mu);
            q.waiting.push_back(&me);
            q.cv.wait(lk, [&] { return me.claimed || q.waiting.front() == &me; });
            if (me.claimed) {
                q.cv.wait(lk, [&] { return me.done; });
                lk.unlock();
                const auto t2 = clock_type::now();
                t.wait_ns = ns_between(t0, me.started);
                t.device_ns = ns_between(me.started, t2);
                if (me.err) rethrow_named(me.err, item, ordinal);
                try {
                    if (env.after) env.after(k, ordinal, *s.dev);
                } catch (...) {
                    rethrow_named(std::current_exception(), item, ordinal);
                }
                count_proofs(s, 1, 0);
                return 1;
            }
            head.q = &q;
            head.m = &me;
        }
    }

    std::unique_lock<std::mutex> outer;
    if (env.caller_mu) outer = std::unique_lock<std::mutex>(env.caller_mu->m);
    std::unique_lock<std::mutex> own(s.own);
    const auto t1 = clock_type::now();
    t.wait_ns = ns_between(t0, t1);

    clock_type::time_point tw;
    size_t shared = 1;  // items of this call in the pass: k and its next
    try {
        const uint64_t delay = faults_and_delay(ctx, s, ordinal, item.tag);
        // The candidates: this call's next items with the same key, then
        // the waiting items of other calls, in arrival order.
        std::vector<void *> payloads;
        std::vector<share_member *> remote;
        size_t local = 0;
        if (head.q) {
            payloads.push_back(me.payload);
            for (size_t j = k + 1; j < hi; j++) {
                share_key kj = env.share->key(j);
                kj.caller_mutex = env.caller_mu;
                if (!(kj == me.key) || !may_join(ctx, s, env.items[j].tag)) break;
                payloads.push_back(env.share->payload(j));
                local++;
            }
            {
                std::lock_guard<std::mutex> lk(head.q->mu);
                for (share_member *m : head.q->waiting)
                    if (m != &me && m->key == me.key) remote.push_back(m);
            }
            // Checked outside the queue's mutex: only the head claims, so
            // the waiting items stay until it does.
            std::vector<share_member *> ok;
            for (share_member *m : remote)
                if (may_join(ctx, s, m->tag)) {
                    ok.push_back(m);
                    payloads.push_back(m->payload);
                }
            remote.swap(ok);
        }
        size_t n = 1;
        if (payloads.size() > 1)
            n = std::max<size_t>(1, std::min(payloads.size(),
                                             env.share->limit(payloads.data(), payloads.size(),
                                                              *s.dev)));
        if (n == 1) {
            head.leave();
            env.work(k, ordinal, *s.dev);
        } else {
            // The pass's items: k, then `shared - 1` next items of this
            // call, then the claimed items of other calls.
            shared = 1 + std::min(local, n - 1);
            std::vector<void *> pass(payloads.begin(), payloads.begin() + shared);
            std::vector<share_member *> claimed;
            for (size_t i = 0; shared + claimed.size() < n; i++) {
                claimed.push_back(remote[i]);
                pass.push_back(remote[i]->payload);
            }
            std::vector<std::exception_ptr> errs(pass.size());
            // From here every claimed item is marked done on every way out.
            {
                std::lock_guard<std::mutex> lk(head.q->mu);
                for (share_member *m : claimed) {
                    m->claimed = true;
                    for (auto it = head.q->waiting.begin(); it != head.q->waiting.end(); ++it)
                        if (*it == m) {
                            head.q->waiting.erase(it);
                            break;
                        }
                }
            }
            head.leave();  // the next waiting item goes on to the mutexes
            const auto pass_start = clock_type::now();
            std::exception_ptr all;
            try {
                env.share->run(pass.data(), pass.size(), ordinal, *s.dev, errs.data());
            } catch (...) {
                all = std::current_exception();
            }
            {
                std::lock_guard<std::mutex> lk(s.joins.mu);
                for (size_t i = 0; i < claimed.size(); i++) {
                    const std::exception_ptr e = errs[shared + i] ? errs[shared + i] : all;
                    claimed[i]->err = own_copy(e);
                    claimed[i]->started = pass_start;
                    claimed[i]->done = true;
                }
            }
            s.joins.cv.notify_all();
            if (all) std::rethrow_exception(all);
            for (size_t i = 0; i < shared; i++)
                if (errs[i]) {
                    *failed = k + i;
                    own.unlock();
                    if (outer) outer.unlock();
                    rethrow_named(errs[i], env.items[k + i], ordinal);
                }
        }
        if (delay) std::this_thread::sleep_for(std::chrono::nanoseconds(delay));
        tw = clock_type::now();
        own.unlock();
        if (outer) outer.unlock();
        if (env.after)
            for (size_t i = 0; i < shared; i++) {
                *failed = k + i;
                try {
                    env.after(k + i, ordinal, *s.dev);
                } catch (...) {
                    if (i == 0) throw;
                    rethrow_named(std::current_exception(), env.items[k + i], ordinal);
                }
            }
    } catch (error &err) {
        if (*failed == k)
            err.message = item.name + " on device " + std::to_string(ordinal) + ": " + err.message;
        throw;
    }
    const auto t2 = clock_type::now();
    t.device_ns = ns_between(t1, t2);
    for (size_t i = 1; i < shared; i++) env.times[k + i] = t;
    if (trace_dispatch())
        std::fprintf(stderr,
                     "cp dispatch trace: tag %lld device %d: before %.2f-%.2f, locked %.2f, work "
                     "%.2f, after %.2f, items %zu\n",
                     static_cast<long long>(item.tag), ordinal, trace_ms(tb), trace_ms(t0),
                     trace_ms(t1), trace_ms(tw), trace_ms(t2), shared);
    count_proofs(s, shared, t.device_ns);
    return shared;
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
