// The front of a phased pass (compact_layout_for), which keeps no shape on
// the device: a, b, c of the shape evaluated on the host's cores a range of
// rows at a time, each range checked (a * b = c) and sent up through the
// staging ring. The host holds three ranges, not three polynomials (at
// 2^27 rows those would be 12 GiB).
#pragma once

#include <cstddef>

#include "backend.hpp"
#include "device/staging.hpp"
#include "gpu_ops.hpp"

namespace cp {
namespace cuda_dev {

// Rows per range: three ranges of 2^21 scalars, 192 MiB of host memory.
constexpr size_t HOST_ROWS_RANGE = size_t(1) << 21;

// Rows [0, sh.num_constraints) of A, B and C at the witness (inputs, aux)
// into d_a, d_b and d_c, queued on the staging ring's copy stream when this
// returns. CP_ERR_UNSATISFIED names the first row with a * b != c; rows
// before it may have been sent.
void stage_host_rows(const gpu_t &gpu, stager &staging, const shape &sh, const blst_fr *inputs,
                     const blst_fr *aux, cp_cuda::fr_raw *d_a, cp_cuda::fr_raw *d_b,
                     cp_cuda::fr_raw *d_c);

}  // namespace cuda_dev
}  // namespace cp
