// A packed witness (witness_pack.hpp) unpacked on the device: its inputs
// and aux written into a pass's working cache from the packed copy an
// early upload left on the device (witness_lender.hpp).
#pragma once

#include <cuda_runtime.h>

#include "gpu_ops.hpp"
#include "witness_pack.hpp"

namespace cp {
namespace cuda_dev {

// d_inputs[0, L.num_inputs) and d_aux[0, L.num_aux) from the packed
// witness at d_packed (laid out as L), queued on s.
void unpack_witness_async(cudaStream_t s, const void *d_packed, const packed_witness_layout &L,
                          cp_cuda::fr_raw *d_inputs, cp_cuda::fr_raw *d_aux);

}  // namespace cuda_dev
}  // namespace cp
