// Owns: where a call's items run: gpu_index resolved to the context's open
// devices (an ordinal, CP_GPU_AUTO or CP_GPU_BOUND, with the errors a
// caller sees for the others), and a thread's binding to one of them for a
// scope.
#include <algorithm>
#include <string>

#include "dispatch.hpp"

namespace cp {

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

}  // namespace cp
