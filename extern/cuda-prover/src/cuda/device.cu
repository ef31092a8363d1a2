// The CUDA backend: one cp::device per usable GPU. Each device keeps the
// proving keys it has seen in device memory (srs::copies, by CUDA ordinal)
// and a working cache reused between proofs; it runs H and the MSMs of a
// circuit on its own GPU and streams. The witness goes up once, through
// pinned staging buffers on a copy stream that overlaps the NTTs; the MSM
// scalars are gathered on the device. h and l are one MSM (they enter the
// proof only as h + l): its time is reported in msm_h_ns, out.l is zero.
// A circuit given by a shape sends only its witness: the shape's matrices
// stay on the device (one resident shape per device, freed by trim) and a, b,
// c are evaluated and checked there. A device is one CUDA ordinal of the
// process's device set (registry.hpp); it does nothing on its GPU until it
// is first used.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <cuda_runtime.h>

#include "backend.hpp"
#include "gkr/kernels.hpp"
#include "gpu_ops.hpp"
#include "registry.hpp"

namespace cp {
namespace {

using namespace cp_cuda;

static_assert(sizeof(blst_fr) == sizeof(fr_raw), "blst_fr layout");
static_assert(sizeof(blst_p1_affine) == sizeof(g1_affine_raw), "blst_p1_affine layout");
static_assert(sizeof(blst_p2_affine) == sizeof(g2_affine_raw), "blst_p2_affine layout");
static_assert(sizeof(blst_p1) == sizeof(g1_proj_raw), "blst_p1 layout");
static_assert(sizeof(blst_p2) == sizeof(g2_proj_raw), "blst_p2 layout");
static_assert(sizeof(cp_fr) == sizeof(fr_raw), "cp_fr layout");

constexpr uint64_t MiB = 1ull << 20;

inline uint64_t now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

inline size_t align256(size_t x) { return (x + 255) & ~size_t(255); }

[[noreturn]] void cuda_fail(cudaError_t e, const std::string &what) {
    (void)cudaGetLastError();
    const cp_code code = e == cudaErrorMemoryAllocation ? CP_ERR_OUT_OF_MEMORY : CP_ERR_DEVICE;
    fail(code, what + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")");
}

inline void cuda_check(cudaError_t e, const std::string &what) {
    if (e != cudaSuccess)
        cuda_fail(e, what);
}

// sppark reports failures as cuda_error carrying -cudaError_t.
[[noreturn]] void rethrow_sppark(const cuda_error &e, int cuda_id) {
    (void)cudaGetLastError();
    const cp_code code =
        e.code() == -(int)cudaErrorMemoryAllocation ? CP_ERR_OUT_OF_MEMORY : CP_ERR_DEVICE;
    fail(code, "CUDA device " + std::to_string(cuda_id) + ": " + e.what());
}

using cp_cuda::device_scope;

// cudaSetDevice through the registry, with its failure as a cp::error.
void set_device(int id) {
    try {
        cp_cuda::set_device(id);
    } catch (const cuda_error &e) {
        rethrow_sppark(e, id);
    }
}

// The smallest power of two >= n (n <= 2^MAX_LG_DOMAIN from the callers;
// the loop stops at 2^62 whatever it is given).
size_t domain_for(uint64_t n) {
    uint32_t lg = 0;
    while (lg < 62 && (uint64_t(1) << lg) < n) lg++;
    return size_t(1) << lg;
}

struct srs_sizes {
    size_t h, l, a, b_g1, b_g2, total;
};

// H and L are adjacent (no padding between them) so that one MSM covers
// both: h + l enter the proof only through their sum.
srs_sizes srs_layout(const srs &key) {
    srs_sizes s;
    s.h = key.h.size() * sizeof(blst_p1_affine);
    s.l = align256(s.h + key.l.size() * sizeof(blst_p1_affine)) - s.h;
    s.a = align256(key.a.size() * sizeof(blst_p1_affine));
    s.b_g1 = align256(key.b_g1.size() * sizeof(blst_p1_affine));
    s.b_g2 = align256(key.b_g2.size() * sizeof(blst_p2_affine));
    s.total = s.h + s.l + s.a + s.b_g1 + s.b_g2;
    return s;
}

// The proving key's point arrays in one device allocation.
struct srs_copy final : srs_device_copy {
    int cuda_id = -1;
    char *base = nullptr;
    uint64_t total = 0;
    const void *h = nullptr, *l = nullptr, *a = nullptr, *b_g1 = nullptr, *b_g2 = nullptr;

    ~srs_copy() override {
        if (base) {
            try {
                device_scope scope(cuda_id);
                (void)cudaFree(base);
            } catch (...) {
                // The device is gone: nothing left to free.
            }
        }
    }
    uint64_t bytes() const override { return total; }
};

// The working cache of one proof shape, carved from one device allocation:
//   abc   a, b, c evaluations over the domain (m each); H ends up in a
//   hl    scalars of the merged H+L MSM: H's m-1 coefficients, then aux
//   in    the input assignment
//   sa    scalars of A: inputs, then aux filtered by a_aux_density
//   sb    scalars of B: inputs filtered by b_input_density, then aux
//         filtered by b_aux_density
//   bits  the three density bitmaps (64-bit words)
//   pre   per bitmap word, the set bits in the words before it (uint32)
//   bad   the first unsatisfied row of a shape's evaluation
struct cache_layout {
    size_t m, n_hl, ni, na, n_a, n_b, w_in, w_aux;
    size_t abc, hl, in, sa, sb, bits, pre, bad, total;
};

cache_layout layout_for(const srs &key, size_t m) {
    cache_layout L;
    L.m = m;
    L.ni = key.ic.size();
    L.na = key.l.size();
    L.n_hl = (m - 1) + L.na;
    L.n_a = key.a.size();
    L.n_b = key.b_g1.size();
    L.w_in = (L.ni + 63) / 64;
    L.w_aux = (L.na + 63) / 64;
    size_t off = 0;
    auto take = [&](size_t bytes) {
        size_t at = off;
        off += align256(bytes);
        return at;
    };
    L.abc = take(3 * m * sizeof(fr_raw));
    L.hl = take(L.n_hl * sizeof(fr_raw));
    L.in = take(L.ni * sizeof(fr_raw));
    L.sa = take(L.n_a * sizeof(fr_raw));
    L.sb = take(L.n_b * sizeof(fr_raw));
    L.bits = take((2 * L.w_aux + L.w_in) * sizeof(uint64_t));
    L.pre = take((2 * L.w_aux + L.w_in) * sizeof(uint32_t));
    L.bad = take(sizeof(uint64_t));
    L.total = std::max<size_t>(off, 256);
    return L;
}

size_t temp_bytes(const cache_layout &L, int sm_count) {
    return std::max({msm_temp_bytes(L.n_hl, false, sm_count),
                     msm_temp_bytes(L.n_a, false, sm_count),
                     msm_temp_bytes(L.n_b, true, sm_count)});
}

// dst[prefix of i] = src[i] for the set bits i < n of `bits`, where pre[w]
// counts the set bits of bits[0..w).
__global__ void compact_by_bits(fr_raw *dst, const fr_raw *src, const uint64_t *bits,
                                const uint32_t *pre, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        const uint64_t w = bits[i / 64];
        const unsigned k = (unsigned)(i % 64);
        if ((w >> k) & 1) {
            const uint64_t below = k ? (w & ((uint64_t(1) << k) - 1)) : 0;
            dst[pre[i / 64] + __popcll(below)] = src[i];
        }
    }
}

void launch_compact(cudaStream_t s, fr_raw *dst, const fr_raw *src, const uint64_t *bits,
                    const uint32_t *pre, size_t n) {
    if (n == 0)
        return;
    const unsigned blocks = (unsigned)std::min<size_t>((n + 255) / 256, 8192);
    compact_by_bits<<<blocks, 256, 0, s>>>(dst, src, bits, pre, n);
    cuda_check(cudaGetLastError(), "compact_by_bits");
}

// Host: pre[w] = set bits of bits[0..w), for the words holding n bits.
void word_prefix(uint32_t *pre, const uint64_t *bits, size_t n) {
    const size_t words = (n + 63) / 64;
    uint64_t acc = 0;
    for (size_t w = 0; w < words; w++) {
        pre[w] = (uint32_t)acc;
        acc += (uint64_t)__builtin_popcountll(bits[w]);
    }
}

// A shape's device copy in one allocation: the CSR offsets and entries of A,
// B and C, the general coefficients, then the density bitmaps and their word
// prefixes in the working cache's order (A aux, B inputs, B aux).
struct shape_copy {
    uint64_t id = 0;  // shape::id; 0 when none is resident
    void *base = nullptr;
    uint64_t bytes = 0;
    const uint64_t *row_ptr[3] = {};
    const shape_entry_raw *entries[3] = {};
    const fr_raw *coeffs = nullptr;
    const uint64_t *bits = nullptr;
    const uint32_t *pre = nullptr;
};

struct shape_sizes {
    size_t row_ptr, entries[3], coeffs, bits, pre, total;
};

shape_sizes shape_layout(const shape &sh) {
    shape_sizes z;
    z.row_ptr = align256((sh.num_constraints + 1) * sizeof(uint64_t));
    const shape_matrix *ms[3] = {&sh.a, &sh.b, &sh.c};
    z.total = 3 * z.row_ptr;
    for (int i = 0; i < 3; i++) {
        z.entries[i] = align256(ms[i]->entries.size() * sizeof(shape_entry_raw));
        z.total += z.entries[i];
    }
    const size_t words = 2 * ((sh.num_aux + 63) / 64) + (sh.num_inputs + 63) / 64;
    z.coeffs = align256(sh.coeffs.size() * sizeof(fr_raw));
    z.bits = align256(words * sizeof(uint64_t));
    z.pre = align256(words * sizeof(uint32_t));
    z.total += z.coeffs + z.bits + z.pre;
    return z;
}

// 1 / (g^m - 1) for g = 7, m = 2^lg.
fr_raw z_inverse(uint32_t lg) {
    blst_fr g, one, z;
    const uint64_t seven[4] = {7, 0, 0, 0}, unit[4] = {1, 0, 0, 0};
    blst_fr_from_uint64(&g, seven);
    blst_fr_from_uint64(&one, unit);
    z = g;
    for (uint32_t i = 0; i < lg; i++)
        blst_fr_sqr(&z, &z);
    blst_fr_sub(&z, &z, &one);
    blst_fr_inverse(&z, &z);
    fr_raw out;
    std::memcpy(&out, &z, sizeof(out));
    return out;
}

std::string mib(uint64_t b) { return std::to_string((b + MiB - 1) / MiB) + " MiB"; }

// Host to device copies through a ring of pinned buffers: the host threads
// of the gpu's pool fill one buffer while the copy stream drains the others.
constexpr size_t STAGE_CHUNK = 8 * MiB;
constexpr int STAGE_BUFS = 4;
constexpr size_t STAGE_PIECE = 512 * 1024;  // per host thread

class cuda_device final : public device {
public:
    cuda_device(int cuda_id, const cudaDeviceProp &props)
        : ordinal_(cuda_id), cuda_id_(cuda_id), props_(props), gkr_(gkr::cuda_kernels(cuda_id)) {}

    ~cuda_device() override {
        gkr_.reset();  // frees its buffers on its own device
        if (!holds_anything())
            return;  // never used: its GPU is left alone
        std::unique_ptr<device_scope> scope;
        try {
            scope.reset(new device_scope(cuda_id_));
        } catch (...) {
            return;
        }
        if (cache_)
            (void)cudaFree(cache_);
        if (shape_.base)
            (void)cudaFree(shape_.base);
        free_staging();
        if (copy_)
            (void)cudaStreamDestroy(copy_);
        for (cudaEvent_t e : {ev_abc_, ev_rest_})
            if (e)
                (void)cudaEventDestroy(e);
    }

    void bind_thread() override { set_device(cuda_id_); }

    bool touched() const override { return cp_cuda::touched(cuda_id_); }

    cp_device_info info() const override {
        cp_device_info inf;
        std::memset(&inf, 0, sizeof(inf));
        inf.ordinal = ordinal_;
        inf.simulated = 0;
        const cudaDeviceProp &p = props_;
        std::strncpy(inf.name, p.name, sizeof(inf.name) - 1);
        inf.cc_major = p.major;
        inf.cc_minor = p.minor;
        std::unique_ptr<device_scope> scope;
        try {
            scope.reset(new device_scope(cuda_id_));
        } catch (const cuda_error &e) {
            rethrow_sppark(e, cuda_id_);
        }
        size_t free_b = 0, total_b = 0;
        cuda_check(cudaMemGetInfo(&free_b, &total_b), "cudaMemGetInfo");
        inf.free_bytes = std::min<uint64_t>(free_b, memory_limit());
        inf.total_bytes = total_b;
        return inf;
    }

    void prepare(const srs &key, uint64_t num_constraints, const shape *sh) override {
        bind_thread();
        try {
            const size_t m = domain_for(num_constraints);
            const cache_layout L = layout_for(key, m);
            const size_t temp = temp_bytes(L, props_.multiProcessorCount);
            const size_t cache_need = cache_bytes_.load() >= L.total ? 0 : L.total;
            cp_timings t;
            std::memset(&t, 0, sizeof(t));
            ensure_srs(key, temp + cache_need + shape_need(sh), t);
            if (sh)
                ensure_shape(*sh, temp + cache_need);
            ensure_cache(L.total, temp);
            warm_up(key, m, sh);
        } catch (const cuda_error &e) {
            rethrow_sppark(e, cuda_id_);
        }
    }

    // One device part on a synthetic witness of the key's shape (scalars
    // cycling through 0, 1 and a general value; densities set on the first
    // variables), so that every kernel is loaded and the memory pool holds
    // the MSM temporaries before the first real proof. The result is
    // discarded; nothing about the witness matters but its shape.
    void warm_up(const srs &key, size_t m, const shape *sh) {
        const size_t ni = key.ic.size(), na = key.l.size();
        if (ni == 0 || key.a.size() < ni || key.h.size() != m - 1) return;
        const size_t a_aux = key.a.size() - ni;
        const size_t b_in = std::min(ni, key.b_g1.size());
        const size_t b_aux = key.b_g1.size() - b_in;
        if (a_aux > na || b_aux > na || key.b_g2.size() != key.b_g1.size()) return;
        if (m <= warmed_m_ && (!sh || sh->id == warmed_shape_)) return;
        // Distinct pseudo-random general scalars: equal ones would all land
        // in one Pippenger bucket and make the warm-up slow.
        uint64_t state = 0x9e3779b97f4a7c15ULL;
        auto next = [&]() {
            uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
            z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
            z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
            return z ^ (z >> 31);
        };
        blst_fr zero, one;
        const uint64_t lz[4] = {0, 0, 0, 0}, lo[4] = {1, 0, 0, 0};
        blst_fr_from_uint64(&zero, lz);
        blst_fr_from_uint64(&one, lo);
        auto fill = [&](std::vector<blst_fr> &v, size_t n) {
            v.resize(n);
            for (size_t i = 0; i < n; i++) {
                if (i % 3 == 0) {
                    v[i] = zero;
                } else if (i % 3 == 1) {
                    v[i] = one;
                } else {
                    const uint64_t l[4] = {next(), next(), next(), next() >> 4};
                    blst_fr_from_uint64(&v[i], l);
                }
            }
        };
        auto first_bits = [](std::vector<uint64_t> &w, size_t len, size_t set) {
            w.assign((len + 63) / 64 + 1, 0);
            for (size_t i = 0; i < set; i++) w[i / 64] |= uint64_t(1) << (i % 64);
        };
        std::vector<blst_fr> abc, in, aux;
        fill(abc, 3 * m);
        fill(in, ni);
        fill(aux, na);
        in[0] = one;
        std::vector<uint64_t> da, dbi, dba;
        first_bits(da, na, a_aux);
        first_bits(dbi, ni, b_in);
        first_bits(dba, na, b_aux);
        uint32_t lg = 0;
        while ((size_t(1) << lg) < m) lg++;
        circuit_job job;
        job.a = abc.data();
        job.b = job.a + m;
        job.c = job.b + m;
        job.num_constraints = m;
        job.inputs = in.data();
        job.num_inputs = ni;
        job.aux = aux.data();
        job.num_aux = na;
        job.a_aux_density = da.data();
        job.b_input_density = dbi.data();
        job.b_aux_density = dba.data();
        job.lg_domain = lg;
        job.a_aux_count = a_aux;
        job.b_input_count = b_in;
        job.b_aux_count = b_aux;
        device_partials out;
        cp_timings t;
        std::memset(&t, 0, sizeof t);
        run(key, job, out, t);
        warmed_m_ = std::max(warmed_m_, m);
        // The evaluation kernels on the synthetic witness run() left on the
        // device: loaded, result discarded (it satisfies nothing).
        if (sh && sh->num_inputs == ni && sh->num_aux == na) {
            evaluate(*sh, layout_for(key, m));
            gpu_sync_default(gpu());
            warmed_shape_ = sh->id;
        }
    }

    void device_part(const srs &key, const circuit_job &job, device_partials &out,
                     cp_timings &t) override {
        bind_thread();
        try {
            run(key, job, out, t);
        } catch (const cuda_error &e) {
            rethrow_sppark(e, cuda_id_);
        }
    }

    uint64_t trim() override {
        uint64_t freed = 0;
        try {
            freed += gkr_->trim();
        } catch (const cuda_error &e) {
            rethrow_sppark(e, cuda_id_);
        }
        if (!holds_anything())
            return freed;  // never used: nothing else to free, and its GPU is left alone
        std::unique_ptr<device_scope> scope;
        try {
            scope.reset(new device_scope(cuda_id_));
            gpu().sync();
        } catch (const cuda_error &e) {
            rethrow_sppark(e, cuda_id_);
        }
        if (copy_)
            cuda_check(cudaStreamSynchronize(copy_), "cudaStreamSynchronize");
        warmed_m_ = 0;
        warmed_shape_ = 0;
        if (shape_.base) {
            cuda_check(cudaFree(shape_.base), "cudaFree");
            freed += shape_.bytes;
            shape_ = shape_copy{};
        }
        if (cache_) {
            cuda_check(cudaFree(cache_), "cudaFree");
            cache_ = nullptr;
            freed += cache_bytes_.exchange(0);
        }
        free_staging();
        cudaMemPool_t pool;
        if (cudaDeviceGetDefaultMemPool(&pool, cuda_id_) == cudaSuccess)
            (void)cudaMemPoolTrimTo(pool, 0);
        return freed;
    }

    uint64_t cache_bytes() const override { return cache_bytes_.load() + gkr_->bytes(); }

    gkr::kernels &gkr() override { return *gkr_; }
    uint64_t cache_allocations() const override { return cache_allocs_.load(); }
    uint64_t srs_uploads() const override { return srs_uploads_.load(); }

    cp_memory_estimate estimate(const srs &key, uint64_t num_constraints) const override {
        const cache_layout L = layout_for(key, domain_for(num_constraints));
        cp_memory_estimate e;
        e.working_bytes = L.total + temp_bytes(L, props_.multiProcessorCount);
        e.srs_bytes = srs_layout(key).total;
        return e;
    }

private:
    int ordinal_;
    int cuda_id_;
    cudaDeviceProp props_;
    std::unique_ptr<gkr::kernels> gkr_;  // its buffers are part of the working cache
    mutable const gpu_t *gpu_ = nullptr;  // sppark's streams and pool, on first use
    void *cache_ = nullptr;
    size_t warmed_m_ = 0;  // largest domain warm_up ran for since the last trim
    uint64_t warmed_shape_ = 0;  // shape whose evaluation warm_up ran
    shape_copy shape_;           // the resident shape (device mutex held)
    std::atomic<uint64_t> cache_bytes_{0};
    std::atomic<uint64_t> cache_allocs_{0};
    std::atomic<uint64_t> srs_uploads_{0};

    // Pinned staging ring and the copy stream (device mutex held).
    void *stage_[STAGE_BUFS] = {};
    cudaEvent_t stage_ev_[STAGE_BUFS] = {};
    unsigned stage_next_ = 0;
    cudaStream_t copy_ = nullptr;
    cudaEvent_t ev_abc_ = nullptr, ev_rest_ = nullptr;
    std::vector<uint32_t> pre_host_;

    // The device's gpu_t, built the first time (the thread is bound).
    const gpu_t &gpu() const {
        if (!gpu_)
            gpu_ = &cp_cuda::gpu_of(cuda_id_);
        return *gpu_;
    }

    cudaStream_t stream() const { return (cudaStream_t)gpu(); }

    // Whether this device allocated or created anything on its GPU.
    bool holds_anything() const {
        if (gpu_ || cache_ || shape_.base || copy_ || ev_abc_ || ev_rest_)
            return true;
        for (int i = 0; i < STAGE_BUFS; i++)
            if (stage_[i] || stage_ev_[i])
                return true;
        return false;
    }

    // Device memory the core holds on this GPU outside the memory pool.
    uint64_t held_bytes(const srs_copy &dk) const {
        return dk.total + cache_bytes_.load() + shape_.bytes;
    }

    size_t free_bytes() const {
        size_t free_b = 0, total_b = 0;
        cuda_check(cudaMemGetInfo(&free_b, &total_b), "cudaMemGetInfo");
        return std::min<uint64_t>(free_b, memory_limit());
    }

    [[noreturn]] void oom(uint64_t needed, uint64_t free_b) const {
        fail(CP_ERR_OUT_OF_MEMORY, "needs " + mib(needed) + " on device " +
                                       std::to_string(ordinal_) + ", " + mib(free_b) +
                                       " free");
    }

    void free_staging() {
        for (int i = 0; i < STAGE_BUFS; i++) {
            if (stage_ev_[i]) {
                (void)cudaEventSynchronize(stage_ev_[i]);
                (void)cudaEventDestroy(stage_ev_[i]);
                stage_ev_[i] = nullptr;
            }
            if (stage_[i]) {
                (void)cudaFreeHost(stage_[i]);
                stage_[i] = nullptr;
            }
        }
        stage_next_ = 0;
    }

    // Streams, events and the pinned ring; the thread is bound.
    void ensure_staging() {
        if (!copy_)
            cuda_check(cudaStreamCreateWithFlags(&copy_, cudaStreamNonBlocking),
                       "cudaStreamCreate(copy)");
        for (cudaEvent_t *e : {&ev_abc_, &ev_rest_})
            if (!*e)
                cuda_check(cudaEventCreateWithFlags(e, cudaEventDisableTiming), "cudaEventCreate");
        for (int i = 0; i < STAGE_BUFS; i++) {
            if (!stage_[i]) {
                cudaError_t e = cudaHostAlloc(&stage_[i], STAGE_CHUNK, cudaHostAllocDefault);
                if (e != cudaSuccess) {
                    stage_[i] = nullptr;
                    (void)cudaGetLastError();
                    fail(CP_ERR_OUT_OF_MEMORY, "cudaHostAlloc(" + mib(STAGE_CHUNK) +
                                                   " staging buffer): " + cudaGetErrorString(e));
                }
            }
            if (!stage_ev_[i])
                cuda_check(cudaEventCreateWithFlags(&stage_ev_[i], cudaEventDisableTiming),
                           "cudaEventCreate");
        }
    }

    // Queues a host to device copy of `bytes` on the copy stream. `src` may
    // be reused once this returns.
    void stage(void *dst, const void *src, size_t bytes) {
        const char *s = (const char *)src;
        char *d = (char *)dst;
        while (bytes) {
            const size_t len = std::min(bytes, STAGE_CHUNK);
            const unsigned b = stage_next_++ % STAGE_BUFS;
            cuda_check(cudaEventSynchronize(stage_ev_[b]), "staging buffer");
            char *h = (char *)stage_[b];
            if (len <= 2 * STAGE_PIECE) {
                std::memcpy(h, s, len);
            } else {
                const size_t pieces = (len + STAGE_PIECE - 1) / STAGE_PIECE;
                gpu().par_map(pieces, 1, [&](size_t i) {
                    const size_t off = i * STAGE_PIECE;
                    std::memcpy(h + off, s + off, std::min(STAGE_PIECE, len - off));
                });
            }
            cuda_check(cudaMemcpyAsync(d, h, len, cudaMemcpyHostToDevice, copy_), "upload");
            cuda_check(cudaEventRecord(stage_ev_[b], copy_), "cudaEventRecord");
            s += len;
            d += len;
            bytes -= len;
        }
    }

    // The key's device copy, uploaded on first use.
    const srs_copy &ensure_srs(const srs &key, size_t extra_needed, cp_timings &t) {
        {
            std::lock_guard<std::mutex> lock(key.copies_mu);
            if ((size_t)cuda_id_ < key.copies.size() && key.copies[cuda_id_]) {
                auto *c = dynamic_cast<const srs_copy *>(key.copies[cuda_id_].get());
                if (!c)
                    fail(CP_ERR_INTERNAL, "proving key slot " + std::to_string(cuda_id_) +
                                              " holds a copy of another backend");
                return *c;
            }
        }
        const srs_sizes sz = srs_layout(key);
        const size_t free_b = free_bytes();
        if (sz.total + extra_needed > free_b)
            oom(sz.total + extra_needed, free_b);

        const uint64_t t0 = now_ns();
        auto copy = std::make_unique<srs_copy>();
        copy->cuda_id = cuda_id_;
        copy->total = sz.total;
        if (sz.total) {
            void *p = nullptr;
            cudaError_t e = cudaMalloc(&p, sz.total);
            if (e == cudaErrorMemoryAllocation) {
                (void)cudaGetLastError();
                oom(sz.total + extra_needed, free_bytes());
            }
            cuda_check(e, "cudaMalloc(proving key)");
            copy->base = (char *)p;
        }
        char *at = copy->base;
        auto put = [&](const void *src, size_t bytes, size_t slot) -> const void * {
            const void *dst = at;
            if (bytes)
                cuda_check(cudaMemcpyAsync(at, src, bytes, cudaMemcpyHostToDevice, stream()),
                           "upload of the proving key");
            at += slot;
            return dst;
        };
        copy->h = put(key.h.data(), key.h.size() * sizeof(blst_p1_affine), sz.h);
        copy->l = put(key.l.data(), key.l.size() * sizeof(blst_p1_affine), sz.l);
        copy->a = put(key.a.data(), key.a.size() * sizeof(blst_p1_affine), sz.a);
        copy->b_g1 = put(key.b_g1.data(), key.b_g1.size() * sizeof(blst_p1_affine), sz.b_g1);
        copy->b_g2 = put(key.b_g2.data(), key.b_g2.size() * sizeof(blst_p2_affine), sz.b_g2);
        cuda_check(cudaStreamSynchronize(stream()), "upload of the proving key");
        t.upload_ns += now_ns() - t0;

        std::lock_guard<std::mutex> lock(key.copies_mu);
        if (key.copies.size() <= (size_t)cuda_id_)
            key.copies.resize(cuda_id_ + 1);
        if (!key.copies[cuda_id_]) {
            key.copies[cuda_id_] = std::move(copy);
            srs_uploads_++;
        }
        auto *c = dynamic_cast<const srs_copy *>(key.copies[cuda_id_].get());
        if (!c)
            fail(CP_ERR_INTERNAL, "proving key slot holds a copy of another backend");
        return *c;
    }

    // Device bytes that placing `sh` would add.
    size_t shape_need(const shape *sh) const {
        return sh && shape_.id != sh->id ? shape_layout(*sh).total : 0;
    }

    // Makes `sh` the resident shape, replacing another; `extra_needed` is
    // what the caller still has to allocate after it.
    void ensure_shape(const shape &sh, size_t extra_needed) {
        if (shape_.id == sh.id)
            return;
        if (shape_.base) {
            cuda_check(cudaFree(shape_.base), "cudaFree");
            shape_ = shape_copy{};
        }
        const shape_sizes z = shape_layout(sh);
        const size_t free_b = free_bytes();
        if (z.total + extra_needed > free_b)
            oom(z.total + extra_needed, free_b);
        void *p = nullptr;
        cudaError_t e = cudaMalloc(&p, z.total);
        if (e == cudaErrorMemoryAllocation) {
            (void)cudaGetLastError();
            oom(z.total + extra_needed, free_bytes());
        }
        cuda_check(e, "cudaMalloc(shape)");
        shape_copy c;
        c.base = p;
        c.bytes = z.total;
        char *at = (char *)p;
        const shape_matrix *ms[3] = {&sh.a, &sh.b, &sh.c};
        const cudaStream_t zs = stream();
        auto put = [&](const void *src, size_t bytes, size_t slot) {
            char *dst = at;
            if (bytes)
                cuda_check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, zs),
                           "upload of the shape");
            at += slot;
            return dst;
        };
        try {
            for (int i = 0; i < 3; i++)
                c.row_ptr[i] = (const uint64_t *)put(ms[i]->row_ptr.data(),
                                                     ms[i]->row_ptr.size() * sizeof(uint64_t),
                                                     z.row_ptr);
            for (int i = 0; i < 3; i++)
                c.entries[i] = (const shape_entry_raw *)put(
                    ms[i]->entries.data(), ms[i]->entries.size() * sizeof(shape_entry_raw),
                    z.entries[i]);
            c.coeffs = (const fr_raw *)put(sh.coeffs.data(), sh.coeffs.size() * sizeof(fr_raw),
                                           z.coeffs);
            const size_t w_in = (sh.num_inputs + 63) / 64, w_aux = (sh.num_aux + 63) / 64;
            std::vector<uint64_t> bits;
            bits.reserve(2 * w_aux + w_in);
            bits.insert(bits.end(), sh.a_aux_density.begin(), sh.a_aux_density.end());
            bits.insert(bits.end(), sh.b_input_density.begin(), sh.b_input_density.end());
            bits.insert(bits.end(), sh.b_aux_density.begin(), sh.b_aux_density.end());
            std::vector<uint32_t> pre(bits.size());
            word_prefix(pre.data(), sh.a_aux_density.data(), sh.num_aux);
            word_prefix(pre.data() + w_aux, sh.b_input_density.data(), sh.num_inputs);
            word_prefix(pre.data() + w_aux + w_in, sh.b_aux_density.data(), sh.num_aux);
            c.bits = (const uint64_t *)put(bits.data(), bits.size() * sizeof(uint64_t), z.bits);
            c.pre = (const uint32_t *)put(pre.data(), pre.size() * sizeof(uint32_t), z.pre);
            cuda_check(cudaStreamSynchronize(zs), "upload of the shape");
        } catch (...) {
            (void)cudaFree(p);
            throw;
        }
        c.id = sh.id;
        shape_ = c;
    }

    // a, b, c of the resident shape from the witness already on the device
    // (inputs and aux at their cache places), then the row check into bad.
    // Asynchronous on the compute stream.
    void evaluate(const shape &sh, const cache_layout &L) {
        char *base = (char *)cache_;
        fr_raw *d_a = (fr_raw *)(base + L.abc);
        fr_raw *d_in = (fr_raw *)(base + L.in);
        fr_raw *d_aux = (fr_raw *)(base + L.hl) + (L.m - 1);
        const size_t rows = sh.num_constraints;
        for (int i = 0; i < 3; i++)
            eval_rows_async(gpu(), d_a + i * L.m, shape_.row_ptr[i], shape_.entries[i],
                            shape_.coeffs, d_in, (uint32_t)sh.num_inputs, d_aux, rows);
        check_rows_async(gpu(), d_a, d_a + L.m, d_a + 2 * L.m, rows,
                         (uint64_t *)(base + L.bad));
    }

    void ensure_cache(size_t working, size_t temp) {
        const size_t held = cache_bytes_.load();
        const size_t free_b = free_bytes();
        if (held >= working) {
            if (temp > free_b)
                oom(working + temp, free_b + held);
            ensure_staging();
            return;
        }
        if (working + temp > free_b + held)
            oom(working + temp, free_b + held);
        if (cache_) {
            cuda_check(cudaFree(cache_), "cudaFree");
            cache_ = nullptr;
            cache_bytes_ = 0;
        }
        void *p = nullptr;
        cudaError_t e = cudaMalloc(&p, working);
        if (e == cudaErrorMemoryAllocation) {
            (void)cudaGetLastError();
            oom(working + temp, free_bytes());
        }
        cuda_check(e, "cudaMalloc(working cache)");
        cache_ = p;
        cache_bytes_ = working;
        ensure_staging();
        // Keep sppark's per-MSM temporaries mapped in the default pool
        // between MSMs instead of returning them at every synchronization.
        cudaMemPool_t pool;
        if (cudaDeviceGetDefaultMemPool(&pool, cuda_id_) == cudaSuccess) {
            uint64_t thr = temp;
            (void)cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &thr);
        }
        cache_allocs_++;
    }

    void run(const srs &key, const circuit_job &job, device_partials &out, cp_timings &t) {
        const uint64_t t_start = now_ns();
        const size_t m = size_t(1) << job.lg_domain;
        const cache_layout L = layout_for(key, m);
        const size_t temp = temp_bytes(L, props_.multiProcessorCount);
        if (job.num_inputs != L.ni || job.num_aux != L.na ||
            L.ni + job.a_aux_count != L.n_a || job.b_input_count + job.b_aux_count != L.n_b ||
            key.h.size() != m - 1 || key.b_g2.size() != L.n_b)
            fail(CP_ERR_INTERNAL, "circuit and proving key shapes disagree");

        // A first upload of the key or the shape falls in upload_ns through
        // t_start.
        const size_t cache_need = cache_bytes_.load() >= L.total ? 0 : L.total;
        cp_timings key_t{};
        const srs_copy &dk = ensure_srs(key, temp + cache_need + shape_need(job.sh), key_t);
        if (job.sh)
            ensure_shape(*job.sh, temp + cache_need);
        ensure_cache(L.total, temp);
        // The pool's high-water mark from here on measures sppark's
        // temporaries of this device part.
        cudaMemPool_t pool = nullptr;
        if (cudaDeviceGetDefaultMemPool(&pool, cuda_id_) == cudaSuccess) {
            uint64_t zero = 0;
            if (cudaMemPoolSetAttribute(pool, cudaMemPoolAttrUsedMemHigh, &zero) != cudaSuccess)
                pool = nullptr;
        } else {
            pool = nullptr;
        }
        (void)cudaGetLastError();

        char *base = (char *)cache_;
        fr_raw *d_a = (fr_raw *)(base + L.abc);
        fr_raw *d_b = d_a + m;
        fr_raw *d_c = d_b + m;
        fr_raw *d_hl = (fr_raw *)(base + L.hl);
        fr_raw *d_aux = d_hl + (m - 1);
        fr_raw *d_in = (fr_raw *)(base + L.in);
        fr_raw *d_sa = (fr_raw *)(base + L.sa);
        fr_raw *d_sb = (fr_raw *)(base + L.sb);
        const uint64_t *d_bits_a, *d_bits_bi, *d_bits_ba;
        const uint32_t *d_pre;
        const cudaStream_t zs = stream();
        const size_t nc = std::min(job.num_constraints, m);
        uint64_t t_h;

        if (job.sh) {
            // Only the witness goes up; a, b, c are evaluated from the
            // resident shape and checked before H.
            stage(d_aux, job.aux, L.na * sizeof(fr_raw));
            stage(d_in, job.inputs, L.ni * sizeof(fr_raw));
            cuda_check(cudaEventRecord(ev_rest_, copy_), "cudaEventRecord");
            cuda_check(cudaStreamSynchronize(copy_), "upload of the witness");
            const uint64_t t_up = now_ns();
            t.upload_ns += t_up - t_start;
            cuda_check(cudaStreamWaitEvent(zs, ev_rest_, 0), "cudaStreamWaitEvent");
            evaluate(*job.sh, L);
            uint64_t bad = 0;
            cuda_check(cudaMemcpyAsync(&bad, base + L.bad, sizeof bad, cudaMemcpyDeviceToHost, zs),
                       "read of the row check");
            cuda_check(cudaStreamSynchronize(zs), "evaluation of the shape");
            if (bad != UINT64_MAX)
                fail(CP_ERR_UNSATISFIED, "constraint " + std::to_string(bad) +
                                             " is not satisfied by the witness (a*b != c)");
            for (fr_raw *p : {d_a, d_b, d_c})
                if (m > nc)
                    cuda_check(cudaMemsetAsync(p + nc, 0, (m - nc) * sizeof(fr_raw), zs),
                               "cudaMemsetAsync");
            t_h = now_ns();
            t.eval_ns += t_h - t_up;
            compute_h_async(gpu(), d_a, d_b, d_c, job.lg_domain, z_inverse(job.lg_domain));
            d_bits_a = shape_.bits;
            d_bits_bi = d_bits_a + L.w_aux;
            d_bits_ba = d_bits_bi + L.w_in;
            d_pre = shape_.pre;
        } else {
            uint64_t *bits_a = (uint64_t *)(base + L.bits);
            uint64_t *bits_bi = bits_a + L.w_aux;
            uint64_t *bits_ba = bits_bi + L.w_in;
            uint32_t *pre = (uint32_t *)(base + L.pre);
            // a, b, c, zero-padded to the domain, then H on the compute
            // stream while the rest of the witness is copied.
            const blst_fr *src[3] = {job.a, job.b, job.c};
            fr_raw *dst[3] = {d_a, d_b, d_c};
            for (int i = 0; i < 3; i++) {
                stage(dst[i], src[i], nc * sizeof(fr_raw));
                if (m > nc)
                    cuda_check(cudaMemsetAsync(dst[i] + nc, 0, (m - nc) * sizeof(fr_raw), copy_),
                               "cudaMemsetAsync");
            }
            cuda_check(cudaEventRecord(ev_abc_, copy_), "cudaEventRecord");
            cuda_check(cudaStreamWaitEvent(zs, ev_abc_, 0), "cudaStreamWaitEvent");
            compute_h_async(gpu(), d_a, d_b, d_c, job.lg_domain, z_inverse(job.lg_domain));

            stage(d_aux, job.aux, L.na * sizeof(fr_raw));
            stage(d_in, job.inputs, L.ni * sizeof(fr_raw));
            stage(bits_a, job.a_aux_density, L.w_aux * sizeof(uint64_t));
            stage(bits_bi, job.b_input_density, L.w_in * sizeof(uint64_t));
            stage(bits_ba, job.b_aux_density, L.w_aux * sizeof(uint64_t));
            pre_host_.resize(2 * L.w_aux + L.w_in);
            uint32_t *pre_a = pre_host_.data();
            uint32_t *pre_bi = pre_a + L.w_aux;
            uint32_t *pre_ba = pre_bi + L.w_in;
            if (L.na) {
                word_prefix(pre_a, job.a_aux_density, L.na);
                word_prefix(pre_ba, job.b_aux_density, L.na);
            }
            word_prefix(pre_bi, job.b_input_density, L.ni);
            stage(pre, pre_host_.data(), pre_host_.size() * sizeof(uint32_t));
            cuda_check(cudaEventRecord(ev_rest_, copy_), "cudaEventRecord");
            cuda_check(cudaStreamSynchronize(copy_), "upload of the witness");
            t_h = now_ns();
            t.upload_ns += t_h - t_start;
            cuda_check(cudaStreamWaitEvent(zs, ev_rest_, 0), "cudaStreamWaitEvent");
            d_bits_a = bits_a;
            d_bits_bi = bits_bi;
            d_bits_ba = bits_ba;
            d_pre = pre;
        }

        // H's coefficients before aux, and the scalars of A and B gathered
        // by their densities.
        cuda_check(cudaStreamWaitEvent(zs, ev_rest_, 0), "cudaStreamWaitEvent");
        if (m > 1)
            cuda_check(cudaMemcpyAsync(d_hl, d_a, (m - 1) * sizeof(fr_raw),
                                       cudaMemcpyDeviceToDevice, zs),
                       "copy of H");
        if (L.ni)
            cuda_check(cudaMemcpyAsync(d_sa, d_in, L.ni * sizeof(fr_raw),
                                       cudaMemcpyDeviceToDevice, zs),
                       "copy of the inputs");
        launch_compact(zs, d_sa + L.ni, d_aux, d_bits_a, d_pre, L.na);
        launch_compact(zs, d_sb, d_in, d_bits_bi, d_pre + L.w_aux, L.ni);
        launch_compact(zs, d_sb + job.b_input_count, d_aux, d_bits_ba,
                       d_pre + L.w_aux + L.w_in, L.na);
        gpu_sync_default(gpu());
        uint64_t t0 = now_ns();
        t.ntt_ns += t0 - t_h;

        // h + l as one MSM over the adjacent H and L points.
        g1_proj_raw r1;
        g2_proj_raw r2;
        msm_g1_device(gpu(), r1, dk.h, d_hl, L.n_hl);
        std::memcpy(&out.h, &r1, sizeof(r1));
        std::memset(&out.l, 0, sizeof(out.l));  // infinity (Z = 0)
        uint64_t t1 = now_ns();
        t.msm_h_ns += t1 - t0;

        msm_g1_device(gpu(), r1, dk.a, d_sa, L.n_a);
        std::memcpy(&out.a, &r1, sizeof(r1));
        t0 = now_ns();
        t.msm_a_ns += t0 - t1;

        msm_g1_device(gpu(), r1, dk.b_g1, d_sb, L.n_b);
        std::memcpy(&out.b_g1, &r1, sizeof(r1));
        t1 = now_ns();
        t.msm_b_g1_ns += t1 - t0;

        msm_g2_device(gpu(), r2, dk.b_g2, d_sb, L.n_b);
        std::memcpy(&out.b_g2, &r2, sizeof(r2));
        t.msm_b_g2_ns += now_ns() - t1;

        uint64_t pool_high = 0;
        if (pool) {
            uint64_t high = 0, used = 0;
            if (cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemHigh, &high) == cudaSuccess &&
                cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used) == cudaSuccess)
                pool_high = std::max<uint64_t>(high, used);
            (void)cudaGetLastError();
        }
        t.peak_device_bytes = std::max<uint64_t>(t.peak_device_bytes, held_bytes(dk) + pool_high);
        t.estimated_device_bytes = std::max<uint64_t>(
            t.estimated_device_bytes, dk.total + L.total + temp + (job.sh ? shape_.bytes : 0));
    }
};

}  // namespace

int cuda_visible_count(std::string *why) { return cp_cuda::visible_devices(why); }

std::vector<int> cuda_usable_devices(std::string *why) {
    std::string reason;
    const int n = cp_cuda::visible_devices(&reason);
    std::vector<int> ids = cp_cuda::usable_devices();
    if (why) {
        if (n == 0)
            *why = reason;
        else if (ids.size() < (size_t)n)
            *why = std::to_string(n - ids.size()) + " of " + std::to_string(n) +
                   " CUDA devices lack compute capability 7.0 or cooperative launch";
    }
    return ids;
}

int cuda_device_count(std::string *why) { return (int)cuda_usable_devices(why).size(); }

cp_device_info cuda_device_info(int cuda_id) {
    cp_device_info inf;
    std::memset(&inf, 0, sizeof(inf));
    cudaDeviceProp p;
    if (cudaGetDeviceProperties(&p, cuda_id) != cudaSuccess) {
        const cudaError_t e = cudaGetLastError();
        fail(CP_ERR_DEVICE, "CUDA device " + std::to_string(cuda_id) + ": " + cudaGetErrorString(e));
    }
    inf.ordinal = cuda_id;
    std::strncpy(inf.name, p.name, sizeof(inf.name) - 1);
    inf.cc_major = p.major;
    inf.cc_minor = p.minor;
    inf.total_bytes = p.totalGlobalMem;
    return inf;
}

std::vector<int> cuda_claim(std::vector<int> ids) {
    const std::string why = cp_cuda::claim_devices(ids);
    if (!why.empty())
        fail(CP_ERR_DEVICE_INDEX, "cp_context_new: " + why);
    return ids;
}

std::unique_ptr<device> cuda_device_for(int cuda_id) {
    cudaDeviceProp p;
    if (!cp_cuda::usable_device(cuda_id, &p))
        fail(CP_ERR_DEVICE, "CUDA device " + std::to_string(cuda_id) + " is not usable");
    return std::unique_ptr<device>(new cuda_device(cuda_id, p));
}

bool cuda_touched(int cuda_id) { return cp_cuda::touched(cuda_id); }

}  // namespace cp
