// What one CUDA device holds on its GPU between proofs: the working cache,
// the resident shape, the staging ring and copy stream, the pass's events.
// Owned by the device (device.cu); everything but the counters is used with
// the device's mutex held.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
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

struct device_state {
    device_state(int ordinal_, int cuda_id_, const cudaDeviceProp &props_)
        : ordinal(ordinal_), cuda_id(cuda_id_), props(props_) {}

    int ordinal;
    int cuda_id;
    cudaDeviceProp props;

    working_cache cache;
    shape_copy shape;     // the resident shape
    stager staging;       // the copy stream and the pinned ring
    key_stream streamer;  // chunk buffers of a streamed key
    cuda_event ev_abc, ev_rest, ev_ab, ev_ntt, ev_h;
    // The MSM engines, streams and result buffers of the pass (msm_context):
    // the four slots of a resident key, or one G1 and one G2 chunk slot of
    // a streamed key. Kept until trim or until other slots are needed.
    std::unique_ptr<cp_cuda::msm_context> msm;
    std::atomic<uint64_t> msm_held{0};  // msm->bytes(), readable without the mutex
    std::vector<uint32_t> pre_host;
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
        return gpu_ || cache.buf || shape.buf || staging.holds_anything() || ev_abc || ev_rest ||
               ev_ab || ev_ntt || ev_h || streamer.held() || msm;
    }

    size_t msm_bytes() const { return msm ? msm->bytes() : 0; }

    // Device bytes an MSM context with these slots still needs (0 when the
    // one held fits them).
    size_t msm_need(const std::vector<cp_cuda::msm_slot_spec> &slots) const {
        return msm && msm->fits(slots)
                   ? 0
                   : cp_cuda::msm_context_bytes(slots, props.multiProcessorCount);
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
    void ensure_msm(const std::vector<cp_cuda::msm_slot_spec> &slots) {
        if (msm && msm->fits(slots))
            return;
        drop_msm();
        msm.reset(new cp_cuda::msm_context(gpu(), slots));
        msm_held = msm->bytes();
    }

    // The streams, events and pinned ring of a pass; the thread is bound.
    void ensure_streams() {
        staging.ensure();
        ev_abc.create();
        ev_rest.create();
        ev_ab.create();
        ev_ntt.create();
        ev_h.create();
    }

private:
    mutable const gpu_t *gpu_ = nullptr;
};

}  // namespace cuda_dev
}  // namespace cp
