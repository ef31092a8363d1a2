// A proving key's bases streamed through a device in chunks, for keys that
// do not fit the memory the device may use (stream_plan.hpp): two device
// buffers, the copy stream of the staging ring and one event per buffer.
// A helper thread stages chunk k+1 into one buffer while the MSM of chunk k
// runs on the other; the partial sums are added on the host. The result is
// the group element one MSM over all bases gives, so proofs are
// byte-identical to those of a resident key.
#pragma once

#include <cstddef>
#include <cstdint>

#include "backend.hpp"
#include "device/budget.hpp"
#include "device/raii.hpp"
#include "device/staging.hpp"

namespace cp {
namespace cuda_dev {

// Host bases of one MSM: the concatenation of up to two runs (H then L).
struct host_bases {
    const void *run[2] = {nullptr, nullptr};
    size_t n[2] = {0, 0};
    size_t point_bytes = 0;

    size_t total() const { return n[0] + n[1]; }
};

class key_stream {
public:
    // Two buffers of exactly `bytes` each and their events (the thread is
    // bound); `extra_needed` more bytes must stay free for the caller.
    void ensure(int cuda_id, const memory_budget &budget, size_t bytes, size_t extra_needed);
    void release();
    size_t buffer_bytes() const { return buf_[0].size(); }
    // Device bytes held: both buffers.
    size_t held() const { return buf_[0].size() + buf_[1].size(); }

    // sum d_scalars[i] * bases[i] with the bases sent up `per_chunk` at a
    // time through `staging`; adds the chunks to *chunks.
    void msm_g1(const gpu_t &gpu, int cuda_id, stager &staging, const host_bases &bases,
                const cp_cuda::fr_raw *d_scalars, size_t per_chunk, blst_p1 &out,
                uint64_t &chunks);
    void msm_g2(const gpu_t &gpu, int cuda_id, stager &staging, const host_bases &bases,
                const cp_cuda::fr_raw *d_scalars, size_t per_chunk, blst_p2 &out,
                uint64_t &chunks);

private:
    device_buffer buf_[2];
    cuda_event up_[2];  // chunk k is on the device once up_[k % 2] completes

    template <class Proj, class Msm, class Add>
    void run(const gpu_t &gpu, int cuda_id, stager &staging, const host_bases &bases,
             const cp_cuda::fr_raw *d_scalars, size_t per_chunk, Proj &out, uint64_t &chunks,
             Msm msm, Add add);
};

}  // namespace cuda_dev
}  // namespace cp
