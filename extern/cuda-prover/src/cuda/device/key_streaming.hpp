// A proving key's bases streamed through a device in chunks, for keys that
// do not fit the memory the device may use (stream_plan.hpp): two device
// buffers, the copy stream of the staging ring and one event per buffer.
// The chunks of a pass's MSMs form one sequence: a helper thread stages
// chunk k+1 into one buffer while the MSM of chunk k runs on the other, also
// across the end of one MSM and the start of the next, and the first chunk
// goes up while the pass's NTTs run. Proofs with the same key may share a
// pass: each chunk goes up once and is summed for each of them (their
// scalars wait in the stream's scalar sets). The partial sums are added on
// the host.
// Each MSM's result is the group element one MSM over all its bases gives,
// so proofs are byte-identical to those of a resident key.
#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>
#include <thread>
#include <vector>

#include "backend.hpp"
#include "device/budget.hpp"
#include "device/raii.hpp"
#include "device/staging.hpp"
#include "stream_plan.hpp"

namespace cp {
namespace cuda_dev {

// Host bases of one MSM: the concatenation of up to two runs (H then L).
struct host_bases {
    const void *run[2] = {nullptr, nullptr};
    size_t n[2] = {0, 0};
    size_t point_bytes = 0;

    size_t total() const { return n[0] + n[1]; }
};

// One proof's sum of a streamed MSM: its scalars on the device, and where
// its sum (a blst_p1 or blst_p2, by the MSM's group) and its time go.
struct stream_sum {
    const cp_cuda::fr_raw *scalars = nullptr;
    void *out = nullptr;
    uint64_t *ns = nullptr;  // adds its share of the time from the previous MSM's end
};

// One MSM of a streamed pass: its bases on the host, the slot of the MSM
// context that sums its chunks, and one sum per proof that shares the pass
// (each chunk goes up once and is summed for each of them).
struct stream_msm {
    host_bases bases;
    cp_cuda::msm_group group = cp_cuda::msm_group::g1;
    size_t slot = 0;
    std::vector<stream_sum> sums;
};

class key_stream {
public:
    // Two buffers of exactly `bytes` each and their events (the thread is
    // bound); `extra_needed` more bytes must stay free for the caller.
    void ensure(int cuda_id, const memory_budget &budget, size_t bytes, size_t extra_needed);
    void release();
    size_t buffer_bytes() const { return buf_[0].size(); }
    // Chunk buffer k (0 or 1), for a phased pass's shape rows before its
    // MSMs (shape_rows.hpp).
    char *buffer(int k) const { return buf_[k].bytes_ptr(); }
    // The MSM scalars of the proofs past the first of a shared pass
    // (exactly `bytes`; none for 0); `extra_needed` more bytes must stay
    // free for the caller.
    void ensure_sets(int cuda_id, const memory_budget &budget, size_t bytes,
                     size_t extra_needed);
    char *sets() const { return sets_.bytes_ptr(); }
    size_t sets_bytes() const { return sets_.size(); }
    // Device bytes held: both buffers and the scalar sets.
    size_t held() const { return buf_[0].size() + buf_[1].size() + sets_.size(); }
    // The last streamed pass's copies and sums (stream_share_pays).
    stream_cost cost;

private:
    friend class streamed_msms;
    device_buffer buf_[2];
    device_buffer sets_;
    cuda_event up_[2];    // chunk k is on the device once up_[k % 2] completes
    cuda_event from_[2];  // recorded before chunk k's copy: its time
};

// The MSMs of one streamed pass. Construction starts sending the first
// chunk up from a helper thread; run() sums every chunk in order; the
// destructor waits for the helper. From construction until run() returns
// (or the object is destroyed) the caller stages nothing else.
class streamed_msms {
public:
    streamed_msms(key_stream &ks, int cuda_id, stager &staging, std::vector<stream_msm> msms,
                  size_t g1_per_chunk, size_t g2_per_chunk);
    ~streamed_msms();
    streamed_msms(const streamed_msms &) = delete;
    streamed_msms &operator=(const streamed_msms &) = delete;

    // Sums the chunks with `msm` (its slots hold a chunk of their group),
    // each MSM's sum into its out; adds the chunks summed to *chunks and
    // sets *cost's times (the copies', one proof's share of the sums').
    void run(cp_cuda::msm_context &msm, uint64_t &chunks, stream_cost &cost);

private:
    key_stream &ks_;
    int cuda_id_;
    stager &staging_;
    std::vector<stream_msm> msms_;
    std::vector<stream_chunk> seq_;
    std::thread next_;  // stages one chunk
    std::exception_ptr failed_;

    void upload(size_t k);  // queues chunk k into buffer k % 2
    void start_upload(size_t k);
    void join_upload();  // rethrows the helper's error
};

}  // namespace cuda_dev
}  // namespace cp
