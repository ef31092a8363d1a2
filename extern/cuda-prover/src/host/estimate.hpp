// Owns: the host backend's memory estimate of one proof, shared with the
// orchestration (cp_estimate_memory), and what a streamed proof keeps
// besides its chunk buffers.
#pragma once

#include <cstdint>

#include "backend.hpp"

namespace cp {
namespace host {

// Host working memory for one proof, the proving key's host footprint and
// the least memory of a proof that streams the key (stream_plan.hpp).
cp_memory_estimate estimate(const proving_key &key, uint64_t num_constraints);

// What a streamed proof keeps besides its chunk buffers: the working memory
// and the gathered scalars of A and B.
uint64_t streamed_fixed_bytes(const proving_key &key, uint64_t num_constraints);

// The host's MSMs need no temporaries that grow with a chunk.
inline uint64_t no_temp(uint64_t, uint64_t) { return 0; }

}  // namespace host
}  // namespace cp
