// The seam between the shared orchestration (routing, locks, checks, host
// epilogue) and a backend that runs the device part of a proof on one device:
// the device (what every family shares) here, each family's part in its own
// header (groth16_device.hpp; gkr/kernels.hpp).
//
// The orchestration owns: gpu_index routing, the per-device mutex, shape and
// satisfaction checks, fault injection, statistics, the epilogue, and
// copying a witness into the buffer a device lends before taking its mutex.
// A backend owns: binding a thread to its device, the H polynomial (NTTs),
// the five MSMs, its per-device working cache, its per-device key copies
// and the witness buffers it lends (with what their upload starts early).
#pragma once

#include <atomic>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "blst.h"
#include "cuda_prover.h"
#include "error.hpp"
#include "groth16_device.hpp"

namespace cp {

namespace gkr {
class kernels;
}

// One device of a context: what every proof family shares (binding a
// thread, its info, memory limit, working cache and trim), and each
// family's part of it (groth16(), gkr()). The orchestration serializes
// device parts with the device's mutex; trim and cache queries are called
// under it too.
class device {
public:
    virtual ~device() = default;

    // A cap on the memory this device may use (cp_set_device_memory_limit);
    // backends report and check free memory as at most this.
    void set_memory_limit(uint64_t bytes) { memory_limit_ = bytes ? bytes : UINT64_MAX; }
    uint64_t memory_limit() const { return memory_limit_.load(); }

    // When proofs share streamed passes (cp_set_stream_sharing).
    void set_stream_sharing(cp_stream_sharing mode) { sharing_ = static_cast<int>(mode); }
    cp_stream_sharing stream_sharing() const {
        return static_cast<cp_stream_sharing>(sharing_.load());
    }

    // How many callers run device parts here at once (cp_set_device_workers;
    // at least 1).
    void set_workers(unsigned n) { workers_ = n ? n : 1; }
    unsigned workers() const { return workers_.load(); }

    // Makes the calling thread run on this device (cudaSetDevice for CUDA).
    virtual void bind_thread() = 0;

    // Whether the core bound a thread to this device, allocated on it or
    // created a context on it (cp_device_touched).
    virtual bool touched() const = 0;

    virtual cp_device_info info() const = 0;

    // Frees the working cache (the GKR buffers too) and any shape copy;
    // returns the bytes released.
    virtual uint64_t trim() = 0;

    // The device's part of each proof family, one interface each: Groth16
    // (groth16_device.hpp) and GKR (gkr/kernels.hpp: its kernels and
    // buffers). Called with the thread bound; their work with the device's
    // own mutex held, as each says.
    virtual groth16_device &groth16() = 0;
    virtual gkr::kernels &gkr() = 0;

    virtual uint64_t cache_bytes() const = 0;
    // What trim gives back (cp_device_stats::held_bytes).
    virtual uint64_t held_bytes() const = 0;
    virtual uint64_t cache_allocations() const = 0;

private:
    std::atomic<uint64_t> memory_limit_{UINT64_MAX};
    std::atomic<int> sharing_{CP_SHARE_AUTO};
    std::atomic<unsigned> workers_{1};
};

// Backend factories.
// The host backend's simulated device `ordinal`.
std::unique_ptr<device> host_device(int ordinal, int threads);

#ifdef CP_WITH_CUDA
// None of these creates a CUDA context.
// Visible CUDA devices (the CUDA context's ordinal space), 0 when there is
// no GPU or driver (why in *why).
int cuda_visible_count(std::string *why);
// Usable CUDA devices (compute capability >= 7.0, cooperative launch),
// ascending; *why says why some or all visible ones are left out.
std::vector<int> cuda_usable_devices(std::string *why);
int cuda_device_count(std::string *why);
// Name, compute capability and total memory of a visible device.
cp_device_info cuda_device_info(int cuda_id);
// Claims `ids` (validated CUDA ordinals; empty = every device the process
// may use) for a new context and returns the ordinals it opens; fails with
// CP_ERR_DEVICE_INDEX when one lies outside the process's device set.
std::vector<int> cuda_claim(std::vector<int> ids);
// The device of a claimed CUDA ordinal; nothing happens on the GPU until it
// is used.
std::unique_ptr<device> cuda_device_for(int cuda_id);
// Whether the core touched CUDA device `cuda_id` (any context) or it holds
// an active primary context.
bool cuda_touched(int cuda_id);
#endif

}  // namespace cp
