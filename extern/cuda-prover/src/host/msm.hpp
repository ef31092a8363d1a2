// Owns: host multi-scalar multiplication over G1 and G2 with blst's
// Pippenger, split across threads, with the bit-heavy fast path: scalars 0
// are skipped, scalars 1 are summed with plain (batch) additions.
#pragma once

#include <cstddef>
#include <cstdint>

#include "blst.h"

namespace cp {
namespace host {

// sum_k scalars[i_k] * points[k] where i_k runs over the indices in
// [0, nscalars) whose bit is set in `density` (every index when density is
// NULL). The number of points must be the number of selected indices; the
// caller checks that. *batch_add_ns (may be NULL) is increased by the time
// spent summing points whose scalar is 1 (the slowest thread's share).
blst_p1 msm_g1(const blst_p1_affine *points, const blst_fr *scalars, size_t nscalars,
               const uint64_t *density, int threads, uint64_t *batch_add_ns);
blst_p2 msm_g2(const blst_p2_affine *points, const blst_fr *scalars, size_t nscalars,
               const uint64_t *density, int threads, uint64_t *batch_add_ns);

}  // namespace host
}  // namespace cp
