// Owns: the host buffers a device lends for witnesses (groth16_device::lend_witness
// wraps one in its witness_lease). The orchestration copies a witness into
// a lent buffer before it takes the device's mutex, so the device part
// uploads it from there: for CUDA, pinned host memory, one DMA at full
// speed instead of the staging ring's memcpy under the mutex (chain 2^20
// on an H200: 32 MiB, about 2 ms through the ring). A buffer returns to the
// pool when it ends; idle buffers are reused, freed by release_idle (trim)
// or with the pool. Thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "blst.h"

namespace cp {

class witness_pool;

// One lent buffer: room for num_inputs inputs, then num_aux aux values.
// It must end before the pool that lent it.
class witness_buffer {
public:
    ~witness_buffer();
    witness_buffer(const witness_buffer &) = delete;
    witness_buffer &operator=(const witness_buffer &) = delete;
    blst_fr *inputs() const { return inputs_; }
    blst_fr *aux() const { return aux_; }

private:
    friend class witness_pool;
    witness_buffer(witness_pool &pool, void *p, size_t bytes, size_t num_inputs);
    witness_pool &pool_;
    void *p_;
    size_t bytes_;
    blst_fr *inputs_, *aux_;
};

class witness_pool {
public:
    // alloc returns nullptr when it cannot allocate; the pool then lends
    // nothing and the caller uses the witness where it is. cap_bytes bounds
    // what the pool holds, lent and idle together.
    using alloc_fn = void *(*)(size_t bytes);
    using free_fn = void (*)(void *p);
    witness_pool(alloc_fn alloc, free_fn release, uint64_t cap_bytes);
    ~witness_pool();
    witness_pool(const witness_pool &) = delete;
    witness_pool &operator=(const witness_pool &) = delete;

    // A buffer for one witness, or nullptr when none fits under the cap
    // (or allocation failed): the smallest idle buffer large enough, else
    // a new one, after freeing idle ones too small when the cap needs it.
    std::unique_ptr<witness_buffer> lend(size_t num_inputs, size_t num_aux);
    // Frees the idle buffers; returns their bytes.
    uint64_t release_idle();
    // Bytes held, lent and idle.
    uint64_t held() const;
    // Bytes a witness of this size takes (inputs, aux at a 256-byte boundary).
    static size_t bytes_for(size_t num_inputs, size_t num_aux);

private:
    friend class witness_buffer;
    struct buffer {
        void *p;
        size_t bytes;
    };
    void give_back(void *p, size_t bytes);

    alloc_fn alloc_;
    free_fn free_;
    uint64_t cap_;
    mutable std::mutex mu_;
    std::vector<buffer> idle_;
    uint64_t held_ = 0;
};

}  // namespace cp
