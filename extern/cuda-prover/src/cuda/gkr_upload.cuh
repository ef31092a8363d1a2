// The GKR input's way onto a GPU (header only, for gkr_kernels.cu): a ring
// of pinned staging buffers on a copy stream. The host threads fill buffer
// k + 1 from the caller's (pageable) words while the copy engine moves
// buffer k; a kernel behind each piece checks every coefficient against p
// (the first bad index by atomicMin) and, for canonical input, converts it
// to Montgomery form in place. The pinned ring, the stream and the flag are
// kept from one upload to the next and freed by trim.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>

#include "gkr/babybear.hpp"
#include "parallel.hpp"

namespace cp {
namespace gkr {

// The piece size when the caller names none: 2^19 elements (8 MiB).
constexpr size_t UPLOAD_DEFAULT_CHUNK = size_t(1) << 19;
// The largest piece: larger requests are cut to it (pinned memory is
// UPLOAD_BUFS pieces).
constexpr size_t UPLOAD_MAX_CHUNK = size_t(1) << 22;
constexpr int UPLOAD_BUFS = 3;
// Bytes each host thread copies into a pinned buffer at a time.
constexpr size_t UPLOAD_PIECE = size_t(1) << 20;
constexpr int UPLOAD_MAX_THREADS = 8;

// d[i] checked (and converted to Montgomery form when canonical) for
// i < len; the global index of a bad element is base + i.
__global__ void upload_words_kernel(bb::ext *d, size_t len, unsigned long long base, bool canonical,
                                    unsigned long long *first_bad) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < len; i += (size_t)gridDim.x * blockDim.x) {
        bb::ext v = d[i];
        if (v.c[0] >= bb::P || v.c[1] >= bb::P || v.c[2] >= bb::P || v.c[3] >= bb::P) {
            atomicMin(first_bad, base + i);
            continue;
        }
        if (canonical) {
#pragma unroll
            for (int c = 0; c < 4; c++) v.c[c] = bb::to_mont(v.c[c]);
            d[i] = v;
        }
    }
}

class upload_ring {
public:
    upload_ring() = default;
    upload_ring(const upload_ring &) = delete;
    upload_ring &operator=(const upload_ring &) = delete;
    ~upload_ring() { release(); }

    bool holds_anything() const { return stream_ != nullptr; }

    // Frees the ring, its stream, events and flag (the device is bound).
    void release() {
        if (stream_) (void)cudaStreamSynchronize(stream_);
        for (int b = 0; b < UPLOAD_BUFS; b++) {
            if (bufs_[b]) (void)cudaFreeHost(bufs_[b]);
            if (evs_[b]) (void)cudaEventDestroy(evs_[b]);
            bufs_[b] = nullptr;
            evs_[b] = nullptr;
        }
        if (bad_) (void)cudaFree(bad_);
        if (bad_host_) (void)cudaFreeHost(bad_host_);
        if (ready_) (void)cudaEventDestroy(ready_);
        if (stream_) (void)cudaStreamDestroy(stream_);
        bad_ = nullptr;
        bad_host_ = nullptr;
        ready_ = nullptr;
        stream_ = nullptr;
        cap_ = 0;
    }

    // Copies n elements of host words into d (device), checked and
    // converted; returns the first bad index or n. `check` turns a CUDA
    // error into the caller's exception.
    template <class Check>
    size_t upload(bb::ext *d, const uint32_t *words, size_t n, bool canonical, size_t chunk, Check &&check) {
        if (n == 0) return 0;
        if (chunk == 0) chunk = UPLOAD_DEFAULT_CHUNK;
        chunk = std::min(std::min(chunk, UPLOAD_MAX_CHUNK), n);
        // At least the default size, so that small uploads do not shrink the
        // ring the large ones need.
        ensure(std::max(chunk, UPLOAD_DEFAULT_CHUNK) * sizeof(bb::ext), check);
        // The buffer may have served kernels on the legacy stream: the copies
        // start after them.
        check(cudaEventRecord(ready_, 0), "cudaEventRecord");
        check(cudaStreamWaitEvent(stream_, ready_, 0), "cudaStreamWaitEvent");
        check(cudaMemsetAsync(bad_, 0xff, sizeof(unsigned long long), stream_), "cudaMemsetAsync");
        const int threads = std::min(hardware_threads(), UPLOAD_MAX_THREADS);
        const char *src = reinterpret_cast<const char *>(words);
        size_t k = 0;
        for (size_t off = 0; off < n; off += chunk, k++) {
            const size_t len = std::min(chunk, n - off);
            const size_t bytes = len * sizeof(bb::ext);
            const int b = static_cast<int>(k % UPLOAD_BUFS);
            // The copy that last read buffer b is done.
            check(cudaEventSynchronize(evs_[b]), "cudaEventSynchronize (staging)");
            char *h = static_cast<char *>(bufs_[b]);
            const char *s = src + off * sizeof(bb::ext);
            const size_t pieces = (bytes + UPLOAD_PIECE - 1) / UPLOAD_PIECE;
            parallel_for(pieces, threads, 1, [&](size_t pb, size_t pe, size_t) {
                for (size_t p = pb; p < pe; p++) {
                    const size_t o = p * UPLOAD_PIECE;
                    std::memcpy(h + o, s + o, std::min(UPLOAD_PIECE, bytes - o));
                }
            });
            check(cudaMemcpyAsync(d + off, h, bytes, cudaMemcpyHostToDevice, stream_), "cudaMemcpyAsync (upload)");
            check(cudaEventRecord(evs_[b], stream_), "cudaEventRecord");
            const unsigned blocks =
                static_cast<unsigned>(std::max<size_t>(1, std::min<size_t>((len + 255) / 256, 65535)));
            upload_words_kernel<<<blocks, 256, 0, stream_>>>(d + off, len, off, canonical, bad_);
            check(cudaGetLastError(), "upload_words_kernel");
        }
        check(cudaMemcpyAsync(bad_host_, bad_, sizeof(unsigned long long), cudaMemcpyDeviceToHost, stream_),
              "cudaMemcpyAsync (flag)");
        check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize (upload)");
        const unsigned long long first = *bad_host_;
        return first < n ? static_cast<size_t>(first) : n;
    }

private:
    template <class Check>
    void ensure(size_t bytes, Check &&check) {
        if (!stream_) {
            check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate (upload)");
            check(cudaEventCreateWithFlags(&ready_, cudaEventDisableTiming), "cudaEventCreate");
            for (int b = 0; b < UPLOAD_BUFS; b++)
                check(cudaEventCreateWithFlags(&evs_[b], cudaEventDisableTiming), "cudaEventCreate");
            check(cudaMalloc(reinterpret_cast<void **>(&bad_), sizeof(unsigned long long)), "cudaMalloc (flag)");
            check(cudaHostAlloc(reinterpret_cast<void **>(&bad_host_), sizeof(unsigned long long),
                                cudaHostAllocDefault),
                  "cudaHostAlloc (flag)");
        }
        if (bytes <= cap_) return;
        for (int b = 0; b < UPLOAD_BUFS; b++) {
            check(cudaEventSynchronize(evs_[b]), "cudaEventSynchronize (staging)");
            if (bufs_[b]) (void)cudaFreeHost(bufs_[b]);
            bufs_[b] = nullptr;
        }
        cap_ = 0;
        for (int b = 0; b < UPLOAD_BUFS; b++)
            check(cudaHostAlloc(&bufs_[b], bytes, cudaHostAllocDefault), "cudaHostAlloc (staging)");
        cap_ = bytes;
    }

    cudaStream_t stream_ = nullptr;
    cudaEvent_t ready_ = nullptr;
    cudaEvent_t evs_[UPLOAD_BUFS] = {nullptr, nullptr, nullptr};
    void *bufs_[UPLOAD_BUFS] = {nullptr, nullptr, nullptr};
    size_t cap_ = 0;
    unsigned long long *bad_ = nullptr;
    unsigned long long *bad_host_ = nullptr;
};

}  // namespace gkr
}  // namespace cp
