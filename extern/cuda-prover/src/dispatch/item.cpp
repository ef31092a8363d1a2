// Owns: one item's way through its device: `before`, the wait in the
// device's share queue (claimed by another item's pass, or at its head),
// the caller's and the device's mutexes, the work alone or a shared pass it
// leads, `after`, and the item's times (CP_TRACE_DISPATCH prints them).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "dispatch/parts.hpp"
#include "share_queue.hpp"

namespace cp {
namespace {

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

}  // namespace

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

}  // namespace cp
