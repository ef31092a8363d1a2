// Owns: which device a thread is bound to in a context (cp_select_gpu,
// cp_current_gpu: a thread_local list of (context id, ordinal)), and the
// caller's per-device mutex (cp_mutex).
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core.hpp"
#include "status.hpp"

namespace cp {
namespace {

thread_local std::vector<std::pair<uint64_t, int>> t_bindings;

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

}  // namespace cp

using namespace cp;

extern "C" {

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

}  // extern "C"
