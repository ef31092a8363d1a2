// A packed witness unpacked on the device (witness_unpack.hpp).
#include "device/witness_unpack.hpp"

#include <algorithm>
#include <cstring>

#include "device/errors.hpp"
#include "field.hpp"

namespace cp {
namespace cuda_dev {

using namespace cp_cuda;

namespace {

// aux[i] for i < n: the next of `values` where the other bit is set (its
// word's prefix plus the set bits below it), 1 where the one bit is, else
// 0. One thread a value: the writes are coalesced, the reads of values
// follow them in order.
__global__ void unpack_aux(fr_raw *aux, const uint64_t *ones, const uint64_t *others,
                           const uint32_t *pre, const fr_raw *values, fr_raw one, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        const size_t w = i / 64;
        const unsigned k = (unsigned)(i % 64);
        const uint64_t x = others[w];
        fr_raw v;
        if ((x >> k) & 1) {
            const uint64_t below = k ? (x & ((uint64_t(1) << k) - 1)) : 0;
            v = values[pre[w] + __popcll(below)];
        } else if ((ones[w] >> k) & 1) {
            v = one;
        } else {
            v = fr_raw{{0, 0, 0, 0}};
        }
        aux[i] = v;
    }
}

}  // namespace

void unpack_witness_async(cudaStream_t s, const void *d_packed, const packed_witness_layout &L,
                          fr_raw *d_inputs, fr_raw *d_aux) {
    const char *base = static_cast<const char *>(d_packed);
    if (L.num_inputs)
        cuda_check(cudaMemcpyAsync(d_inputs, base + L.inputs_at, L.num_inputs * sizeof(fr_raw),
                                   cudaMemcpyDeviceToDevice, s),
                   "copy of the packed witness's inputs");
    if (L.num_aux == 0)
        return;
    fr_raw one;
    static_assert(sizeof(one) == sizeof(blst_fr), "fr_raw is a blst_fr");
    std::memcpy(&one, &fr_one(), sizeof one);
    const unsigned blocks = (unsigned)std::min<size_t>((L.num_aux + 255) / 256, 8192);
    unpack_aux<<<blocks, 256, 0, s>>>(d_aux, (const uint64_t *)(base + L.one_bits_at),
                                      (const uint64_t *)(base + L.other_bits_at),
                                      (const uint32_t *)(base + L.pre_at),
                                      (const fr_raw *)(base + L.values_at), one, L.num_aux);
    cuda_check(cudaGetLastError(), "unpack_aux");
}

}  // namespace cuda_dev
}  // namespace cp
