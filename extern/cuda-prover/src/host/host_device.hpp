// Owns: the host backend's helpers shared with the orchestration (memory
// estimate of one proof on the host).
#pragma once

#include <cstdint>

#include "backend.hpp"

namespace cp {
namespace host {

// Host working memory for one proof and the proving key's host footprint.
cp_memory_estimate estimate(const srs &key, uint64_t num_constraints);

}  // namespace host
}  // namespace cp
