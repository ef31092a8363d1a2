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
#include "device/pass_lane.hpp"
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

    static constexpr unsigned LANES = 2;

    int ordinal;
    int cuda_id;
    cudaDeviceProp props;

    shape_copy shape;     // the resident shape
    stager staging;       // the copy stream and the pinned ring
    key_stream streamer;  // chunk buffers of a streamed key
    // Lane 0 serves every pass; lane 1 only where memory allows (it is
    // opened after a pass on lane 0, groth16_pass_finish.cu), in turn with lane 0.
    pass_lane lanes[LANES];
    unsigned next_lane = 0;  // the lane after the last one started (device mutex)
    size_t warmed_m = 0;        // largest domain warm_up or a pass ran for since the last trim
    // Shapes whose evaluation warm_up or a pass ran since the last trim,
    // every one (not the last only): a daemon that proves a 32 GiB C2 and
    // WinningPoSts in turn warmed up again for the C2 after each of the
    // others, a synthetic 2^27 pass of about 20 s before the C2 began.
    std::vector<uint64_t> warmed_shapes;
    bool shape_warmed(uint64_t id) const {
        for (uint64_t w : warmed_shapes)
            if (w == id)
                return true;
        return false;
    }
    void note_shape_warmed(uint64_t id) {
        if (!shape_warmed(id))
            warmed_shapes.push_back(id);
    }
    std::atomic<uint64_t> key_uploads{0};
    // What sppark keeps in the device's default pool for the process's
    // lifetime (its NTT twiddle tables, about 36 MiB), measured once
    // (know_library_bytes, key_placement.hpp) and counted against the
    // memory limit.
    mutable std::atomic<uint64_t> library_bytes{0};
    mutable std::once_flag library_once;
    // Device bytes of the shape and a streamed key's buffers as the last
    // placement or trim left them, for readers without the device's mutex
    // (cp_device_stats::held_bytes); note_placed() where they change.
    std::atomic<uint64_t> placed_bytes{0};
    void note_placed() { placed_bytes = shape.bytes() + streamer.held(); }

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
