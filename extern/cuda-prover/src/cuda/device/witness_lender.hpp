// The witness buffers a CUDA device lends (device::lend_witness): pinned
// host memory from a witness_pool, and, where room allows, the upload
// itself started before the device's mutex. Once the orchestration has
// filled a buffer, its lease copies the whole witness (one DMA) into device
// memory of its own, on a stream of its own, while another proof holds the
// device; the Groth16 pass then only copies it on the device into the
// working cache (32 MiB in about 0.03 ms, where the upload took 0.6 ms from
// pinned memory and 1.6-2.4 ms through the staging ring at chain 2^20).
// The early copies come from a memory pool of their own (not the device's
// default pool, whose high-water mark measures a pass), at most
// EARLY_UPLOAD_BYTES per device, and only without a memory limit (a limit
// bounds what the context may use; these would come on top of it).
// A witness of PACK_MIN_AUX aux values or more whose values are mostly 0
// and 1 goes packed (witness_pack.hpp) where an early copy of it fits:
// the lease packs it into pinned memory, the early copy takes the packed
// bytes, and the pass unpacks them on the device (witness_unpack.hpp). A
// 32 GiB C2 partition: about 290 MB up instead of 4.2 GB (75 ms from
// pinned memory on an H200, under the device's mutex).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>

#include <cuda_runtime.h>

#include "backend.hpp"
#include "device/raii.hpp"
#include "witness_pack.hpp"
#include "witness_pool.hpp"

namespace cp {
namespace cuda_dev {

// Pinned memory a device lends at most (lent and idle); a larger witness
// goes up through the staging ring.
constexpr uint64_t PINNED_WITNESS_POOL_BYTES = uint64_t(4) << 30;
// Device memory the early uploads of one device hold at most at once.
constexpr uint64_t EARLY_UPLOAD_BYTES = uint64_t(1) << 30;
// The least aux values a witness is packed for (below, its upload takes
// under a millisecond either way).
constexpr size_t PACK_MIN_AUX = size_t(1) << 16;
// warm readies no buffer of the whole witness above this size for one that
// may go packed.
constexpr uint64_t PACKED_WARM_LIMIT = uint64_t(256) << 20;

// What a lease started (circuit_job::early_upload): the witness in device
// memory, complete once `done` fires: laid out as the lent buffer (inputs,
// then aux at witness_pool::bytes_for(num_inputs, 0)), or packed
// (`packed` set: at d_packed, laid out as *packed).
struct early_upload {
    const void *d_inputs = nullptr;
    const void *d_aux = nullptr;
    const void *d_packed = nullptr;
    const packed_witness_layout *packed = nullptr;
    cudaEvent_t done = nullptr;
};

class witness_lender {
public:
    explicit witness_lender(int cuda_id);
    ~witness_lender();
    witness_lender(const witness_lender &) = delete;
    witness_lender &operator=(const witness_lender &) = delete;

    // A lease for one witness, or nullptr (the pinned pool is full or cannot
    // pin more). `early`: whether its upload may start before the mutex
    // (the device has no memory limit). A witness that may go packed gets
    // a lease whose buffer is chosen when it is filled. The thread is bound
    // to the device.
    std::unique_ptr<witness_lease> lend(size_t num_inputs, size_t num_aux, bool early);
    // Readies `count` buffers for witnesses of this size, and their early
    // uploads' memory when `early`, as that many proofs in flight would
    // (pinning and the pool's first allocations take tens of ms: a cold
    // first proof of chain 2^20 took 63.5 ms on the device against 49, and
    // four cold bits 2^20 proofs delayed the first end by about 45 ms).
    // Within the caps; the thread is bound.
    void warm(size_t num_inputs, size_t num_aux, unsigned count, bool early);
    // Frees idle pinned buffers and the early pool's cached memory; the
    // thread is bound. Returns nothing: host memory, and device memory
    // outside the working cache.
    void trim();
    // Whether it holds anything that needs the device to free.
    bool holds_anything() const;

private:
    friend class cuda_witness_lease;
    // The stream and pool of early uploads, made on first use.
    bool ensure_early();
    bool reserve(uint64_t bytes);
    void unreserve(uint64_t bytes) { early_bytes_ -= bytes; }

    int cuda_id_;
    witness_pool pinned_;
    std::mutex mu_;
    cuda_stream stream_;
    cudaMemPool_t pool_ = nullptr;
    bool early_failed_ = false;
    std::atomic<uint64_t> early_bytes_{0};
    // The aux count of the last witness whose packing did not pay.
    std::atomic<size_t> dense_aux_{0};
};

}  // namespace cuda_dev
}  // namespace cp
