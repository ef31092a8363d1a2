// Owns: the HOST backend (cp::host_devices): simulated devices that run the
// device part of a proof on CPU threads (with a shape: a, b, c evaluated
// from the witness and checked first). Each device keeps a working cache
// (the three polynomial buffers and the domain twiddles) that is reused
// between proofs, grown when needed and freed by trim(). The host backend
// never copies the proving key, so srs_uploads stays 0; under a memory
// limit it simulates a device: when the key and the working set do not fit
// the limit together, the key's bases are streamed in chunks through two
// bounded buffers (stream_plan.hpp, host/streamed_msm.hpp), with the same
// decisions a GPU takes, and proofs waiting with the same key share one
// pass over its chunks (device::shared_part).
#include <sys/sysinfo.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "backend.hpp"
#include "field.hpp"
#include "gkr/kernels.hpp"
#include "host/host_device.hpp"
#include "host/msm.hpp"
#include "host/ntt.hpp"
#include "host/point_batch.hpp"
#include "host/streamed_msm.hpp"
#include "r1cs.hpp"
#include "stream_plan.hpp"

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

std::string mib(uint64_t b) {
    return std::to_string(b / (1 << 20)) + "." + std::to_string((b % (1 << 20)) * 10 / (1 << 20)) +
           " MiB";
}

void *host_witness_alloc(size_t bytes) {
    return ::operator new(bytes, std::align_val_t(256), std::nothrow);
}
void host_witness_free(void *p) { ::operator delete(p, std::align_val_t(256)); }

// Lent witness buffers: plain host memory (the host backend reads the
// witness where it is either way; lending keeps the orchestration's path
// the same on both backends). At most this many bytes.
constexpr uint64_t HOST_WITNESS_POOL_BYTES = uint64_t(1) << 30;

// A lent witness buffer; nothing to start early.
class host_witness_lease final : public witness_lease {
public:
    explicit host_witness_lease(std::unique_ptr<witness_buffer> b) : b_(std::move(b)) {}
    blst_fr *inputs() const override { return b_->inputs(); }
    blst_fr *aux() const override { return b_->aux(); }

private:
    std::unique_ptr<witness_buffer> b_;
};

class host_device final : public device, public groth16_device {
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

    std::unique_ptr<witness_lease> lend_witness(size_t num_inputs, size_t num_aux) override {
        auto b = witnesses_.lend(num_inputs, num_aux);
        if (!b) return nullptr;
        return std::unique_ptr<witness_lease>(new host_witness_lease(std::move(b)));
    }

    void generator_multiples(bool g2, const blst_fr *scalars, size_t n, void *out) override {
        touched_ = true;
        host::generator_multiples(g2, scalars, n, out, threads_);
    }

    size_t first_outside_subgroup(bool g2, const void *points, size_t n) override {
        touched_ = true;
        return host::first_outside_subgroup(g2, points, n, threads_);
    }

    void prepare(const srs &key, uint64_t num_constraints, const shape *) override {
        touched_ = true;
        // Callers bound num_constraints by 2^MAX_LG_DOMAIN.
        const uint32_t lg = domain_lg_of(num_constraints);
        stream_plan plan;
        if (check_memory(key, num_constraints, plan))
            stream_.ensure(plan.buffer_bytes);
        cache_.ensure(lg, threads_);
    }

    std::unique_ptr<device_tail> device_part(const srs &key, const circuit_job &job,
                                             device_partials &out, cp_timings &t) override {
        const size_t m = size_t(1) << job.lg_domain;
        const size_t n = job.num_constraints;
        touched_ = true;
        stream_plan plan;
        const bool streamed = check_memory(key, n, plan);
        if (streamed) {
            const circuit_job *jobs[1] = {&job};
            device_partials *outs[1] = {&out};
            cp_timings *ts[1] = {&t};
            std::exception_ptr err;
            streamed_parts(key, jobs, 1, plan, outs, ts, &err);
            if (err) std::rethrow_exception(err);
            return nullptr;
        }
        front(job, t);

        stream_.release();
        t.stream_chunks = 0;
        t.stream_buffer_bytes = 0;
        t.stream_shared = 0;
        uint64_t add_ns = 0;
        auto t0 = std::chrono::steady_clock::now();
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
        return nullptr;  // the host's work is done when it returns
    }

    size_t shared_pass_limit(const srs &key, const circuit_job &first, size_t n) override {
        stream_plan single, plan;
        const size_t wanted = stream_share_wanted(stream_sharing(), cost_, &key, n);
        if (wanted < 2 || !check_memory(key, first.num_constraints, single)) return 1;
        return share_plan(key, first.num_constraints, single, wanted, plan);
    }

    void shared_part(const srs &key, const circuit_job *const *jobs, size_t n,
                     device_partials *const *outs, cp_timings *const *ts,
                     std::exception_ptr *errs) override {
        touched_ = true;
        stream_plan single, plan;
        if (!check_memory(key, jobs[0]->num_constraints, single))
            fail(CP_ERR_INTERNAL, "a shared pass over a key that is not streamed");
        const size_t most = share_plan(key, jobs[0]->num_constraints, single, n, plan);
        if (most < n)
            fail(CP_ERR_INTERNAL, "a shared pass of " + std::to_string(n) + " proofs, " +
                                      std::to_string(most) + " fit");
        streamed_parts(key, jobs, n, plan, outs, ts, errs);
    }

    uint64_t trim() override {
        const uint64_t streaming = 2 * stream_.bytes;
        stream_.release();
        sets_ = std::vector<scalar_set>();
        witnesses_.release_idle();  // host memory outside the cache: not counted
        return cache_.release() + streaming + gkr_->trim();
    }
    uint64_t cache_bytes() const override { return cache_.bytes + gkr_->bytes(); }
    uint64_t held_bytes() const override { return cache_bytes() + 2 * stream_.bytes; }

    groth16_device &groth16() override { return *this; }

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
    stream_buffers stream_;        // the chunk buffers of streamed proofs
    // A streamed pass's MSM scalars per proof: H's (but for the last proof,
    // whose stay in the working cache), A's and B's gathered by density.
    struct scalar_set {
        std::vector<blst_fr> h, sa, sb;
    };
    std::vector<scalar_set> sets_;
    stream_cost cost_;  // of the last streamed pass (stream_share_pays)
    std::unique_ptr<gkr::kernels> gkr_;
    witness_pool witnesses_{host_witness_alloc, host_witness_free, HOST_WITNESS_POOL_BYTES};
    std::atomic<bool> touched_{false};

    // Whether a proof streams the key's bases (the plan in `plan`) or keeps
    // the key resident; CP_ERR_OUT_OF_MEMORY when neither fits the limit.
    bool check_memory(const srs &key, uint64_t num_constraints, stream_plan &plan) const {
        const uint64_t limit = memory_limit();
        const cp_memory_estimate need = estimate(key, num_constraints);
        if (need.srs_bytes <= limit && need.working_bytes <= limit - need.srs_bytes)
            return false;
        if (plan_stream(plan, limit, streamed_fixed_bytes(key, num_constraints), msm_sizes_of(key),
                        no_temp))
            return true;
        fail(CP_ERR_OUT_OF_MEMORY,
             "needs " + mib(need.streamed_bytes) + " on device " + std::to_string(ordinal_) +
                 ", " + mib(limit) + " free (memory limit): the key (" + mib(need.srs_bytes) +
                 ") does not fit next to the working set (" + mib(need.working_bytes) +
                 ") and streaming it in chunks needs at least " + mib(need.streamed_bytes));
    }

    // The MSM scalars a proof past the first keeps while a shared pass
    // streams: H's, A's and B's (L's are the caller's aux).
    static uint64_t set_bytes(const srs &key) {
        return (uint64_t(key.h.size()) + key.a.size() + key.b_g1.size()) * sizeof(blst_fr);
    }

    // How many of n proofs share one pass (stream_plan.hpp), its plan in p.
    size_t share_plan(const srs &key, uint64_t num_constraints, const stream_plan &single,
                      size_t n, stream_plan &p) const {
        return plan_shared(p, single, n, memory_limit(), streamed_fixed_bytes(key, num_constraints),
                           set_bytes(key), msm_sizes_of(key), no_temp);
    }

    // a, b, c (given, or evaluated from the shape and checked) and H's
    // coefficients into the working cache's a.
    void front(const circuit_job &job, cp_timings &t) {
        const uint32_t lg = job.lg_domain;
        const size_t m = size_t(1) << lg;
        const size_t n = job.num_constraints;
        cache_.ensure(lg, threads_);
        blst_fr *a = cache_.a.get(), *b = cache_.b.get(), *c = cache_.c.get();
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
        t0 = std::chrono::steady_clock::now();
        compute_h(a, b, c, lg, cache_.fwd.get(), cache_.inv.get(), threads_);
        t.ntt_ns = elapsed_ns(t0);
        t.upload_ns = 0;
    }

    // The four MSMs of n proofs with the key's bases streamed through
    // stream_ once for all of them (plan: from share_plan, or check_memory
    // for one). A proof whose witness fails its shape gets its error in
    // errs[i] and leaves the pass.
    void streamed_parts(const srs &key, const circuit_job *const *jobs, size_t n,
                        const stream_plan &plan, device_partials *const *outs,
                        cp_timings *const *ts, std::exception_ptr *errs) {
        const circuit_job &job0 = *jobs[0];
        const size_t m = size_t(1) << job0.lg_domain;
        const size_t ni = job0.num_inputs, na = job0.num_aux;
        if (ni + job0.a_aux_count != key.a.size() ||
            job0.b_input_count + job0.b_aux_count != key.b_g1.size() || key.h.size() != m - 1 ||
            key.l.size() != na || key.b_g2.size() != key.b_g1.size())
            fail(CP_ERR_INTERNAL, "circuit and proving key shapes disagree");
        stream_.ensure(plan.buffer_bytes);
        // Per proof: H first (its coefficients copied out of the cache,
        // which the next proof reuses, but for the last proof's), then the
        // scalars of A (inputs, then aux by a_aux_density) and of B (inputs
        // by b_input_density, then aux by b_aux_density), as a device
        // gathers them before streaming.
        auto bit = [](const uint64_t *bits, size_t i) { return (bits[i / 64] >> (i % 64)) & 1; };
        if (sets_.size() < n) sets_.resize(n);
        std::vector<size_t> live;
        for (size_t i = 0; i < n; i++) {
            const circuit_job &job = *jobs[i];
            cp_timings &t = *ts[i];
            try {
                front(job, t);
            } catch (const error &) {
                errs[i] = std::current_exception();
                continue;
            }
            scalar_set &set = sets_[i];
            if (i + 1 < n)
                set.h.assign(cache_.a.get(), cache_.a.get() + (m - 1));
            else
                set.h = std::vector<blst_fr>();
            set.sa.clear();
            set.sb.clear();
            set.sa.insert(set.sa.end(), job.inputs, job.inputs + ni);
            for (size_t j = 0; j < na; j++)
                if (bit(job.a_aux_density, j)) set.sa.push_back(job.aux[j]);
            for (size_t j = 0; j < ni; j++)
                if (bit(job.b_input_density, j)) set.sb.push_back(job.inputs[j]);
            for (size_t j = 0; j < na; j++)
                if (bit(job.b_aux_density, j)) set.sb.push_back(job.aux[j]);
            live.push_back(i);
        }
        if (live.empty()) return;

        // h + l as one MSM over the H bases followed by the L bases, then
        // A, B in G1 and B in G2, as one sequence of chunks; each proof's
        // segments and sums side by side.
        const size_t sets = live.size();
        std::vector<base_segment<blst_p1_affine>> hl, a, b1;
        std::vector<base_segment<blst_p2_affine>> b2;
        std::vector<void *> o_h, o_a, o_b1, o_b2;
        std::vector<uint64_t *> n_h, n_a, n_b1, n_b2;
        for (size_t i : live) {
            const scalar_set &set = sets_[i];
            const blst_fr *h = i + 1 < n ? set.h.data() : cache_.a.get();
            hl.push_back({key.h.data(), h, m - 1});
            hl.push_back({key.l.data(), jobs[i]->aux, na});
            a.push_back({key.a.data(), set.sa.data(), set.sa.size()});
            b1.push_back({key.b_g1.data(), set.sb.data(), set.sb.size()});
            b2.push_back({key.b_g2.data(), set.sb.data(), set.sb.size()});
            device_partials &out = *outs[i];
            cp_timings &t = *ts[i];
            t.msm_h_ns = t.msm_l_ns = t.msm_a_ns = t.msm_b_g1_ns = t.msm_b_g2_ns = 0;
            o_h.push_back(&out.h);
            o_a.push_back(&out.a);
            o_b1.push_back(&out.b_g1);
            o_b2.push_back(&out.b_g2);
            n_h.push_back(&t.msm_h_ns);
            n_a.push_back(&t.msm_a_ns);
            n_b1.push_back(&t.msm_b_g1_ns);
            n_b2.push_back(&t.msm_b_g2_ns);
        }
        const streamed_msm msms[4] = {{hl.data(), nullptr, 2, sets, o_h.data(), n_h.data()},
                                      {a.data(), nullptr, 1, sets, o_a.data(), n_a.data()},
                                      {b1.data(), nullptr, 1, sets, o_b1.data(), n_b1.data()},
                                      {nullptr, b2.data(), 1, sets, o_b2.data(), n_b2.data()}};
        uint64_t add_ns = 0, chunks = 0;
        streamed_msms(msms, 4, plan.g1_per_chunk, plan.g2_per_chunk, stream_, threads_, &add_ns,
                      &chunks, &cost_);
        cost_.key = &key;

        uint64_t held = cache_.bytes + 2 * stream_.bytes;
        for (size_t i : live)
            held += (sets_[i].h.size() + sets_[i].sa.size() + sets_[i].sb.size()) *
                    sizeof(blst_fr);
        for (size_t i : live) {
            std::memset(&outs[i]->l, 0, sizeof outs[i]->l);  // the identity: L is in H's MSM
            cp_timings &t = *ts[i];
            t.batch_add_ns = add_ns / sets;
            t.stream_chunks = chunks;
            t.stream_buffer_bytes = plan.buffer_bytes;
            t.stream_shared = sets;
            t.peak_device_bytes = std::max<uint64_t>(t.peak_device_bytes, held);
            t.estimated_device_bytes = plan.total_bytes;
        }
    }
};

}  // namespace

namespace {

// The host's working memory for one proof: polynomials and twiddles (the
// working cache), plus the largest MSM's gathered pointer/scalar lists.
// The domain is the smallest power of two >= num_constraints, computed
// without a loop (a doubling loop never ends above 2^63) and in 128 bits so
// that the byte counts saturate instead of wrapping.
using u128 = unsigned __int128;
uint64_t sat(u128 v) { return v > UINT64_MAX ? UINT64_MAX : static_cast<uint64_t>(v); }

u128 working_of(const srs &key, uint64_t num_constraints) {
    const u128 m = num_constraints <= 1 ? u128(1) : u128(1) << (64 - __builtin_clzll(num_constraints - 1));
    const u128 fr = sizeof(blst_fr);
    const u128 biggest = std::max<uint64_t>(
        {static_cast<uint64_t>(key.h.size()), static_cast<uint64_t>(key.l.size()),
         static_cast<uint64_t>(key.a.size()), static_cast<uint64_t>(key.b_g1.size())});
    return 4 * m * fr + biggest * (sizeof(void *) + sizeof(blst_scalar));
}

}  // namespace

uint64_t streamed_fixed_bytes(const srs &key, uint64_t num_constraints) {
    const u128 scalars = (u128(key.a.size()) + key.b_g1.size()) * sizeof(blst_fr);
    return sat(working_of(key, num_constraints) + scalars);
}

cp_memory_estimate estimate(const srs &key, uint64_t num_constraints) {
    const u128 g1 = u128(key.ic.size()) + key.h.size() + key.l.size() + key.a.size() + key.b_g1.size();
    cp_memory_estimate e;
    e.working_bytes = sat(working_of(key, num_constraints));
    e.srs_bytes = sat(g1 * sizeof(blst_p1_affine) + u128(key.b_g2.size()) * sizeof(blst_p2_affine));
    e.streamed_bytes = min_stream_bytes(streamed_fixed_bytes(key, num_constraints),
                                        msm_sizes_of(key), no_temp);
    // The shape stays in host memory here: its streamed pass is already
    // the least one.
    e.compact_bytes = e.streamed_bytes;
    return e;
}

}  // namespace host

std::unique_ptr<device> host_device(int ordinal, int threads) {
    return std::unique_ptr<device>(new host::host_device(ordinal, threads));
}

}  // namespace cp
