// What one CUDA device holds on its GPU between proofs: the working cache,
// the resident shape, the staging ring and copy stream, the pass's events.
// Owned by the device (device.cu); everything but the counters is used with
// the device's mutex held.
#pragma once

#include <atomic>
#include <cstdint>
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
    cuda_event ev_abc, ev_rest;
    std::vector<uint32_t> pre_host;
    size_t warmed_m = 0;        // largest domain warm_up ran for since the last trim
    uint64_t warmed_shape = 0;  // shape whose evaluation warm_up ran
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
               streamer.held();
    }

    // The streams, events and pinned ring of a pass; the thread is bound.
    void ensure_streams() {
        staging.ensure();
        ev_abc.create();
        ev_rest.create();
    }

private:
    mutable const gpu_t *gpu_ = nullptr;
};

}  // namespace cuda_dev
}  // namespace cp
