// Owns: the GKR handles (cp_sumcheck, cp_tower) and what they share: the
// device they were routed to, the caller's mutex and tag, and running one
// call's device work through the dispatcher; the checked conversions
// between cp_bb4 (canonical) and bb::ext (Montgomery).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core.hpp"
#include "gkr/kernels.hpp"

namespace cp {
namespace gkr {

// Where a handle's calls run.
struct site {
    cp_context *ctx = nullptr;
    int ordinal = -1;
    cp_mutex *mutex = nullptr;
    int64_t tag = -1;
    std::string name;  // "sumcheck (tag 3)", for errors

    // Resolves gpu_index to one device (CP_GPU_AUTO: the first open one).
    static site route_one(cp_context *ctx, int32_t gpu_index, cp_mutex *mutex, int64_t tag,
                          const char *what, const char *where);

    // Runs f on the device's kernels through the dispatcher (binding,
    // mutexes, faults and delays by tag, statistics, error prefix).
    void run(const std::function<void(kernels &)> &f) const;

    // Frees buffers with the mutexes held, outside the dispatcher (no
    // faults, no statistics); never throws.
    void release(const std::vector<buf_id> &bufs) const noexcept;
};

// Canonical -> Montgomery, CP_ERR_INVALID_ARGUMENT naming `what` and the
// index for a coefficient >= p.
bb::ext from_abi(const cp_bb4 &v, const std::string &what, size_t index);
// The same for n values on `threads` threads; the error names the first
// bad index.
void from_abi(const cp_bb4 *v, size_t n, bb::ext *out, const std::string &what, int threads = 1);
cp_bb4 to_abi(const bb::ext &v);

}  // namespace gkr
}  // namespace cp

struct cp_sumcheck {
    cp::gkr::site where;
    std::vector<cp::gkr::view> tables;
    std::vector<cp::gkr::buf_id> owned;  // buffers freed with the handle
    uint32_t vars_left = 0;
};

struct cp_tower {
    cp::gkr::site where;
    int32_t kind = CP_TOWER_PRODUCT;
    uint32_t log_size = 0;
    // One buffer per tree (p, and q for a fraction tree) holding every
    // layer: layer i (2^i entries) from offset 2^i - 1.
    std::vector<cp::gkr::buf_id> owned;
    // layers[i]: layer i as views: [p] or [p, q].
    std::vector<std::vector<cp::gkr::view>> layers;
    std::vector<bool> consumed;  // layer i + 1 reduced (folded) already
    cp_tower_build_times times = {0, 0};
};
