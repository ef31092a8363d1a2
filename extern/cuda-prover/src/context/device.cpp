// Owns: the calls on one device of a context: whether the backend touched
// it, its info and statistics, its memory estimate for a key, readying it
// for a key (cp_device_prepare) and trimming what it holds.
#include <cstring>
#include <mutex>
#include <string>

#include "core.hpp"
#include "dispatch.hpp"
#include "field.hpp"
#include "status.hpp"

using namespace cp;

extern "C" {

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

}  // extern "C"
