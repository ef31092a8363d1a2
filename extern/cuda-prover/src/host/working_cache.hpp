// Owns: the reusable buffers of one host device (the three polynomials and
// the domain's twiddles), reused between proofs, grown when needed and
// freed by trim. Guarded by the device's mutex (the orchestration
// serializes device_part and trim); the counters are atomic so statistics
// can be read at any time.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "blst.h"

namespace cp {
namespace host {

struct working_cache {
    std::unique_ptr<blst_fr[]> a, b, c;  // capacity `cap` each
    std::unique_ptr<blst_fr[]> fwd, inv; // twiddle_count(tw_lg) each
    size_t cap = 0;
    size_t tw_cap = 0;
    int tw_lg = -1;  // domain the twiddles are for; -1 none

    std::atomic<uint64_t> bytes{0};
    std::atomic<uint64_t> allocations{0};

    void update_bytes() { bytes = (3 * cap + 2 * tw_cap) * sizeof(blst_fr); }

    // The polynomials and twiddles of a 2^lg domain (the twiddles made on
    // `threads` threads); counts one allocation per call that (re)allocates
    // anything.
    void ensure(uint32_t lg, int threads);

    // Frees everything; returns the bytes freed.
    uint64_t release();
};

}  // namespace host
}  // namespace cp
