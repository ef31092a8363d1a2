// A host device part (device.hpp): the front (a, b, c evaluated or
// copied, checked, and H by NTTs in the working cache) and the MSMs of a
// proof whose key stays whole.
#include "host/device.hpp"

#include <algorithm>
#include <cstring>
#include <string>

#include "field.hpp"
#include "host/estimate.hpp"
#include "host/msm.hpp"
#include "host/ntt.hpp"
#include "r1cs.hpp"

namespace cp {
namespace host {

namespace {

void copy_padded(blst_fr *dst, const blst_fr *src, size_t n, size_t m) {
    if (n) std::memcpy(dst, src, n * sizeof(blst_fr));
    if (m > n) std::memset(dst + n, 0, (m - n) * sizeof(blst_fr));
}

void pad_zero(blst_fr *dst, size_t n, size_t m) {
    if (m > n) std::memset(dst + n, 0, (m - n) * sizeof(blst_fr));
}

}  // namespace

void host_device::front(const circuit_job &job, cp_timings &t) {
    const uint32_t lg = job.lg_domain;
    const size_t m = size_t(1) << lg;
    const size_t n = job.num_constraints;
    cache_.ensure(lg, threads_);
    blst_fr *a = cache_.a.get(), *b = cache_.b.get(), *c = cache_.c.get();
    auto t0 = clock_type::now();
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
        t.eval_ns = ns_since(t0);
    } else {
        copy_padded(a, job.a, n, m);
        copy_padded(b, job.b, n, m);
        copy_padded(c, job.c, n, m);
    }
    t0 = clock_type::now();
    compute_h(a, b, c, lg, cache_.fwd.get(), cache_.inv.get(), threads_);
    t.ntt_ns = ns_since(t0);
    t.upload_ns = 0;
}

std::unique_ptr<device_tail> host_device::device_part(const proving_key &key,
                                                      const circuit_job &job,
                                                      device_partials &out, cp_timings &t) {
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
    auto t0 = clock_type::now();
    out.h = msm_g1(key.h.data(), cache_.a.get(), m - 1, nullptr, threads_, &add_ns);
    t.msm_h_ns = ns_since(t0);

    const blst_fr *inputs = job.inputs;
    const blst_fr *aux = job.aux;
    const size_t ni = job.num_inputs, na = job.num_aux;

    t0 = clock_type::now();
    out.l = msm_g1(key.l.data(), aux, na, nullptr, threads_, &add_ns);
    t.msm_l_ns = ns_since(t0);

    t0 = clock_type::now();
    {
        blst_p1 in = msm_g1(key.a.data(), inputs, ni, nullptr, threads_, &add_ns);
        blst_p1 ax = msm_g1(key.a.data() + ni, aux, na, job.a_aux_density, threads_, &add_ns);
        blst_p1_add_or_double(&out.a, &in, &ax);
    }
    t.msm_a_ns = ns_since(t0);

    const size_t bi = job.b_input_count;
    t0 = clock_type::now();
    {
        blst_p1 in = msm_g1(key.b_g1.data(), inputs, ni, job.b_input_density, threads_, &add_ns);
        blst_p1 ax = msm_g1(key.b_g1.data() + bi, aux, na, job.b_aux_density, threads_, &add_ns);
        blst_p1_add_or_double(&out.b_g1, &in, &ax);
    }
    t.msm_b_g1_ns = ns_since(t0);

    t0 = clock_type::now();
    {
        blst_p2 in = msm_g2(key.b_g2.data(), inputs, ni, job.b_input_density, threads_, &add_ns);
        blst_p2 ax = msm_g2(key.b_g2.data() + bi, aux, na, job.b_aux_density, threads_, &add_ns);
        blst_p2_add_or_double(&out.b_g2, &in, &ax);
    }
    t.msm_b_g2_ns = ns_since(t0);
    t.batch_add_ns = add_ns;
    // Measured: what the working cache holds; estimated: the backend's
    // estimate of the working set.
    t.peak_device_bytes = std::max<uint64_t>(t.peak_device_bytes, cache_.bytes);
    t.estimated_device_bytes = estimate(key, n).working_bytes;
    return nullptr;  // the host's work is done when it returns
}

}  // namespace host
}  // namespace cp
