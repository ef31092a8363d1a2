// What one CUDA device holds on its GPU between proofs: the resident shape,
// the staging ring and copy stream, a streamed key's chunk buffers, and one
// or two pass lanes (pass_lane). Owned by the device (device.cu); the shared
// parts are used with the device's mutex held, a lane with its own mutex.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include <cuda_runtime.h>

#include "device/key_streaming.hpp"
#include "device/raii.hpp"
#include "device/shape_residency.hpp"
#include "device/staging.hpp"
#include "device/working_cache.hpp"
#include "registry.hpp"

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

struct device_state {
    device_state(int ordinal_, int cuda_id_, const cudaDeviceProp &props_)
        : ordinal(ordinal_), cuda_id(cuda_id_), props(props_) {}

    static constexpr unsigned LANES = 2;

    int ordinal;
    int cuda_id;
    cudaDeviceProp props;

    shape_copy shape;     // the resident shape
    stager staging;       // the copy stream and the pinned ring
    key_stream streamer;  // chunk buffers of a streamed key
    // Lane 0 serves every pass; lane 1 only where memory allows (it is
    // opened after a pass on lane 0, groth16_pass.cu), in turn with lane 0.
    pass_lane lanes[LANES];
    unsigned next_lane = 0;  // the lane after the last one started (device mutex)
    size_t warmed_m = 0;        // largest domain warm_up or a pass ran for since the last trim
    uint64_t warmed_shape = 0;  // shape whose evaluation warm_up or a pass ran
    std::atomic<uint64_t> srs_uploads{0};

    // The device's gpu_t (sppark's streams and pool), built the first time
    // (the thread is bound).
    const gpu_t &gpu() const {
        if (!gpu_)
            gpu_ = &cp_cuda::gpu_of(cuda_id);
        return *gpu_;
    }
    cudaStream_t stream() const { return (cudaStream_t)gpu(); }

    // Whether this device allocated or created anything on its GPU.
    bool holds_anything() const {
        bool lanes_hold = false;
        for (const auto &l : lanes)
            lanes_hold = lanes_hold || l.holds_anything();
        return gpu_ || shape.buf || staging.holds_anything() || streamer.held() || lanes_hold;
    }

    // Device bytes the lanes hold, all of them or all but `but`.
    uint64_t lanes_bytes(const pass_lane *but = nullptr) const {
        uint64_t b = 0;
        for (const auto &l : lanes)
            if (&l != but)
                b += l.bytes();
        return b;
    }

    // Device bytes of the lanes' working caches (their MSM contexts come
    // from the default pool, which a pass measures on its own).
    uint64_t caches_bytes() const {
        uint64_t b = 0;
        for (const auto &l : lanes)
            b += l.cache.bytes.load();
        return b;
    }

    // Waits for the passes in flight on every lane: the locks are held by
    // the caller until it lets them go (with the device's mutex held, no
    // new pass starts meanwhile).
    std::vector<std::unique_lock<std::mutex>> quiesce() {
        std::vector<std::unique_lock<std::mutex>> held;
        for (auto &l : lanes)
            held.emplace_back(l.mu);
        return held;
    }

    // The streams and pinned ring of a pass; the thread is bound.
    void ensure_streams(pass_lane &l) {
        staging.ensure();
        l.ensure_events();
    }

private:
    mutable const gpu_t *gpu_ = nullptr;
};

}  // namespace cuda_dev
}  // namespace cp
