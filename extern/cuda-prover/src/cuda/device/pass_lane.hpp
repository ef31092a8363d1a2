// What one Groth16 pass uses alone while it is in flight (pass_lane): a
// device (state.hpp) has one or two, and which one a pass takes is
// lanes.hpp's choice.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "device/raii.hpp"
#include "device/working_cache.hpp"
#include "gpu_ops.hpp"

namespace cp {
namespace cuda_dev {

// What one pass uses alone from its start until its results are read: the
// working cache, the MSM context (engines, streams, result buffers) and the
// pass's events. Its mutex is held that long (a pass's tail holds it after
// the device's mutex is released), so a device with two lanes starts the
// next proof's evaluation and NTTs while the MSMs of the one before finish.
struct pass_lane {
    std::mutex mu;
    working_cache cache;
    cuda_event ev_abc, ev_rest, ev_ab, ev_ntt, ev_h;
    // The MSM engines, streams and result buffers of the pass (msm_context):
    // the four slots of a resident key, or one G1 and one G2 chunk slot of
    // a streamed key. Kept until trim or until other slots are needed.
    std::unique_ptr<cp_cuda::msm_context> msm;
    std::atomic<uint64_t> msm_held{0};  // msm->bytes(), readable without the mutex
    std::vector<uint32_t> pre_host;

    bool holds_anything() const {
        return cache.buf || ev_abc || ev_rest || ev_ab || ev_ntt || ev_h || msm;
    }

    size_t msm_bytes() const { return msm ? msm->bytes() : 0; }

    // Device bytes held: the cache and the MSM context.
    uint64_t bytes() const { return cache.bytes.load() + msm_held.load(); }

    // Device bytes an MSM context with these slots still needs (0 when the
    // one held fits them).
    size_t msm_need(const std::vector<cp_cuda::msm_slot_spec> &slots, int sm_count) const {
        return msm && msm->fits(slots) ? 0 : cp_cuda::msm_context_bytes(slots, sm_count);
    }

    // Whether a pass of cache layout `working` bytes and these MSM slots
    // finds everything in place.
    bool ready_for(size_t working, const std::vector<cp_cuda::msm_slot_spec> &slots) const {
        return cache.bytes.load() >= working && msm && msm->fits(slots) && ev_h;
    }

    // Gives back a held context that does not fit these slots.
    void drop_msm_unless(const std::vector<cp_cuda::msm_slot_spec> &slots) {
        if (msm && !msm->fits(slots))
            drop_msm();
    }

    void drop_msm() {
        msm.reset();
        msm_held = 0;
    }

    // Holds a context for these slots (the thread is bound).
    void ensure_msm(const gpu_t &gpu, const std::vector<cp_cuda::msm_slot_spec> &slots) {
        if (msm && msm->fits(slots))
            return;
        drop_msm();
        msm.reset(new cp_cuda::msm_context(gpu, slots));
        msm_held = msm->bytes();
    }

    void ensure_events() {
        ev_abc.create();
        ev_rest.create();
        ev_ab.create();
        ev_ntt.create();
        ev_h.create();
    }

    // Frees the cache and the MSM context (the thread is bound); returns the
    // bytes released.
    uint64_t release() {
        const uint64_t freed = msm_bytes();
        drop_msm();
        return freed + cache.release();
    }
};

}  // namespace cuda_dev
}  // namespace cp
