// Owns: contexts and their devices (cp_context_new, cp_context_free, the
// device set and the backend's name), and check_ordinal, what every call
// naming a device checks first. Each context gets its id from a
// process-wide counter, so that a freed context's stale thread bindings
// (threads.cpp) never match a new context allocated at the same address.
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core.hpp"
#include "dispatch.hpp"
#include "parallel.hpp"
#include "status.hpp"

namespace cp {
namespace {

constexpr int MAX_HOST_DEVICES = 64;

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

void check_ordinal(const cp_context *ctx, int32_t ordinal, const char *where) {
    if (ordinal < 0 || ordinal >= ctx->count())
        fail(CP_ERR_DEVICE_INDEX, std::string(where) + ": device " + std::to_string(ordinal) +
                                      " is out of range: this context has " +
                                      std::to_string(ctx->count()) + " devices");
    if (!ctx->is_open(ordinal))
        fail(CP_ERR_DEVICE_INDEX, std::string(where) + ": device " + std::to_string(ordinal) +
                                      " is not in this context's device set " + ctx->open_list());
}

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

cp_status cp_context_devices(const cp_context *ctx, int32_t *out, size_t cap, size_t *len) {
    return guard("cp_context_devices", [&] {
        if (!ctx || !len || (cap > 0 && !out))
            fail(CP_ERR_INVALID_ARGUMENT, "cp_context_devices: NULL argument");
        for (size_t i = 0; i < ctx->open.size() && i < cap; i++) out[i] = ctx->open[i];
        *len = ctx->open.size();
    });
}

cp_status cp_device_count(const cp_context *ctx, int32_t *out) {
    return guard("cp_device_count", [&] {
        if (!ctx || !out) fail(CP_ERR_INVALID_ARGUMENT, "cp_device_count: NULL argument");
        *out = ctx->count();
    });
}

}  // extern "C"
