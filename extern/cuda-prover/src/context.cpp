// Owns: contexts and their devices (cp_context_*), the per-thread device
// binding (cp_select_gpu / cp_current_gpu), cp_mutex, device info and
// statistics, trim, and the test hooks (fault injection, device delay).
//
// The thread binding is a thread_local list of (context id, ordinal); the
// context id comes from a process-wide counter so that a freed context's
// stale bindings never match a new context allocated at the same address.
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "core.hpp"
#include "dispatch.hpp"
#include "field.hpp"
#include "parallel.hpp"
#include "status.hpp"

namespace cp {
namespace {

constexpr int MAX_HOST_DEVICES = 64;

thread_local std::vector<std::pair<uint64_t, int>> t_bindings;

std::atomic<uint64_t> g_next_context_id{1};

int host_device_count(int32_t requested) {
    if (requested < 0)
        fail(CP_ERR_INVALID_ARGUMENT,
             "host_devices must be >= 0 (0 reads CUDA_PROVER_HOST_DEVICES), got " +
                 std::to_string(requested));
    if (requested > 0) {
        if (requested > MAX_HOST_DEVICES)
            fail(CP_ERR_INVALID_ARGUMENT, "host_devices " + std::to_string(requested) +
                                              " is more than the limit of " +
                                              std::to_string(MAX_HOST_DEVICES));
        return requested;
    }
    const char *env = std::getenv("CUDA_PROVER_HOST_DEVICES");
    if (!env || !*env) return 1;
    char *end = nullptr;
    errno = 0;
    long v = std::strtol(env, &end, 10);
    while (end && (*end == ' ' || *end == '\t' || *end == '\n')) end++;
    if (errno != 0 || end == env || *end != '\0' || v < 1 || v > MAX_HOST_DEVICES)
        fail(CP_ERR_INVALID_ARGUMENT, std::string("CUDA_PROVER_HOST_DEVICES='") + env +
                                          "' is not a device count in 1.." +
                                          std::to_string(MAX_HOST_DEVICES));
    return static_cast<int>(v);
}

}  // namespace

int bound_device(uint64_t ctx_id) {
    for (const auto &b : t_bindings)
        if (b.first == ctx_id) return b.second;
    return -1;
}

void set_bound_device(uint64_t ctx_id, int ordinal) {
    for (size_t i = 0; i < t_bindings.size(); i++) {
        if (t_bindings[i].first == ctx_id) {
            if (ordinal >= 0) {
                t_bindings[i].second = ordinal;
            } else {
                t_bindings[i] = t_bindings.back();
                t_bindings.pop_back();
            }
            return;
        }
    }
    if (ordinal >= 0) t_bindings.emplace_back(ctx_id, ordinal);
}

void check_ordinal(const cp_context *ctx, int32_t ordinal, const char *where) {
    if (ordinal < 0 || ordinal >= ctx->count())
        fail(CP_ERR_DEVICE_INDEX, std::string(where) + ": device " + std::to_string(ordinal) +
                                      " is out of range: this context has " +
                                      std::to_string(ctx->count()) + " devices");
    if (!ctx->is_open(ordinal))
        fail(CP_ERR_DEVICE_INDEX, std::string(where) + ": device " + std::to_string(ordinal) +
                                      " is not in this context's device set " + ctx->open_list());
}

namespace {

// The caller's device set: ordinals below `space`, distinct, ascending.
// Empty means every device.
std::vector<int> requested_set(const cp_context_options &o, int space, const char *backend) {
    if (o.num_devices > 0 && !o.devices)
        fail(CP_ERR_INVALID_ARGUMENT, "cp_context_new: num_devices is " +
                                          std::to_string(o.num_devices) + " but devices is NULL");
    std::vector<int> v;
    for (size_t i = 0; i < o.num_devices; i++) {
        const int32_t d = o.devices[i];
        if (d < 0 || d >= space)
            fail(CP_ERR_DEVICE_INDEX, std::string("cp_context_new: device ") + std::to_string(d) +
                                          " does not exist: the " + backend + " backend has " +
                                          std::to_string(space) + " device(s)");
        if (std::find(v.begin(), v.end(), d) != v.end())
            fail(CP_ERR_DEVICE_INDEX, "cp_context_new: device " + std::to_string(d) +
                                          " is listed twice");
        v.push_back(d);
    }
    std::sort(v.begin(), v.end());
    return v;
}

}  // namespace
}  // namespace cp

using namespace cp;

extern "C" {

cp_status cp_context_new(const cp_context_options *options, cp_context **out) {
    return guard("cp_context_new", [&] {
        if (!options || !out) fail(CP_ERR_INVALID_ARGUMENT, "cp_context_new: NULL argument");
        *out = nullptr;
        if (options->host_threads < 0)
            fail(CP_ERR_INVALID_ARGUMENT, "host_threads must be >= 0 (0 means all hardware threads), got " +
                                              std::to_string(options->host_threads));
        std::unique_ptr<cp_context> ctx(new cp_context);
        ctx->id = g_next_context_id.fetch_add(1);
        ctx->backend = options->backend;
        ctx->threads = options->host_threads > 0 ? options->host_threads : hardware_threads();
        int space = 0;
        std::vector<int> open;
        if (options->backend == CP_BACKEND_HOST) {
            space = host_device_count(options->host_devices);
            open = requested_set(*options, space, "host");
            if (open.empty())
                for (int i = 0; i < space; i++) open.push_back(i);
        } else if (options->backend == CP_BACKEND_CUDA) {
#ifdef CP_WITH_CUDA
            std::string why;
            space = cuda_visible_count(&why);
            if (space == 0)
                fail(CP_ERR_DEVICE, "no CUDA device: " + (why.empty() ? std::string("none visible") : why));
            std::vector<int> wanted = requested_set(*options, space, "cuda");
            const std::vector<int> usable = cuda_usable_devices(&why);
            if (usable.empty()) fail(CP_ERR_DEVICE, "no usable CUDA device: " + why);
            for (int d : wanted)
                if (!std::binary_search(usable.begin(), usable.end(), d))
                    fail(CP_ERR_DEVICE_INDEX, "cp_context_new: CUDA device " + std::to_string(d) +
                                                  " lacks compute capability 7.0 or cooperative launch");
            open = cuda_claim(std::move(wanted));
#else
            fail(CP_ERR_UNSUPPORTED, "CP_BACKEND_CUDA: this library was built without the cuda feature");
#endif
        } else {
            fail(CP_ERR_INVALID_ARGUMENT, "unknown backend " + std::to_string(options->backend));
        }
        ctx->slots.resize(static_cast<size_t>(space));
        for (int o : open) {
            std::unique_ptr<device_slot> s(new device_slot);
#ifdef CP_WITH_CUDA
            s->dev = options->backend == CP_BACKEND_CUDA ? cuda_device_for(o) : host_device(o, ctx->threads);
#else
            s->dev = host_device(o, ctx->threads);
#endif
            ctx->slots[static_cast<size_t>(o)] = std::move(s);
        }
        ctx->open = std::move(open);
        if (ctx->open.empty()) fail(CP_ERR_DEVICE, "cp_context_new: no device to open");
        *out = ctx.release();
    });
}

void cp_context_free(cp_context *ctx) {
    guard_void([&] {
        if (!ctx) return;
        set_bound_device(ctx->id, -1);
        delete ctx;
    });
}

const char *cp_context_backend_name(const cp_context *ctx) {
    if (ctx && ctx->backend == CP_BACKEND_CUDA) return "cuda";
    return "host";
}

int32_t cp_built_with_cuda(void) {
#ifdef CP_WITH_CUDA
    return 1;
#else
    return 0;
#endif
}

cp_status cp_cuda_device_count(int32_t *out) {
    std::string why;
    cp_status st = guard("cp_cuda_device_count", [&] {
        if (!out) fail(CP_ERR_INVALID_ARGUMENT, "cp_cuda_device_count: out is NULL");
        *out = 0;
#ifdef CP_WITH_CUDA
        *out = cuda_device_count(&why);
#else
        why = "built without the cuda feature";
#endif
    });
    if (st.code == CP_OK && out && *out == 0 && !why.empty()) return make_status(CP_OK, why.c_str());
    return st;
}

cp_status cp_cuda_usable_devices(int32_t *out, size_t cap, size_t *len) {
    return guard("cp_cuda_usable_devices", [&] {
        if (!len || (cap > 0 && !out))
            fail(CP_ERR_INVALID_ARGUMENT, "cp_cuda_usable_devices: NULL argument");
        *len = 0;
#ifdef CP_WITH_CUDA
        const std::vector<int> ids = cuda_usable_devices(nullptr);
        for (size_t i = 0; i < ids.size() && i < cap; i++) out[i] = ids[i];
        *len = ids.size();
#else
        (void)cap;
#endif
    });
}

cp_status cp_cuda_device_info(int32_t cuda_ordinal, cp_device_info *out) {
    return guard("cp_cuda_device_info", [&] {
        if (!out) fail(CP_ERR_INVALID_ARGUMENT, "cp_cuda_device_info: out is NULL");
#ifdef CP_WITH_CUDA
        std::string why;
        const int n = cuda_visible_count(&why);
        if (cuda_ordinal < 0 || cuda_ordinal >= n)
            fail(CP_ERR_DEVICE_INDEX, "cp_cuda_device_info: CUDA device " + std::to_string(cuda_ordinal) +
                                          " is not visible: " + std::to_string(n) + " device(s)" +
                                          (why.empty() ? std::string() : " (" + why + ")"));
        *out = cuda_device_info(cuda_ordinal);
#else
        (void)cuda_ordinal;
        fail(CP_ERR_UNSUPPORTED, "cp_cuda_device_info: this library was built without the cuda feature");
#endif
    });
}

cp_status cp_context_devices(const cp_context *ctx, int32_t *out, size_t cap, size_t *len) {
    return guard("cp_context_devices", [&] {
        if (!ctx || !len || (cap > 0 && !out))
            fail(CP_ERR_INVALID_ARGUMENT, "cp_context_devices: NULL argument");
        for (size_t i = 0; i < ctx->open.size() && i < cap; i++) out[i] = ctx->open[i];
        *len = ctx->open.size();
    });
}

cp_status cp_device_touched(const cp_context *ctx, int32_t ordinal, int32_t *out) {
    return guard("cp_device_touched", [&] {
        if (!ctx || !out) fail(CP_ERR_INVALID_ARGUMENT, "cp_device_touched: NULL argument");
        if (ordinal < 0 || ordinal >= ctx->count())
            fail(CP_ERR_DEVICE_INDEX, "cp_device_touched: device " + std::to_string(ordinal) +
                                          " is out of range: this context has " +
                                          std::to_string(ctx->count()) + " devices");
        *out = 0;
#ifdef CP_WITH_CUDA
        if (ctx->backend == CP_BACKEND_CUDA) {
            *out = cuda_touched(ordinal) ? 1 : 0;
            return;
        }
#endif
        if (ctx->is_open(ordinal))
            *out = ctx->slots[static_cast<size_t>(ordinal)]->dev->touched() ? 1 : 0;
    });
}

cp_status cp_device_memory_estimate(const cp_context *ctx, int32_t ordinal, const cp_key *key,
                                    uint64_t num_constraints, cp_memory_estimate *out) {
    return guard("cp_device_memory_estimate", [&] {
        if (!ctx || !key || !out) fail(CP_ERR_INVALID_ARGUMENT, "cp_device_memory_estimate: NULL argument");
        check_ordinal(ctx, ordinal, "cp_device_memory_estimate");
        if (num_constraints > (uint64_t(1) << MAX_LG_DOMAIN))
            fail(CP_ERR_INVALID_ARGUMENT,
                 "cp_device_memory_estimate: num_constraints " + std::to_string(num_constraints) +
                     " is more than the largest domain, 2^" + std::to_string(MAX_LG_DOMAIN));
        *out = ctx->slots[static_cast<size_t>(ordinal)]->dev->groth16().estimate(key->key, num_constraints);
    });
}

cp_status cp_device_count(const cp_context *ctx, int32_t *out) {
    return guard("cp_device_count", [&] {
        if (!ctx || !out) fail(CP_ERR_INVALID_ARGUMENT, "cp_device_count: NULL argument");
        *out = ctx->count();
    });
}

cp_status cp_device_info_get(const cp_context *ctx, int32_t ordinal, cp_device_info *out) {
    return guard("cp_device_info_get", [&] {
        if (!ctx || !out) fail(CP_ERR_INVALID_ARGUMENT, "cp_device_info_get: NULL argument");
        check_ordinal(ctx, ordinal, "cp_device_info_get");
        *out = ctx->slots[static_cast<size_t>(ordinal)]->dev->info();
        out->ordinal = ordinal;
    });
}

cp_status cp_device_stats_get(const cp_context *ctx, int32_t ordinal, cp_device_stats *out) {
    return guard("cp_device_stats_get", [&] {
        if (!ctx || !out) fail(CP_ERR_INVALID_ARGUMENT, "cp_device_stats_get: NULL argument");
        check_ordinal(ctx, ordinal, "cp_device_stats_get");
        device_slot &s = *ctx->slots[static_cast<size_t>(ordinal)];
        std::memset(out, 0, sizeof *out);
        {
            std::lock_guard<std::mutex> lk(s.state);
            out->proofs = s.proofs;
            out->busy_ns = s.busy_ns;
            out->trims = s.trims;
        }
        // The backend's counters are read without the device mutex so that
        // statistics never wait for a running proof; backends keep them in
        // atomics.
        out->cache_allocations = s.dev->cache_allocations();
        out->cache_bytes = s.dev->cache_bytes();
        out->held_bytes = s.dev->held_bytes();
        const uint64_t limit = s.dev->memory_limit();
        out->limit_bytes = limit == UINT64_MAX ? 0 : limit;
        out->workers = s.dev->workers();
        out->key_uploads = s.dev->groth16().key_uploads();
    });
}

cp_status cp_device_trim(cp_context *ctx, int32_t ordinal, uint64_t *freed_bytes) {
    return guard("cp_device_trim", [&] {
        if (freed_bytes) *freed_bytes = 0;
        if (!ctx) fail(CP_ERR_INVALID_ARGUMENT, "cp_device_trim: ctx is NULL");
        check_ordinal(ctx, ordinal, "cp_device_trim");
        device_slot &s = ctx->slot(ordinal);
        uint64_t freed;
        {
            std::lock_guard<std::mutex> lk(s.own);
            freed = s.dev->trim();
        }
        if (freed > 0) {
            std::lock_guard<std::mutex> lk(s.state);
            s.trims++;
        }
        if (freed_bytes) *freed_bytes = freed;
    });
}

cp_status cp_device_prepare(cp_context *ctx, int32_t ordinal, const cp_key *key,
                            uint64_t num_constraints) {
    return guard("cp_device_prepare", [&] {
        if (!ctx || !key) fail(CP_ERR_INVALID_ARGUMENT, "cp_device_prepare: NULL argument");
        check_ordinal(ctx, ordinal, "cp_device_prepare");
        if (num_constraints == 0)
            fail(CP_ERR_INVALID_ARGUMENT, "cp_device_prepare: num_constraints is 0");
        if (num_constraints > (uint64_t(1) << MAX_LG_DOMAIN))
            fail(CP_ERR_INVALID_ARGUMENT, "cp_device_prepare: num_constraints " +
                                              std::to_string(num_constraints) +
                                              " needs a domain larger than the largest, 2^" +
                                              std::to_string(MAX_LG_DOMAIN));
        device_slot &s = ctx->slot(ordinal);
        std::lock_guard<std::mutex> lk(s.own);
        bind_scope scope(*ctx, ordinal);
        s.dev->groth16().prepare(key->key, num_constraints, nullptr);
    });
}

cp_status cp_select_gpu(cp_context *ctx, int32_t ordinal) {
    return guard("cp_select_gpu", [&] {
        if (!ctx) fail(CP_ERR_INVALID_ARGUMENT, "cp_select_gpu: ctx is NULL");
        if (ordinal < -1 || ordinal >= ctx->count())
            fail(CP_ERR_DEVICE_INDEX, "cp_select_gpu: device " + std::to_string(ordinal) +
                                          " is out of range: this context has " +
                                          std::to_string(ctx->count()) +
                                          " devices (valid: -1 to unbind, 0.." +
                                          std::to_string(ctx->count() - 1) + ")");
        if (ordinal >= 0 && !ctx->is_open(ordinal))
            fail(CP_ERR_DEVICE_INDEX, "cp_select_gpu: device " + std::to_string(ordinal) +
                                          " is not in this context's device set " + ctx->open_list());
        if (ordinal >= 0) ctx->slot(ordinal).dev->bind_thread();
        set_bound_device(ctx->id, ordinal);
    });
}

cp_status cp_current_gpu(const cp_context *ctx, int32_t *out) {
    return guard("cp_current_gpu", [&] {
        if (!ctx || !out) fail(CP_ERR_INVALID_ARGUMENT, "cp_current_gpu: NULL argument");
        int b = bound_device(ctx->id);
        if (b < 0)
            fail(CP_ERR_NO_DEVICE_BOUND, "this thread has no device bound; call cp_select_gpu");
        *out = b;
    });
}

cp_status cp_mutex_new(cp_mutex **out) {
    return guard("cp_mutex_new", [&] {
        if (!out) fail(CP_ERR_INVALID_ARGUMENT, "cp_mutex_new: out is NULL");
        *out = new cp_mutex;
    });
}

void cp_mutex_free(cp_mutex *m) {
    guard_void([&] { delete m; });
}

cp_status cp_inject_fault(cp_context *ctx, int32_t ordinal, int64_t tag) {
    return guard("cp_inject_fault", [&] {
        if (!ctx) fail(CP_ERR_INVALID_ARGUMENT, "cp_inject_fault: ctx is NULL");
        if (ordinal == -1) {
            for (auto &s : ctx->slots) {
                if (!s) continue;
                std::lock_guard<std::mutex> lk(s->state);
                s->faults.clear();
            }
            return;
        }
        check_ordinal(ctx, ordinal, "cp_inject_fault");
        device_slot &s = ctx->slot(ordinal);
        std::lock_guard<std::mutex> lk(s.state);
        s.faults.push_back(tag);
    });
}

cp_status cp_set_device_delay(cp_context *ctx, int32_t ordinal, uint64_t extra_ns) {
    return guard("cp_set_device_delay", [&] {
        if (!ctx) fail(CP_ERR_INVALID_ARGUMENT, "cp_set_device_delay: ctx is NULL");
        check_ordinal(ctx, ordinal, "cp_set_device_delay");
        device_slot &s = ctx->slot(ordinal);
        std::lock_guard<std::mutex> lk(s.state);
        s.delay_ns = extra_ns;
    });
}

cp_status cp_set_device_memory_limit(cp_context *ctx, int32_t ordinal, uint64_t bytes) {
    return guard("cp_set_device_memory_limit", [&] {
        if (!ctx) fail(CP_ERR_INVALID_ARGUMENT, "cp_set_device_memory_limit: ctx is NULL");
        check_ordinal(ctx, ordinal, "cp_set_device_memory_limit");
        ctx->slot(ordinal).dev->set_memory_limit(bytes);
    });
}

cp_status cp_set_stream_sharing(cp_context *ctx, int32_t ordinal, cp_stream_sharing mode) {
    return guard("cp_set_stream_sharing", [&] {
        if (!ctx) fail(CP_ERR_INVALID_ARGUMENT, "cp_set_stream_sharing: ctx is NULL");
        check_ordinal(ctx, ordinal, "cp_set_stream_sharing");
        const int m = static_cast<int>(mode);
        if (m != CP_SHARE_AUTO && m != CP_SHARE_ALWAYS && m != CP_SHARE_NEVER)
            fail(CP_ERR_INVALID_ARGUMENT, "cp_set_stream_sharing: mode " + std::to_string(m) +
                                              " is not CP_SHARE_AUTO (0), CP_SHARE_ALWAYS (1) "
                                              "or CP_SHARE_NEVER (2)");
        ctx->slot(ordinal).dev->set_stream_sharing(mode);
    });
}

cp_status cp_set_device_workers(cp_context *ctx, int32_t ordinal, uint32_t workers) {
    return guard("cp_set_device_workers", [&] {
        if (!ctx) fail(CP_ERR_INVALID_ARGUMENT, "cp_set_device_workers: ctx is NULL");
        check_ordinal(ctx, ordinal, "cp_set_device_workers");
        if (workers == 0 || workers > CP_MAX_DEVICE_WORKERS)
            fail(CP_ERR_INVALID_ARGUMENT, "cp_set_device_workers: " + std::to_string(workers) +
                                              " workers (give 1 to " +
                                              std::to_string(CP_MAX_DEVICE_WORKERS) + ")");
        ctx->slot(ordinal).dev->set_workers(workers);
    });
}

cp_status cp_set_tag_delay(cp_context *ctx, int64_t tag, uint64_t extra_ns) {
    return guard("cp_set_tag_delay", [&] {
        if (!ctx) fail(CP_ERR_INVALID_ARGUMENT, "cp_set_tag_delay: ctx is NULL");
        std::lock_guard<std::mutex> lk(ctx->tag_delay_mu);
        if (extra_ns)
            ctx->tag_delay_ns[tag] = extra_ns;
        else
            ctx->tag_delay_ns.erase(tag);
    });
}

}  // extern "C"
