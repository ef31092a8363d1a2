#include "gkr/handles.hpp"

#include <atomic>
#include <mutex>

#include "dispatch.hpp"
#include "parallel.hpp"

namespace cp {
namespace gkr {

site site::route_one(cp_context *ctx, int32_t gpu_index, cp_mutex *mutex, int64_t tag,
                     const char *what, const char *where) {
    const route r = resolve_route(*ctx, gpu_index, 1, mutex, where);
    site s;
    s.ctx = ctx;
    s.ordinal = r.ordinals[0];
    s.mutex = mutex;
    s.tag = tag;
    s.name = std::string(what) + " (tag " + std::to_string(tag) + ")";
    return s;
}

void site::run(const std::function<void(kernels &)> &f) const {
    route r;
    r.ordinals.push_back(ordinal);
    std::vector<dispatch_item> items(1);
    items[0].tag = tag;
    items[0].name = name;
    std::vector<item_times> times;
    dispatch(*ctx, r, items, mutex, [&](size_t, int, device &dev) { f(dev.gkr()); }, times);
}

void site::release(const std::vector<buf_id> &bufs) const noexcept {
    if (!ctx || bufs.empty()) return;
    try {
        device_slot &s = ctx->slot(ordinal);
        std::unique_lock<std::mutex> outer;
        if (mutex) outer = std::unique_lock<std::mutex>(mutex->m);
        std::lock_guard<std::mutex> own(s.own);
        bind_scope scope(*ctx, ordinal);
        kernels &k = s.dev->gkr();
        for (buf_id b : bufs) k.release(b);
    } catch (...) {
    }
}

bb::ext from_abi(const cp_bb4 &v, const std::string &what, size_t index) {
    bb::ext e;
    for (int i = 0; i < 4; i++) {
        if (v.c[i] >= bb::P)
            fail(CP_ERR_INVALID_ARGUMENT, what + "[" + std::to_string(index) + "]: coefficient " +
                                              std::to_string(i) + " is " + std::to_string(v.c[i]) +
                                              ", not below p = " + std::to_string(bb::P));
        e.c[i] = bb::to_mont(v.c[i]);
    }
    return e;
}

void from_abi(const cp_bb4 *v, size_t n, bb::ext *out, const std::string &what, int threads) {
    std::atomic<bool> bad{false};
    parallel_for(n, threads, size_t(1) << 14, [&](size_t b, size_t e, size_t) {
        for (size_t i = b; i < e; i++) {
            for (int c = 0; c < 4; c++) {
                if (v[i].c[c] >= bb::P) {
                    bad = true;
                    return;
                }
                out[i].c[c] = bb::to_mont(v[i].c[c]);
            }
        }
    });
    if (bad)  // the sequential pass throws for the first bad index
        for (size_t i = 0; i < n; i++) out[i] = from_abi(v[i], what, i);
}

cp_bb4 to_abi(const bb::ext &v) {
    cp_bb4 r;
    for (int i = 0; i < 4; i++) r.c[i] = bb::from_mont(v.c[i]);
    return r;
}

}  // namespace gkr
}  // namespace cp
