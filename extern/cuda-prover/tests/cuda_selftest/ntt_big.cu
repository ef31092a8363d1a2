// `cuda_selftest ntt-big [LG]`: H's transforms at the C2's size (LG 27 by
// default), timed on the device one by one (each of the orders and kinds
// H uses, on one stream) and together (compute_h_async, a, b and c on
// three streams), with a round trip on the device checked against its
// input. What bounds a pass's NTT phase (the A, B and B-in-G2 MSMs run
// beside it) is this set of transforms or the MSMs: this mode times the
// first alone.
// sppark's field headers and blst's (common.hpp, through backend.hpp)
// declare the same names: this file takes the few helpers it needs from
// common.cu by their declarations, and makes its field elements without
// blst.
#define TAKE_RESPONSIBILITY_FOR_ERROR_MESSAGE
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <cuda_runtime.h>

#include <ff/bls12-381.hpp>

#include "gpu_ops.hpp"

#include <ntt/ntt.cuh>

using namespace cp_cuda;

// common.cu
void report(bool ok, const std::string &what);
double now_s();
void ck(cudaError_t e, const char *what);

namespace {

// Elements below the modulus r (the top word below r's, 0x73eda753...),
// from a splitmix64 sequence.
std::vector<fr_raw> elements(size_t n, uint64_t seed) {
    std::vector<fr_raw> v(n);
    for (auto &x : v)
        for (int k = 0; k < 4; k++) {
            uint64_t z = (seed += 0x9e3779b97f4a7c15ULL);
            z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
            z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
            x.l[k] = z ^ (z >> 31);
        }
    for (auto &x : v)
        x.l[3] &= 0x3fffffffffffffffULL;
    return v;
}

// v[i] = tile[(i * odd) & mask]: field elements without a host copy of v.
__global__ void fill_from_tile(fr_t *v, const fr_t *tile, size_t n, size_t mask) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        v[i] = tile[(i * 2654435761u) & mask];
}

// How many of v[i], w[i] differ (into *count).
__global__ void count_differences(const fr_raw *v, const fr_raw *w, size_t n,
                                  unsigned long long *count) {
    unsigned long long mine = 0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        uint64_t x = 0;
        for (int k = 0; k < 4; k++)
            x |= v[i].l[k] ^ w[i].l[k];
        mine += x ? 1 : 0;
    }
    if (mine)
        atomicAdd(count, mine);
}

constexpr unsigned BLOCKS = 4096, THREADS = 256;

}  // namespace

void ntt_big(const gpu_t &gpu, uint32_t lg) {
    using IO = NTT::InputOutputOrder;
    using Dir = NTT::Direction;
    using Ty = NTT::Type;
    const size_t n = size_t(1) << lg, tile_n = size_t(1) << 16;
    const std::vector<fr_raw> tile = elements(tile_n, 27);
    void *d_tile = nullptr;
    ck(cudaMalloc(&d_tile, tile_n * sizeof(fr_raw)), "cudaMalloc (tile)");
    ck(cudaMemcpy(d_tile, tile.data(), tile_n * sizeof(fr_raw), cudaMemcpyHostToDevice),
       "upload of the tile");
    fr_t *d = nullptr, *keep = nullptr;
    unsigned long long *d_count = nullptr;
    ck(cudaMalloc((void **)&d, 3 * n * sizeof(fr_t)), "cudaMalloc (a, b, c)");
    ck(cudaMalloc((void **)&keep, n * sizeof(fr_t)), "cudaMalloc (copy of a)");
    ck(cudaMalloc((void **)&d_count, sizeof(*d_count)), "cudaMalloc (count)");
    stream_t &s = gpu[0];
    const cudaStream_t cs = s;
    for (int k = 0; k < 3; k++)
        fill_from_tile<<<BLOCKS, THREADS, 0, cs>>>(d + k * n, (const fr_t *)d_tile, n,
                                                   tile_n - 1);
    ck(cudaMemcpyAsync(keep, d, n * sizeof(fr_t), cudaMemcpyDeviceToDevice, cs), "copy of a");
    ck(cudaStreamSynchronize(cs), "fill");
    ntt_tables_ready();

    cudaEvent_t e0, e1;
    ck(cudaEventCreate(&e0), "event");
    ck(cudaEventCreate(&e1), "event");
    // Each transform twice on a (the second timed): the first pays for
    // nothing the pass would not have paid before (tables are made above).
    auto timed = [&](const char *what, IO order, Dir dir, Ty type) {
        float ms = 0;
        for (int r = 0; r < 2; r++) {
            ck(cudaEventRecord(e0, cs), "record");
            NTT::Base_dev_ptr(s, d, lg, order, dir, type);
            ck(cudaEventRecord(e1, cs), "record");
            ck(cudaEventSynchronize(e1), what);
            ck(cudaEventElapsedTime(&ms, e0, e1), "elapsed");
        }
        std::printf("TIME ntt 2^%u %s: %.2f ms\n", lg, what, ms);
        return ms;
    };
    float sum = 0;
    // The transforms of H, as compute_h_async orders them: per input an
    // inverse (natural in, bit-reversed out) and a forward coset transform
    // (bit-reversed in, natural out); then one inverse coset transform,
    // natural in and out.
    sum += 3 * timed("inverse NR (a, b, c each)", IO::NR, Dir::inverse, Ty::standard);
    sum += 3 * timed("forward coset RN (a, b, c each)", IO::RN, Dir::forward, Ty::coset);
    sum += timed("inverse coset NN (H)", IO::NN, Dir::inverse, Ty::coset);
    std::printf("TIME ntt 2^%u the 7 transforms of H one after another: %.2f ms\n", lg, sum);
    // For comparison: the last one without its bit reversal (its output
    // bit-reversed).
    timed("inverse coset NR (H's without bit reversal)", IO::NR, Dir::inverse, Ty::coset);

    // A round trip (inverse NR, forward RN) gives a back.
    ck(cudaMemcpyAsync(d, keep, n * sizeof(fr_t), cudaMemcpyDeviceToDevice, cs), "copy of a");
    NTT::Base_dev_ptr(s, d, lg, IO::NR, Dir::inverse, Ty::standard);
    NTT::Base_dev_ptr(s, d, lg, IO::RN, Dir::forward, Ty::standard);
    ck(cudaMemsetAsync(d_count, 0, sizeof(*d_count), cs), "memset");
    count_differences<<<BLOCKS, THREADS, 0, cs>>>((const fr_raw *)d, (const fr_raw *)keep, n,
                                                   d_count);
    unsigned long long differ = 0;
    ck(cudaMemcpyAsync(&differ, d_count, sizeof differ, cudaMemcpyDeviceToHost, cs), "count");
    ck(cudaStreamSynchronize(cs), "round trip");
    report(differ == 0, "NTT 2^" + std::to_string(lg) + " round trip on the device (" +
                            std::to_string(differ) + " of " + std::to_string(n) + " differ)");

    // H whole, a, b and c on three streams, as a pass queues it.
    // Any element will do for the time (Z's inverse in Montgomery form).
    const fr_raw z = tile[0];
    for (int r = 0; r < 3; r++) {
        const double t0 = now_s();
        compute_h_async(gpu, d, d + n, d + 2 * n, lg, z);
        gpu_sync_default(gpu);
        std::printf("TIME ntt 2^%u H whole (compute_h_async, three streams) run %d: %.2f ms\n",
                    lg, r, (now_s() - t0) * 1e3);
    }
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    cudaFree(d_count);
    cudaFree(keep);
    cudaFree(d);
    cudaFree(d_tile);
}
