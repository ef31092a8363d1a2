// Owns: batches of curve points on the host backend's simulated device (the
// seam's generator_multiples and first_outside_subgroup): blst's scalar
// multiplication of the generators and blst's subgroup tests, on the
// device's threads. Slow beside a GPU (a full scalar multiplication per
// point); what the CUDA device's kernels are checked against.
#pragma once

#include <cstddef>

#include "blst.h"

namespace cp {
namespace host {

void generator_multiples(bool g2, const blst_fr *scalars, size_t n, void *out, int threads);
size_t first_outside_subgroup(bool g2, const void *points, size_t n, int threads);

}  // namespace host
}  // namespace cp
