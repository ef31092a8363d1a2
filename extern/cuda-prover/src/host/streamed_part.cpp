// The host device parts of proofs that stream the key (device.hpp): each
// proof's front and gathered scalars, then the four MSMs of them all as one
// sequence of chunks through the device's two buffers.
#include "host/device.hpp"

#include <algorithm>
#include <cstring>

namespace cp {
namespace host {

void host_device::streamed_parts(const proving_key &key, const circuit_job *const *jobs, size_t n,
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

}  // namespace host
}  // namespace cp
