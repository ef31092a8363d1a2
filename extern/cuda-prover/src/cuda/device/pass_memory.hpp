// What a Groth16 pass measures of the device's memory: the bytes the
// device holds plus the default pool's high-water mark since the pass
// began (the MSM contexts, sppark's tables and any temporaries come from
// that pool), recorded into the proof's timings next to the estimate; and
// CP_TRACE_MEMORY's report of it part by part.
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

#include "cuda_prover/groth16/prove.h"
#include "device/state.hpp"

namespace cp {
namespace cuda_dev {

// CP_TRACE_MEMORY (diagnostics): what the device holds at `where`, part
// by part, next to the default pool's use and the card's (stderr).
void trace_memory(const device_state &d, const char *where);

// The memory a pass measured: what the device held, plus the default
// pool's high-water mark since the pass reset it.
struct peak_probe {
    cudaMemPool_t pool = nullptr;
    uint64_t held = 0, estimated = 0;

    // Into t's peak_device_bytes and estimated_device_bytes (the larger
    // of theirs and this one's).
    void record(cp_timings &t) const;
};

}  // namespace cuda_dev
}  // namespace cp
