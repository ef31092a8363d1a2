// Owns: the HOST backend (cp::host_devices): simulated devices that run the
// device part of a proof on CPU threads (with a shape: a, b, c evaluated
// from the witness and checked first). Each device keeps a working cache
// (the three polynomial buffers and the domain twiddles) that is reused
// between proofs, grown when needed and freed by trim(). The host backend
// never copies the proving key, so srs_uploads stays 0.
#include <sys/sysinfo.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>

#include "backend.hpp"
#include "field.hpp"
#include "gkr/kernels.hpp"
#include "host/host_device.hpp"
#include "host/msm.hpp"
#include "host/ntt.hpp"
#include "r1cs.hpp"

namespace cp {
namespace host {

namespace {

uint64_t elapsed_ns(std::chrono::steady_clock::time_point t0) {
    return static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0)
            .count());
}

// Reusable buffers of one host device. Guarded by the device's mutex (the
// orchestration serializes device_part and trim); the counters are atomic so
// statistics can be read at any time.
struct working_cache {
    std::unique_ptr<blst_fr[]> a, b, c;  // capacity `cap` each
    std::unique_ptr<blst_fr[]> fwd, inv; // twiddle_count(tw_lg) each
    size_t cap = 0;
    size_t tw_cap = 0;
    int tw_lg = -1;  // domain the twiddles are for; -1 none

    std::atomic<uint64_t> bytes{0};
    std::atomic<uint64_t> allocations{0};

    void update_bytes() { bytes = (3 * cap + 2 * tw_cap) * sizeof(blst_fr); }

    // Counts one allocation per call that (re)allocates anything.
    void ensure(uint32_t lg, int threads) {
        size_t m = size_t(1) << lg;
        bool allocated = false;
        if (cap < m) {
            a.reset();
            b.reset();
            c.reset();
            cap = 0;
            update_bytes();
            a.reset(new blst_fr[m]);
            b.reset(new blst_fr[m]);
            c.reset(new blst_fr[m]);
            cap = m;
            allocated = true;
            update_bytes();
        }
        if (tw_lg != static_cast<int>(lg)) {
            size_t n = twiddle_count(lg);
            if (tw_cap < n) {
                fwd.reset();
                inv.reset();
                tw_cap = 0;
                tw_lg = -1;
                update_bytes();
                fwd.reset(new blst_fr[n]);
                inv.reset(new blst_fr[n]);
                tw_cap = n;
                allocated = true;
                update_bytes();
            }
            domain_twiddles(lg, fwd.get(), inv.get(), threads);
            tw_lg = static_cast<int>(lg);
        }
        if (allocated) allocations++;
    }

    uint64_t release() {
        uint64_t freed = bytes;
        a.reset();
        b.reset();
        c.reset();
        fwd.reset();
        inv.reset();
        cap = tw_cap = 0;
        tw_lg = -1;
        bytes = 0;
        return freed;
    }
};

void copy_padded(blst_fr *dst, const blst_fr *src, size_t n, size_t m) {
    if (n) std::memcpy(dst, src, n * sizeof(blst_fr));
    if (m > n) std::memset(dst + n, 0, (m - n) * sizeof(blst_fr));
}

void pad_zero(blst_fr *dst, size_t n, size_t m) {
    if (m > n) std::memset(dst + n, 0, (m - n) * sizeof(blst_fr));
}

class host_device final : public device {
public:
    host_device(int ordinal, int threads)
        : ordinal_(ordinal), threads_(threads), gkr_(gkr::host_kernels(threads)) {}

    void bind_thread() override { touched_ = true; }
    bool touched() const override { return touched_.load(); }

    cp_device_info info() const override {
        cp_device_info d;
        std::memset(&d, 0, sizeof d);
        d.ordinal = ordinal_;
        d.simulated = 1;
        std::snprintf(d.name, sizeof d.name, "host-sim-%d", ordinal_);
        struct sysinfo si;
        if (sysinfo(&si) == 0) {
            d.free_bytes = std::min<uint64_t>(static_cast<uint64_t>(si.freeram) * si.mem_unit,
                                              memory_limit());
            d.total_bytes = static_cast<uint64_t>(si.totalram) * si.mem_unit;
        }
        return d;
    }

    void prepare(const srs &key, uint64_t num_constraints, const shape *) override {
        touched_ = true;
        // Callers bound num_constraints by 2^MAX_LG_DOMAIN.
        const uint32_t lg = domain_lg_of(num_constraints);
        check_memory(key, num_constraints);
        cache_.ensure(lg, threads_);
    }

    void device_part(const srs &key, const circuit_job &job, device_partials &out,
                     cp_timings &t) override {
        const uint32_t lg = job.lg_domain;
        const size_t m = size_t(1) << lg;
        const size_t n = job.num_constraints;
        touched_ = true;
        check_memory(key, n);
        cache_.ensure(lg, threads_);
        blst_fr *a = cache_.a.get(), *b = cache_.b.get(), *c = cache_.c.get();

        // a, b, c: given, or evaluated from the shape and checked.
        auto t0 = std::chrono::steady_clock::now();
        if (job.sh) {
            eval_rows(*job.sh, job.sh->a, job.inputs, job.aux, a, threads_);
            eval_rows(*job.sh, job.sh->b, job.inputs, job.aux, b, threads_);
            eval_rows(*job.sh, job.sh->c, job.inputs, job.aux, c, threads_);
            const size_t bad = first_unsatisfied(a, b, c, n, threads_);
            if (bad != SIZE_MAX)
                fail(CP_ERR_UNSATISFIED, "constraint " + std::to_string(bad) +
                                             " is not satisfied by the witness (a*b != c)");
            pad_zero(a, n, m);
            pad_zero(b, n, m);
            pad_zero(c, n, m);
            t.eval_ns = elapsed_ns(t0);
        } else {
            copy_padded(a, job.a, n, m);
            copy_padded(b, job.b, n, m);
            copy_padded(c, job.c, n, m);
        }

        // H.
        t0 = std::chrono::steady_clock::now();
        compute_h(a, b, c, lg, cache_.fwd.get(), cache_.inv.get(), threads_);
        t.ntt_ns = elapsed_ns(t0);
        t.upload_ns = 0;

        uint64_t add_ns = 0;
        t0 = std::chrono::steady_clock::now();
        out.h = msm_g1(key.h.data(), cache_.a.get(), m - 1, nullptr, threads_, &add_ns);
        t.msm_h_ns = elapsed_ns(t0);

        const blst_fr *inputs = job.inputs;
        const blst_fr *aux = job.aux;
        const size_t ni = job.num_inputs, na = job.num_aux;

        t0 = std::chrono::steady_clock::now();
        out.l = msm_g1(key.l.data(), aux, na, nullptr, threads_, &add_ns);
        t.msm_l_ns = elapsed_ns(t0);

        t0 = std::chrono::steady_clock::now();
        {
            blst_p1 in = msm_g1(key.a.data(), inputs, ni, nullptr, threads_, &add_ns);
            blst_p1 ax = msm_g1(key.a.data() + ni, aux, na, job.a_aux_density, threads_, &add_ns);
            blst_p1_add_or_double(&out.a, &in, &ax);
        }
        t.msm_a_ns = elapsed_ns(t0);

        const size_t bi = job.b_input_count;
        t0 = std::chrono::steady_clock::now();
        {
            blst_p1 in = msm_g1(key.b_g1.data(), inputs, ni, job.b_input_density, threads_, &add_ns);
            blst_p1 ax = msm_g1(key.b_g1.data() + bi, aux, na, job.b_aux_density, threads_, &add_ns);
            blst_p1_add_or_double(&out.b_g1, &in, &ax);
        }
        t.msm_b_g1_ns = elapsed_ns(t0);

        t0 = std::chrono::steady_clock::now();
        {
            blst_p2 in = msm_g2(key.b_g2.data(), inputs, ni, job.b_input_density, threads_, &add_ns);
            blst_p2 ax = msm_g2(key.b_g2.data() + bi, aux, na, job.b_aux_density, threads_, &add_ns);
            blst_p2_add_or_double(&out.b_g2, &in, &ax);
        }
        t.msm_b_g2_ns = elapsed_ns(t0);
        t.batch_add_ns = add_ns;
        // Measured: what the working cache holds; estimated: the backend's
        // estimate of the working set.
        t.peak_device_bytes = std::max<uint64_t>(t.peak_device_bytes, cache_.bytes);
        t.estimated_device_bytes = estimate(key, n).working_bytes;
    }

    uint64_t trim() override { return cache_.release() + gkr_->trim(); }
    uint64_t cache_bytes() const override { return cache_.bytes + gkr_->bytes(); }

    gkr::kernels &gkr() override {
        touched_ = true;
        return *gkr_;
    }
    uint64_t cache_allocations() const override { return cache_.allocations; }
    uint64_t srs_uploads() const override { return 0; }

    cp_memory_estimate estimate(const srs &key, uint64_t num_constraints) const override {
        return host::estimate(key, num_constraints);
    }

private:
    int ordinal_;
    int threads_;
    working_cache cache_;
    std::unique_ptr<gkr::kernels> gkr_;
    std::atomic<bool> touched_{false};

    void check_memory(const srs &key, uint64_t num_constraints) const {
        const cp_memory_estimate need = estimate(key, num_constraints);
        if (need.working_bytes > memory_limit()) {
            fail(CP_ERR_OUT_OF_MEMORY,
                 "needs " + std::to_string(need.working_bytes >> 20) + " MiB on device " +
                     std::to_string(ordinal_) + ", " + std::to_string(memory_limit() >> 20) +
                     " MiB free (memory limit)");
        }
    }
};

}  // namespace

cp_memory_estimate estimate(const srs &key, uint64_t num_constraints) {
    // The domain: the smallest power of two >= num_constraints, computed
    // without a loop (a doubling loop never ends above 2^63) and in 128 bits
    // so that the byte counts saturate instead of wrapping.
    using u128 = unsigned __int128;
    const u128 m = num_constraints <= 1 ? u128(1) : u128(1) << (64 - __builtin_clzll(num_constraints - 1));
    const u128 fr = sizeof(blst_fr);
    // Polynomials and twiddles (the working cache), plus the largest MSM's
    // gathered pointer/scalar lists.
    const u128 biggest = std::max<uint64_t>(
        {static_cast<uint64_t>(key.h.size()), static_cast<uint64_t>(key.l.size()),
         static_cast<uint64_t>(key.a.size()), static_cast<uint64_t>(key.b_g1.size())});
    const u128 g1 = u128(key.ic.size()) + key.h.size() + key.l.size() + key.a.size() + key.b_g1.size();
    auto sat = [](u128 v) { return v > UINT64_MAX ? UINT64_MAX : static_cast<uint64_t>(v); };
    cp_memory_estimate e;
    e.working_bytes = sat(4 * m * fr + biggest * (sizeof(void *) + sizeof(blst_scalar)));
    e.srs_bytes = sat(g1 * sizeof(blst_p1_affine) + u128(key.b_g2.size()) * sizeof(blst_p2_affine));
    return e;
}

}  // namespace host

std::unique_ptr<device> host_device(int ordinal, int threads) {
    return std::unique_ptr<device>(new host::host_device(ordinal, threads));
}

}  // namespace cp
