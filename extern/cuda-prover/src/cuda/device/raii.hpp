// Owners of CUDA objects: a stream, an event, a device allocation and a
// pinned host allocation, each released exactly once by its destructor.
// Creation failures are cp::error; release failures are ignored (the
// device may be gone).
#pragma once

#include <cstddef>
#include <string>
#include <utility>

#include <cuda_runtime.h>

#include "device/errors.hpp"
#include "registry.hpp"

namespace cp {
namespace cuda_dev {

// A non-blocking stream on the current device.
class cuda_stream {
    cudaStream_t s_ = nullptr;

public:
    cuda_stream() = default;
    ~cuda_stream() { reset(); }
    cuda_stream(const cuda_stream &) = delete;
    cuda_stream &operator=(const cuda_stream &) = delete;

    void create(const char *what) {
        if (!s_)
            cuda_check(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking), what);
    }
    void reset() {
        if (s_)
            (void)cudaStreamDestroy(s_);
        s_ = nullptr;
    }
    cudaStream_t get() const { return s_; }
    explicit operator bool() const { return s_ != nullptr; }
};

// An event without timing on the current device.
class cuda_event {
    cudaEvent_t e_ = nullptr;

public:
    cuda_event() = default;
    ~cuda_event() { reset(); }
    cuda_event(const cuda_event &) = delete;
    cuda_event &operator=(const cuda_event &) = delete;

    void create() {
        if (!e_)
            cuda_check(cudaEventCreateWithFlags(&e_, cudaEventDisableTiming), "cudaEventCreate");
    }
    // An event cudaEventElapsedTime can measure.
    void create_timed() {
        if (!e_)
            cuda_check(cudaEventCreate(&e_), "cudaEventCreate");
    }
    void reset() {
        if (e_) {
            (void)cudaEventSynchronize(e_);
            (void)cudaEventDestroy(e_);
        }
        e_ = nullptr;
    }
    cudaEvent_t get() const { return e_; }
    explicit operator bool() const { return e_ != nullptr; }
};

// Gives the unused memory of device `cuda_id`'s default pool back to the
// card (the current device), once the device's work has finished, so that
// frees still in stream order are given back too. For allocations that
// failed for want of memory, and for trim; the errors are cleared.
inline void trim_default_pool(int cuda_id) {
    cudaMemPool_t pool = nullptr;
    (void)cudaDeviceSynchronize();
    if (cudaDeviceGetDefaultMemPool(&pool, cuda_id) == cudaSuccess)
        (void)cudaMemPoolTrimTo(pool, 0);
    (void)cudaGetLastError();
}

// One cudaMalloc on device `cuda_id`, freed on that device.
class device_buffer {
    void *p_ = nullptr;
    size_t bytes_ = 0;
    int cuda_id_ = -1;

public:
    device_buffer() = default;
    ~device_buffer() { reset(); }
    device_buffer(const device_buffer &) = delete;
    device_buffer &operator=(const device_buffer &) = delete;
    device_buffer(device_buffer &&o) noexcept { *this = std::move(o); }
    device_buffer &operator=(device_buffer &&o) noexcept {
        if (this != &o) {
            reset();
            std::swap(p_, o.p_);
            std::swap(bytes_, o.bytes_);
            std::swap(cuda_id_, o.cuda_id_);
        }
        return *this;
    }

    // Allocates on the current device (`cuda_id`); returns cudaMalloc's
    // status and leaves the buffer empty on failure (the error cleared).
    // Out of memory, it gives the default pool's unused memory back to
    // the card and tries once more: the budget counts that memory as free
    // (memory_budget::card_free), cudaMalloc cannot take it from the pool.
    cudaError_t allocate(int cuda_id, size_t bytes) {
        reset();
        void *p = nullptr;
        cudaError_t e = cudaMalloc(&p, bytes);
        if (e == cudaErrorMemoryAllocation) {
            (void)cudaGetLastError();
            trim_default_pool(cuda_id);
            e = cudaMalloc(&p, bytes);
        }
        if (e != cudaSuccess) {
            (void)cudaGetLastError();
            return e;
        }
        p_ = p;
        bytes_ = bytes;
        cuda_id_ = cuda_id;
        return cudaSuccess;
    }
    void reset() {
        if (p_) {
            try {
                cp_cuda::device_scope scope(cuda_id_);
                (void)cudaFree(p_);
            } catch (...) {
                // The device is gone: nothing left to free.
            }
        }
        p_ = nullptr;
        bytes_ = 0;
    }
    void *get() const { return p_; }
    char *bytes_ptr() const { return (char *)p_; }
    size_t size() const { return bytes_; }
    explicit operator bool() const { return p_ != nullptr; }
};

// One cudaHostAlloc (pinned host memory).
class pinned_buffer {
    void *p_ = nullptr;
    size_t bytes_ = 0;

public:
    pinned_buffer() = default;
    ~pinned_buffer() { reset(); }
    pinned_buffer(const pinned_buffer &) = delete;
    pinned_buffer &operator=(const pinned_buffer &) = delete;

    void allocate(size_t bytes, const std::string &what) {
        reset();
        const cudaError_t e = cudaHostAlloc(&p_, bytes, cudaHostAllocDefault);
        if (e != cudaSuccess) {
            p_ = nullptr;
            (void)cudaGetLastError();
            fail(CP_ERR_OUT_OF_MEMORY,
                 "cudaHostAlloc(" + mib(bytes) + " " + what + "): " + cudaGetErrorString(e));
        }
        bytes_ = bytes;
    }
    void reset() {
        if (p_)
            (void)cudaFreeHost(p_);
        p_ = nullptr;
        bytes_ = 0;
    }
    void *get() const { return p_; }
    size_t size() const { return bytes_; }
    explicit operator bool() const { return p_ != nullptr; }
};

}  // namespace cuda_dev
}  // namespace cp
