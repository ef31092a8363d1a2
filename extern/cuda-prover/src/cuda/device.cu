// The CUDA backend: one cp::device per usable GPU. Each device keeps the
// proving keys it has seen in device memory (srs::copies, by CUDA ordinal)
// and a working cache reused between proofs; it runs H and the five MSMs of
// a circuit on its own GPU and streams.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <future>
#include <string>
#include <vector>

#include <cuda_runtime.h>

#include "backend.hpp"
#include "gpu_ops.hpp"

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

// Scoped cudaSetDevice that restores the previous device.
class device_scope {
    int prev_ = -1;
public:
    explicit device_scope(int id) {
        (void)cudaGetDevice(&prev_);
        cuda_check(cudaSetDevice(id), "cudaSetDevice(" + std::to_string(id) + ")");
    }
    ~device_scope() {
        if (prev_ >= 0)
            (void)cudaSetDevice(prev_);
    }
};

struct srs_sizes {
    size_t h, l, a, b_g1, b_g2, total;
};

srs_sizes srs_layout(const srs &key) {
    srs_sizes s;
    s.h = align256(key.h.size() * sizeof(blst_p1_affine));
    s.l = align256(key.l.size() * sizeof(blst_p1_affine));
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
            int prev = -1;
            (void)cudaGetDevice(&prev);
            (void)cudaSetDevice(cuda_id);
            (void)cudaFree(base);
            if (prev >= 0)
                (void)cudaSetDevice(prev);
        }
    }
    uint64_t bytes() const override { return total; }
};

size_t working_bytes(size_t m, size_t n_max, int sm_count) {
    return std::max(align256(3 * m * sizeof(fr_raw)), sparse_scratch_bytes(n_max, sm_count));
}

size_t temp_bytes(size_t m, size_t n_max, int sm_count) {
    return msm_temp_bytes(std::max(m, n_max), true, sm_count);
}

inline bool bit(const uint64_t *bits, size_t i) { return (bits[i / 64] >> (i % 64)) & 1; }

// Appends src[i] for the set bits i of `density` (count bits).
void append_filtered(std::vector<fr_raw> &dst, const cp_fr *src, size_t count,
                     const uint64_t *density) {
    const fr_raw *s = reinterpret_cast<const fr_raw *>(src);
    for (size_t i = 0; i < count; i++)
        if (bit(density, i))
            dst.push_back(s[i]);
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

class cuda_device final : public device {
public:
    cuda_device(int ordinal, const gpu_t *gpu)
        : ordinal_(ordinal), cuda_id_(gpu->cid()), gpu_(gpu) {}

    ~cuda_device() override {
        if (cache_) {
            int prev = -1;
            (void)cudaGetDevice(&prev);
            (void)cudaSetDevice(cuda_id_);
            (void)cudaFree(cache_);
            if (prev >= 0)
                (void)cudaSetDevice(prev);
        }
    }

    void bind_thread() override {
        cuda_check(cudaSetDevice(cuda_id_), "cudaSetDevice(" + std::to_string(cuda_id_) + ")");
    }

    cp_device_info info() const override {
        cp_device_info inf;
        std::memset(&inf, 0, sizeof(inf));
        inf.ordinal = ordinal_;
        inf.simulated = 0;
        const cudaDeviceProp &p = gpu_->props();
        std::strncpy(inf.name, p.name, sizeof(inf.name) - 1);
        inf.cc_major = p.major;
        inf.cc_minor = p.minor;
        device_scope scope(cuda_id_);
        size_t free_b = 0, total_b = 0;
        cuda_check(cudaMemGetInfo(&free_b, &total_b), "cudaMemGetInfo");
        inf.free_bytes = std::min<uint64_t>(free_b, memory_limit());
        inf.total_bytes = total_b;
        return inf;
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
        device_scope scope(cuda_id_);
        uint64_t freed = 0;
        try {
            gpu_->sync();
        } catch (const cuda_error &e) {
            rethrow_sppark(e, cuda_id_);
        }
        if (cache_) {
            cuda_check(cudaFree(cache_), "cudaFree");
            cache_ = nullptr;
            freed = cache_bytes_.exchange(0);
        }
        cudaMemPool_t pool;
        if (cudaDeviceGetDefaultMemPool(&pool, cuda_id_) == cudaSuccess)
            (void)cudaMemPoolTrimTo(pool, 0);
        return freed;
    }

    uint64_t cache_bytes() const override { return cache_bytes_.load(); }
    uint64_t cache_allocations() const override { return cache_allocs_.load(); }
    uint64_t srs_uploads() const override { return srs_uploads_.load(); }

    cp_memory_estimate estimate(const srs &key, uint64_t num_constraints) const override {
        size_t m = 1;
        while (m < num_constraints)
            m <<= 1;
        const size_t n_max = std::max({key.l.size(), key.a.size(), key.b_g1.size(), size_t(1)});
        cp_memory_estimate e;
        e.working_bytes = working_bytes(m, n_max, gpu_->sm_count()) +
                          temp_bytes(m, n_max, gpu_->sm_count());
        e.srs_bytes = srs_layout(key).total;
        return e;
    }

private:
    int ordinal_;
    int cuda_id_;
    const gpu_t *gpu_;
    void *cache_ = nullptr;
    std::atomic<uint64_t> cache_bytes_{0};
    std::atomic<uint64_t> cache_allocs_{0};
    std::atomic<uint64_t> srs_uploads_{0};

    cudaStream_t stream() const { return (cudaStream_t)(*gpu_); }

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

    void ensure_cache(size_t working, size_t temp) {
        const size_t held = cache_bytes_.load();
        const size_t free_b = free_bytes();
        if (held >= working) {
            if (temp > free_b)
                oom(working + temp, free_b + held);
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
        cache_allocs_++;
    }

    void run(const srs &key, const circuit_job &job, device_partials &out, cp_timings &t) {
        const cp_circuit &c = *job.c;
        const int sm = gpu_->sm_count();
        const size_t m = size_t(1) << job.lg_domain;
        const size_t n_max =
            std::max({key.l.size(), key.a.size(), key.b_g1.size(), key.b_g2.size(), size_t(1)});
        const size_t working = working_bytes(m, n_max, sm);
        const size_t temp = temp_bytes(m, n_max, sm);

        const bool have_cache = cache_bytes_.load() >= working;
        const srs_copy &dk = ensure_srs(key, temp + (have_cache ? 0 : working), t);
        ensure_cache(working, temp);

        // a, b, c evaluations, zero-padded to the domain.
        uint64_t t0 = now_ns();
        fr_raw *d_a = (fr_raw *)cache_;
        fr_raw *d_b = d_a + m;
        fr_raw *d_c = d_b + m;
        const size_t nc = std::min(c.num_constraints, m);
        const cp_fr *src[3] = {c.a, c.b, c.c};
        fr_raw *dst[3] = {d_a, d_b, d_c};
        for (int i = 0; i < 3; i++) {
            if (nc)
                cuda_check(cudaMemcpyAsync(dst[i], src[i], nc * sizeof(fr_raw),
                                           cudaMemcpyHostToDevice, stream()),
                           "upload of a/b/c");
            if (m > nc)
                cuda_check(cudaMemsetAsync(dst[i] + nc, 0, (m - nc) * sizeof(fr_raw), stream()),
                           "cudaMemsetAsync");
        }
        cuda_check(cudaStreamSynchronize(stream()), "upload of a/b/c");
        t.upload_ns += now_ns() - t0;

        t0 = now_ns();
        compute_h_async(*gpu_, d_a, d_b, d_c, job.lg_domain, z_inverse(job.lg_domain));
        gpu_sync_default(*gpu_);
        t.ntt_ns += now_ns() - t0;

        // The MSM plans (0/1/other split of each MSM's scalars), one host
        // thread each for A and B while this one does L.
        const fr_raw *inputs = reinterpret_cast<const fr_raw *>(c.inputs);
        const fr_raw *aux = reinterpret_cast<const fr_raw *>(c.aux);
        msm_plan plan_l, plan_a, plan_b, plan_b2;
        std::vector<fr_raw> sa, sb;
        const bool b2_same = key.b_g2.size() == key.b_g1.size();
        auto fut_a = std::async(std::launch::async, [&] {
            sa.reserve(key.a.size());
            sa.insert(sa.end(), inputs, inputs + c.num_inputs);
            append_filtered(sa, c.aux, c.num_aux, c.a_aux_density);
            make_plan(plan_a, sa.data(), std::min(sa.size(), key.a.size()));
        });
        auto fut_b = std::async(std::launch::async, [&] {
            sb.reserve(key.b_g1.size());
            append_filtered(sb, c.inputs, c.num_inputs, c.b_input_density);
            append_filtered(sb, c.aux, c.num_aux, c.b_aux_density);
            make_plan(plan_b, sb.data(), std::min(sb.size(), key.b_g1.size()));
            if (!b2_same)
                make_plan(plan_b2, sb.data(), std::min(sb.size(), key.b_g2.size()));
        });
        make_plan(plan_l, aux, std::min(c.num_aux, key.l.size()));
        fut_a.get();
        fut_b.get();

        g1_proj_raw r1;
        g2_proj_raw r2;
        t0 = now_ns();
        const size_t n_h = m > 0 ? std::min(m - 1, key.h.size()) : 0;
        msm_g1_device(*gpu_, r1, dk.h, d_a, n_h);
        std::memcpy(&out.h, &r1, sizeof(r1));
        t.msm_h_ns += now_ns() - t0;

        // a/b/c are dead: the cache becomes MSM scratch.
        const scratch_t scratch{cache_, cache_bytes_.load()};
        msm_times tl, ta, tb1, tb2;
        msm_g1_plan(*gpu_, r1, dk.l, plan_l, scratch, tl);
        std::memcpy(&out.l, &r1, sizeof(r1));
        msm_g1_plan(*gpu_, r1, dk.a, plan_a, scratch, ta);
        std::memcpy(&out.a, &r1, sizeof(r1));
        msm_g1_plan(*gpu_, r1, dk.b_g1, plan_b, scratch, tb1);
        std::memcpy(&out.b_g1, &r1, sizeof(r1));
        msm_g2_plan(*gpu_, r2, dk.b_g2, b2_same ? plan_b : plan_b2, scratch, tb2);
        std::memcpy(&out.b_g2, &r2, sizeof(r2));

        t.msm_l_ns += tl.msm_ns;
        t.msm_a_ns += ta.msm_ns;
        t.msm_b_g1_ns += tb1.msm_ns;
        t.msm_b_g2_ns += tb2.msm_ns;
        t.batch_add_ns += tl.batch_add_ns + ta.batch_add_ns + tb1.batch_add_ns + tb2.batch_add_ns;
        t.peak_device_bytes =
            std::max<uint64_t>(t.peak_device_bytes, dk.total + cache_bytes_.load() + temp);
    }
};

}  // namespace

int cuda_device_count(std::string *why) {
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        if (why)
            *why = std::string("CUDA runtime: ") + cudaGetErrorString(e);
        return 0;
    }
    if (n == 0) {
        if (why)
            *why = "no CUDA device visible";
        return 0;
    }
    size_t usable = 0;
    try {
        usable = ngpus();
    } catch (const cuda_error &err) {
        if (why)
            *why = std::string("CUDA device setup failed: ") + err.what();
        return 0;
    }
    if (why && usable < (size_t)n)
        *why = std::to_string(n - usable) + " of " + std::to_string(n) +
               " CUDA devices lack compute capability 7.0 or cooperative launch";
    return (int)usable;
}

std::vector<std::unique_ptr<device>> cuda_devices() {
    std::string why;
    const int n = cuda_device_count(&why);
    if (n == 0)
        fail(CP_ERR_DEVICE, "no usable CUDA device: " + why);
    std::vector<std::unique_ptr<device>> out;
    try {
        const auto &gpus = all_gpus();
        for (int i = 0; i < n && (size_t)i < gpus.size(); i++)
            out.push_back(std::make_unique<cuda_device>(i, gpus[i]));
    } catch (const cuda_error &e) {
        fail(CP_ERR_DEVICE, std::string("CUDA device setup failed: ") + e.what());
    }
    return out;
}

}  // namespace cp
