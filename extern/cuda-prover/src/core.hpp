// Owns: the definitions of the opaque ABI handles (cp_context, cp_key,
// cp_mutex, cp_shape, cp_pending) and the per-thread device binding, shared by
// context/*.cpp, key/*.cpp, shape.cpp, dispatch/*.cpp and groth16/*.cpp.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backend.hpp"
#include "share_queue.hpp"

static_assert(sizeof(cp_fr) == sizeof(blst_fr), "cp_fr must be blst_fr");
static_assert(sizeof(cp_g1_affine) == sizeof(blst_p1_affine), "cp_g1_affine must be blst_p1_affine");
static_assert(sizeof(cp_g2_affine) == sizeof(blst_p2_affine), "cp_g2_affine must be blst_p2_affine");

namespace cp {

// The context's state for one device.
struct device_slot {
    std::unique_ptr<device> dev;
    std::mutex own;  // the device's own mutex (callers passing NULL)

    std::mutex state;  // guards the fields below
    uint64_t proofs = 0;
    uint64_t busy_ns = 0;
    uint64_t trims = 0;
    std::vector<int64_t> faults;  // pending one-shot faults (tags; -1 any)
    uint64_t delay_ns = 0;

    share_queue joins;  // items that may share a pass (dispatch_share)
};

// The device bound to the calling thread for context `ctx_id`, or -1.
int bound_device(uint64_t ctx_id);
// Records (ordinal >= 0) or clears (ordinal < 0) the calling thread's binding.
void set_bound_device(uint64_t ctx_id, int ordinal);

}  // namespace cp

struct cp_context;

namespace cp {

// Fails with CP_ERR_DEVICE_INDEX unless `ordinal` is an open device of ctx.
void check_ordinal(const cp_context *ctx, int32_t ordinal, const char *where);

}  // namespace cp

struct cp_context {
    uint64_t id = 0;  // unique per context, keys the thread-local bindings
    int32_t backend = CP_BACKEND_HOST;
    int threads = 1;
    // One entry per ordinal of the backend (CUDA: every visible device);
    // null for a device outside the context's device set (closed).
    std::vector<std::unique_ptr<cp::device_slot>> slots;
    std::vector<int> open;  // the open ordinals, ascending

    // Test hook: extra device time for circuits by tag (cp_set_tag_delay).
    std::mutex tag_delay_mu;
    std::map<int64_t, uint64_t> tag_delay_ns;

    int count() const { return static_cast<int>(slots.size()); }
    bool is_open(int ordinal) const {
        return ordinal >= 0 && ordinal < count() && slots[static_cast<size_t>(ordinal)] != nullptr;
    }
    // An open device (callers check with check_ordinal or route first).
    cp::device_slot &slot(int ordinal) { return *slots[static_cast<size_t>(ordinal)]; }
    // "{1,3}": the open ordinals, for messages.
    std::string open_list() const {
        std::string s;
        for (int o : open) s += (s.empty() ? "" : ",") + std::to_string(o);
        return "{" + s + "}";
    }
};

struct cp_mutex {
    std::mutex m;
};

struct cp_key {
    cp::proving_key key;
};

struct cp_shape {
    cp::shape sh;
};

struct cp_pending {
    struct entry {
        cp::device_partials parts;
        blst_fr r, s;
        int32_t device = -1;
        cp_timings timings{};
    };
    std::vector<entry> entries;
    // Copies of the verifying-key points the epilogue needs.
    blst_p1_affine alpha_g1, beta_g1, delta_g1;
    blst_p2_affine beta_g2, delta_g2;
};
