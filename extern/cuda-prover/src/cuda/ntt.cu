// The H polynomial on one GPU with sppark's NTTs: coset evaluations of a, b
// and c, the pointwise (a*b - c) / Z, and the inverse coset transform.
#define TAKE_RESPONSIBILITY_FOR_ERROR_MESSAGE

#include <cuda_runtime.h>

#include <ff/bls12-381.hpp>

#include "gpu_ops.hpp"

#include <ntt/ntt.cuh>

namespace cp_cuda {
namespace {

__global__ void h_pointwise(fr_t *a, const fr_t *b, const fr_t *c, fr_raw z_inv, size_t n) {
    const fr_t z = *reinterpret_cast<const fr_t *>(&z_inv);
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        fr_t x = a[i];
        x *= b[i];
        x -= c[i];
        x *= z;
        a[i] = x;
    }
}

}  // namespace

void compute_h_async(const gpu_t &gpu, void *d_a, void *d_b, void *d_c, uint32_t lg,
                     const fr_raw &z_inv) {
    if (lg == 0)
        return;
    using IO = NTT::InputOutputOrder;
    using Dir = NTT::Direction;
    using Ty = NTT::Type;
    stream_t &s = gpu;
    fr_t *polys[3] = {(fr_t *)d_a, (fr_t *)d_b, (fr_t *)d_c};
    // a, b and c are independent until the pointwise step: each on one of
    // the gpu's three other streams, after what s has queued, and s waits
    // for all three. Measured on an H200 in chain 2^20's device part (the
    // NTTs next to A's and B's sorts): the NTT phase 3.3 -> 2.7 ms. The
    // events are released once they fire.
    event_t inputs(s);
    for (size_t k = 0; k < 3; k++) {
        stream_t &sk = gpu[k];
        inputs.wait(sk);
        // natural evaluations -> bit-reversed coefficients -> natural coset evaluations
        NTT::Base_dev_ptr(sk, polys[k], lg, IO::NR, Dir::inverse, Ty::standard);
        NTT::Base_dev_ptr(sk, polys[k], lg, IO::RN, Dir::forward, Ty::coset);
        event_t done(sk);
        done.wait(s);
    }
    const size_t n = size_t(1) << lg;
    const unsigned blocks = (unsigned)std::min<size_t>((n + 255) / 256, 4096);
    h_pointwise<<<blocks, 256, 0, (cudaStream_t)s>>>(polys[0], polys[1], polys[2], z_inv, n);
    CUDA_OK(cudaGetLastError());
    NTT::Base_dev_ptr(s, polys[0], lg, IO::NN, Dir::inverse, Ty::coset);
}

void ntt_tables_ready() {
    (void)NTTParameters::all(false);
    (void)NTTParameters::all(true);  // both made and synchronized by the first call
}

void gpu_sync_default(const gpu_t &gpu) {
    const cudaStream_t s = gpu;
    CUDA_OK(cudaStreamSynchronize(s));
}

}  // namespace cp_cuda
