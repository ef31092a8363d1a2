// Owns: testing.h's entry points on a context: injected faults, a
// device's or a tag's delay, and the tuning knobs (memory limit, stream
// sharing, workers a device).
#include <mutex>
#include <string>

#include "core.hpp"
#include "status.hpp"

using namespace cp;

extern "C" {

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
