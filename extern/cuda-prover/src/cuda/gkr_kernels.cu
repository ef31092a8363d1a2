// The CUDA backend's GKR kernels (gkr/kernels.hpp) on one GPU: buffers from
// cudaMalloc (a released buffer is kept as a spare for the next request of
// its size, up to SPARE_CAP, until trim), inputs through the pinned ring of
// gkr_upload.cuh, one thread per entry for the element-wise kernels, and the
// round polynomial as per-block partial sums (warp shuffles, then shared
// memory) that the host adds up. Field sums are exact, so the result does
// not depend on how the work is split.
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <string>
#include <vector>

#include "backend.hpp"
#include "gkr/kernels.hpp"
#include "gkr_upload.cuh"
#include "registry.hpp"

namespace cp {
namespace gkr {
namespace {

using bb::ext;

constexpr int THREADS = 256;
constexpr unsigned MAX_BLOCKS = 1024;
constexpr size_t MAX_KERNEL_TERMS = 16;
constexpr size_t MAX_KERNEL_TABLES = 64;
// Bytes of released buffers kept for reuse.
constexpr uint64_t SPARE_CAP = uint64_t(2) << 30;

[[noreturn]] void cuda_fail(cudaError_t e, int cuda_id, const std::string &what) {
    (void)cudaGetLastError();
    fail(e == cudaErrorMemoryAllocation ? CP_ERR_OUT_OF_MEMORY : CP_ERR_DEVICE,
         "CUDA device " + std::to_string(cuda_id) + ": " + what + ": " + cudaGetErrorString(e));
}

unsigned blocks_for(size_t n) {
    return static_cast<unsigned>(std::max<size_t>(1, std::min<size_t>((n + THREADS - 1) / THREADS, 65535)));
}

struct point_arg {
    ext r[CP_GKR_MAX_VARS];
    ext one_minus[CP_GKR_MAX_VARS];
};

__global__ void eq_kernel(ext *out, point_arg pt, uint32_t m, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        ext acc = bb::ext_one();
        for (uint32_t k = 0; k < m; k++) {
            const bool bit = (i >> (m - 1 - k)) & 1;
            acc = bb::ext_mul(acc, bit ? pt.r[k] : pt.one_minus[k]);
        }
        out[i] = acc;
    }
}

__global__ void product_kernel(const ext *c, ext *p, size_t half) {
    for (size_t j = blockIdx.x * (size_t)blockDim.x + threadIdx.x; j < half; j += (size_t)gridDim.x * blockDim.x)
        p[j] = bb::ext_mul(c[j], c[j + half]);
}

__global__ void fraction_kernel(const ext *pc, const ext *qc, ext *pp, ext *qp, size_t half) {
    for (size_t j = blockIdx.x * (size_t)blockDim.x + threadIdx.x; j < half; j += (size_t)gridDim.x * blockDim.x) {
        const ext pl = pc[j], pr = pc[j + half], ql = qc[j], qr = qc[j + half];
        pp[j] = bb::ext_add(bb::ext_mul(pl, qr), bb::ext_mul(pr, ql));
        qp[j] = bb::ext_mul(ql, qr);
    }
}

__global__ void fold_kernel(ext *t, size_t half, ext r) {
    for (size_t j = blockIdx.x * (size_t)blockDim.x + threadIdx.x; j < half; j += (size_t)gridDim.x * blockDim.x)
        t[j] = bb::ext_lerp(t[j], t[j + half], r);
}

__global__ void field_kernel(int op, const ext *a, const ext *b, ext *out, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        if (op == CP_BB4_ADD)
            out[i] = bb::ext_add(a[i], b[i]);
        else if (op == CP_BB4_SUB)
            out[i] = bb::ext_sub(a[i], b[i]);
        else if (op == CP_BB4_MUL)
            out[i] = bb::ext_mul(a[i], b[i]);
        else
            out[i] = bb::ext_inv(a[i]);
    }
}

struct round_arg {
    const ext *tables[MAX_KERNEL_TABLES];
    term terms[MAX_KERNEL_TERMS];
    uint32_t num_terms;
    uint32_t degree;
};

__device__ __forceinline__ uint32_t shfl_add(uint32_t v, int delta) {
    return bb::add(v, __shfl_down_sync(0xffffffffu, v, delta));
}

// partial[block * 5 + t] = this block's share of g(t), t <= degree.
__global__ void round_kernel(round_arg arg, size_t half, ext *partial) {
    ext acc[MAX_DEGREE + 1];
#pragma unroll
    for (int k = 0; k <= (int)MAX_DEGREE; k++) acc[k] = bb::ext_zero();
    const uint32_t d = arg.degree;
    for (size_t j = blockIdx.x * (size_t)blockDim.x + threadIdx.x; j < half; j += (size_t)gridDim.x * blockDim.x) {
        for (uint32_t q = 0; q < arg.num_terms; q++) {
            const term &tm = arg.terms[q];
            ext prod[MAX_DEGREE + 1];
#pragma unroll
            for (int k = 0; k <= (int)MAX_DEGREE; k++) prod[k] = tm.coeff;
            for (uint32_t f = 0; f < tm.n; f++) {
                const ext *t = arg.tables[tm.idx[f]];
                ext v = t[j];
                const ext diff = bb::ext_sub(t[j + half], v);
#pragma unroll
                for (int k = 0; k <= (int)MAX_DEGREE; k++) {
                    if ((uint32_t)k <= d) {
                        prod[k] = bb::ext_mul(prod[k], v);
                        v = bb::ext_add(v, diff);
                    }
                }
            }
#pragma unroll
            for (int k = 0; k <= (int)MAX_DEGREE; k++)
                if ((uint32_t)k <= d) acc[k] = bb::ext_add(acc[k], prod[k]);
        }
    }
    // Warp sums, then one warp adds the warps' sums.
    __shared__ ext warp_sum[THREADS / 32][MAX_DEGREE + 1];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#pragma unroll
    for (int k = 0; k <= (int)MAX_DEGREE; k++)
#pragma unroll
        for (int c = 0; c < 4; c++)
            for (int delta = 16; delta > 0; delta >>= 1) acc[k].c[c] = shfl_add(acc[k].c[c], delta);
    if (lane == 0)
#pragma unroll
        for (int k = 0; k <= (int)MAX_DEGREE; k++) warp_sum[warp][k] = acc[k];
    __syncthreads();
    if (threadIdx.x == 0) {
        for (int k = 0; k <= (int)MAX_DEGREE; k++) {
            ext s = bb::ext_zero();
            for (int w = 0; w < THREADS / 32; w++) s = bb::ext_add(s, warp_sum[w][k]);
            partial[blockIdx.x * (MAX_DEGREE + 1) + k] = s;
        }
    }
}

struct buffer {
    ext *ptr = nullptr;
    size_t n = 0;
};

class cuda_kernels_impl final : public kernels {
public:
    explicit cuda_kernels_impl(int cuda_id) : cuda_id_(cuda_id) {}

    ~cuda_kernels_impl() override {
        if (!holds_anything()) return;
        try {
            cp_cuda::device_scope scope(cuda_id_);
            free_all();
        } catch (...) {
        }
    }

    buf_id alloc(size_t n) override {
        buffer b;
        b.n = n;
        if (n) b.ptr = take(n);
        const buf_id id = next_++;
        bufs_.emplace(id, b);
        return id;
    }

    buf_id upload(const ext *host, size_t n) override {
        const buf_id id = alloc(n);
        if (n) check(cudaMemcpy(bufs_[id].ptr, host, n * sizeof(ext), cudaMemcpyHostToDevice), "cudaMemcpy");
        return id;
    }

    void download(view v, size_t n, ext *host) override {
        ext *p = at(v, n);
        if (n) check(cudaMemcpy(host, p, n * sizeof(ext), cudaMemcpyDeviceToHost), "cudaMemcpy");
    }

    void release(buf_id b) override {
        auto it = bufs_.find(b);
        if (it == bufs_.end()) return;
        const buffer buf = it->second;
        bufs_.erase(it);
        if (!buf.ptr) return;
        const uint64_t size = buf.n * sizeof(ext);
        if (spare_bytes_ + size <= SPARE_CAP) {
            spares_.emplace(buf.n, buf.ptr);
            spare_bytes_ += size;
            return;
        }
        bytes_ -= size;
        check(cudaFree(buf.ptr), "cudaFree");
    }

    size_t upload_words(view dst, const uint32_t *words, size_t n, bool canonical, size_t chunk) override {
        ext *d = at(dst, n);
        return ring_.upload(d, words, n, canonical, chunk,
                            [this](cudaError_t e, const char *what) { check(e, what); });
    }

    void sync() override { this->sync("GKR kernels"); }

    void eq_table(view out, const ext *r, uint32_t m) override {
        const size_t n = size_t(1) << m;
        ext *o = at(out, n);
        point_arg pt;
        for (uint32_t k = 0; k < m; k++) {
            pt.r[k] = r[k];
            pt.one_minus[k] = bb::ext_sub(bb::ext_one(), r[k]);
        }
        eq_kernel<<<blocks_for(n), THREADS>>>(o, pt, m, n);
        check(cudaGetLastError(), "eq_kernel");  // the first round waits for it
    }

    void product_layer(view child, view parent, size_t half) override {
        const ext *c = at(child, 2 * half);
        ext *p = at(parent, half);
        product_kernel<<<blocks_for(half), THREADS>>>(c, p, half);
        check(cudaGetLastError(), "product_kernel");
    }

    void fraction_layer(view p_child, view q_child, view p_parent, view q_parent, size_t half) override {
        const ext *pc = at(p_child, 2 * half), *qc = at(q_child, 2 * half);
        ext *pp = at(p_parent, half), *qp = at(q_parent, half);
        fraction_kernel<<<blocks_for(half), THREADS>>>(pc, qc, pp, qp, half);
        check(cudaGetLastError(), "fraction_kernel");
    }

    void round(const view *tables, size_t num_tables, size_t len, const term *terms, size_t num_terms,
               uint32_t degree, ext *out) override {
        if (num_tables > MAX_KERNEL_TABLES || num_terms > MAX_KERNEL_TERMS)
            fail(CP_ERR_INVALID_ARGUMENT, "the CUDA round kernel takes at most " +
                                              std::to_string(MAX_KERNEL_TABLES) + " tables and " +
                                              std::to_string(MAX_KERNEL_TERMS) + " terms");
        round_arg arg;
        for (size_t i = 0; i < num_tables; i++) arg.tables[i] = at(tables[i], len);
        for (size_t q = 0; q < num_terms; q++) arg.terms[q] = terms[q];
        arg.num_terms = static_cast<uint32_t>(num_terms);
        arg.degree = degree;
        const size_t half = len / 2;
        const unsigned blocks = std::min<unsigned>(blocks_for(half), MAX_BLOCKS);
        ensure_partial(blocks);
        round_kernel<<<blocks, THREADS>>>(arg, half, partial_);
        check(cudaGetLastError(), "round_kernel");
        // Into pinned memory: a direct copy, no driver staging.
        const ext *host = partial_host_;
        check(cudaMemcpyAsync(partial_host_, partial_, size_t(blocks) * (MAX_DEGREE + 1) * sizeof(ext),
                              cudaMemcpyDeviceToHost, 0),
              "cudaMemcpyAsync (round)");
        this->sync("round_kernel");
        for (uint32_t k = 0; k <= degree; k++) {
            ext s = bb::ext_zero();
            for (unsigned b = 0; b < blocks; b++) s = bb::ext_add(s, host[b * (MAX_DEGREE + 1) + k]);
            out[k] = s;
        }
    }

    void fold(const view *tables, size_t num_tables, size_t len, const ext &r) override {
        const size_t half = len / 2;
        for (size_t i = 0; i < num_tables; i++) {
            ext *p = at(tables[i], len);
            fold_kernel<<<blocks_for(half), THREADS>>>(p, half, r);
        }
        check(cudaGetLastError(), "fold_kernel");  // the next round or download waits for it
    }

    void field_op(int op, const ext *a, const ext *b, ext *out, size_t n) override {
        if (n == 0) return;
        const buf_id da = upload(a, n), db = upload(b, n), dout = alloc(n);
        try {
            field_kernel<<<blocks_for(n), THREADS>>>(op, bufs_[da].ptr, bufs_[db].ptr, bufs_[dout].ptr, n);
            sync("field_kernel");
            download(view{dout, 0}, n, out);
        } catch (...) {
            release(da);
            release(db);
            release(dout);
            throw;
        }
        release(da);
        release(db);
        release(dout);
    }

    uint64_t bytes() const override { return bytes_.load(); }

    uint64_t trim() override {
        if (!holds_anything()) return 0;
        cp_cuda::device_scope scope(cuda_id_);
        return free_all();
    }

private:
    bool holds_anything() const { return !bufs_.empty() || !spares_.empty() || partial_ || ring_.holds_anything(); }

    // Device memory for n elements: a spare of that size, or a new
    // allocation (the spares freed and the allocation retried when the
    // device is out of memory).
    ext *take(size_t n) {
        auto it = spares_.find(n);
        if (it != spares_.end()) {
            ext *p = it->second;
            spares_.erase(it);
            spare_bytes_ -= n * sizeof(ext);
            return p;
        }
        ext *p = nullptr;
        cudaError_t e = cudaMalloc(reinterpret_cast<void **>(&p), n * sizeof(ext));
        if (e == cudaErrorMemoryAllocation && !spares_.empty()) {
            (void)cudaGetLastError();
            free_spares();
            e = cudaMalloc(reinterpret_cast<void **>(&p), n * sizeof(ext));
        }
        check(e, "cudaMalloc");
        bytes_ += n * sizeof(ext);
        return p;
    }

    void free_spares() {
        for (auto &kv : spares_) (void)cudaFree(kv.second);
        bytes_ -= spare_bytes_;
        spares_.clear();
        spare_bytes_ = 0;
    }

    uint64_t free_all() {
        const uint64_t freed = bytes_.load();
        for (auto &kv : bufs_)
            if (kv.second.ptr) (void)cudaFree(kv.second.ptr);
        bufs_.clear();
        free_spares();
        if (partial_) {
            (void)cudaFree(partial_);
            partial_ = nullptr;
            partial_blocks_ = 0;
        }
        if (partial_host_) {
            (void)cudaFreeHost(partial_host_);
            partial_host_ = nullptr;
        }
        ring_.release();
        bytes_ = 0;
        return freed;
    }

    void ensure_partial(unsigned blocks) {
        if (partial_blocks_ >= blocks) return;
        if (partial_) check(cudaFree(partial_), "cudaFree");
        partial_ = nullptr;
        partial_blocks_ = 0;
        if (!partial_host_)
            check(cudaHostAlloc(reinterpret_cast<void **>(&partial_host_), MAX_BLOCKS * (MAX_DEGREE + 1) * sizeof(ext),
                                cudaHostAllocDefault),
                  "cudaHostAlloc (round)");
        check(cudaMalloc(reinterpret_cast<void **>(&partial_), MAX_BLOCKS * (MAX_DEGREE + 1) * sizeof(ext)),
              "cudaMalloc");
        partial_blocks_ = MAX_BLOCKS;
    }

    ext *at(view v, size_t n) {
        auto it = bufs_.find(v.buf);
        if (it == bufs_.end())
            fail(CP_ERR_INVALID_ARGUMENT,
                 "GKR buffer " + std::to_string(v.buf) + " is gone (freed by cp_device_trim?)");
        if (v.offset > it->second.n || n > it->second.n - v.offset)
            fail(CP_ERR_INTERNAL, "GKR view past the end of buffer " + std::to_string(v.buf));
        return it->second.ptr + v.offset;
    }

    void check(cudaError_t e, const char *what) {
        if (e != cudaSuccess) cuda_fail(e, cuda_id_, what);
    }

    void sync(const char *what) {
        check(cudaGetLastError(), what);
        check(cudaStreamSynchronize(0), what);
    }

    int cuda_id_;
    buf_id next_ = 1;
    std::map<buf_id, buffer> bufs_;
    std::multimap<size_t, ext *> spares_;  // released buffers by size
    uint64_t spare_bytes_ = 0;
    upload_ring ring_;
    ext *partial_ = nullptr;
    ext *partial_host_ = nullptr;  // pinned, the partials' host copy
    unsigned partial_blocks_ = 0;
    std::atomic<uint64_t> bytes_{0};
};

}  // namespace

std::unique_ptr<kernels> cuda_kernels(int cuda_id) {
    return std::unique_ptr<kernels>(new cuda_kernels_impl(cuda_id));
}

}  // namespace gkr
}  // namespace cp
