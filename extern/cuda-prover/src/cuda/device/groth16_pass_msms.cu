// The MSMs of a Groth16 pass started (groth16_pass_state.hpp): A's and B's
// scalars gathered on the device by their densities, a resident key's MSMs
// of A and B started beside H's NTTs, and a streamed key's MSMs set up, its
// first chunk going up.
#include "device/groth16_pass_state.hpp"

#include <algorithm>
#include <cstdlib>

namespace cp {
namespace cuda_dev {

using namespace cp_cuda;

namespace {

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

}  // namespace

// The scalars of A and B, gathered by their densities (d_bits_*, d_pre,
// set by the job's front first).
void gather_ab(pass_state &p, pass_job &j, cudaStream_t s) {
    const cache_layout &L = p.L;
    if (L.ni)
        cuda_check(cudaMemcpyAsync(p.d_sa, p.d_in, L.ni * sizeof(fr_raw), cudaMemcpyDeviceToDevice,
                                   s),
                   "copy of the inputs");
    launch_compact(s, p.d_sa + L.ni, p.d_aux, p.d_bits_a, p.d_pre, L.na);
    launch_compact(s, p.d_sb, p.d_in, p.d_bits_bi, p.d_pre + L.w_aux, L.ni);
    launch_compact(s, p.d_sb + j.job.b_input_count, p.d_aux, p.d_bits_ba,
                   p.d_pre + L.w_aux + L.w_in, L.na);
}

// With a resident key, the MSMs of A and B (slots 1-3) need only the
// witness: their scalars are gathered on slot 1's stream once it is up,
// and they start while H's NTTs run on the compute stream; H + L (slot
// 0) follows H. A failure in between waits for them (guard) before the
// buffers they read can be reused. The NTTs are queued before A's and
// B's kernels, and A and B over tables (dense scalars) sort while the
// NTTs run and add once they are done (msm_job::gate): their additions
// hold every SM, and NTT kernels queued behind them waited for their
// end, so H + L ran alone after them (chain 2^20 on an H200: A and B 36
// ms with the NTTs inside, then H + L 16 ms; now all four at once after
// an NTT phase of 2.7 ms). With the NTTs queued first the gate changes
// nothing measurable (50.5-51.2 ms with it, 50.5 without); it keeps the
// order from resting on the block scheduler. CP_AB_WITH_NTT
// (diagnostics) leaves it out. Starting A and B whole (their gather,
// breakdown and sort too) only after the NTTs was measured and lost:
// the NTT phase stayed 2.7-2.8 ms and H + L took 46.6 ms against 45.9
// (device part 51.4 against 51.0).
void start_ab(pass_state &p, pass_job &j) {
    const key_copy *dk = p.dk;
    if (!dk)
        return;
    pass_lane &ln = *p.ln;
    msm_job *jobs = j.jobs;
    // Slot k serves key array k (key_residency.hpp), over its table
    // when the key has one.
    const fr_raw *scalars[key_arrays] = {p.d_hl, p.d_sa, p.d_sb, p.d_sb};
    for (int k = 0; k < key_arrays; k++) {
        const key_table &tab = dk->tables[k];
        jobs[k] = msm_job{(size_t)k, tab.wbits ? tab.buf.bytes_ptr() : dk->bases(key_array(k)),
                          scalars[k], dk->n[k], tab.wbits};
    }
    // H's scalars (before L's) are dense: at C2's size L's 0s
    // and 1s are split off past them (msm_job::dense).
    jobs[0].dense = (size_t)(p.d_aux - p.d_hl);
    const cudaStream_t s1 = ln.msm->stream(1);
    cuda_check(cudaStreamWaitEvent(s1, ln.ev_rest.get(), 0), "cudaStreamWaitEvent");
    gather_ab(p, j, s1);
    cuda_check(cudaEventRecord(ln.ev_ab.get(), s1), "cudaEventRecord");
    if (std::getenv("CP_AB_WITH_NTT") == nullptr)
        for (int k = 1; k < key_arrays; k++)
            jobs[k].gate = ln.ev_ntt.get();
    j.guard.m = ln.msm.get();
    ln.msm->start(jobs + 1, 3, ln.ev_ab.get());
    j.ab_started = true;
}

// A streamed key's MSMs for the jobs `which` (their sums side by side),
// whose first chunk goes up while the NTTs run when the pass serves one
// job (started once its witness is staged; the helper is joined on
// every way out).
void start_stream(pass_state &p, const std::vector<size_t> &which) {
    if (p.dk)
        return;
    const proving_key &key = p.key;
    const cache_layout &L = p.L;
    const size_t g1 = sizeof(blst_p1_affine), g2 = sizeof(blst_p2_affine);
    auto one = [](const void *pts, size_t nb, size_t bytes) {
        host_bases b;
        b.run[0] = pts;
        b.n[0] = nb;
        b.point_bytes = bytes;
        return b;
    };
    host_bases hl;
    hl.run[0] = key.h.data();
    hl.n[0] = key.h.size();
    hl.run[1] = key.l.data();
    hl.n[1] = key.l.size();
    hl.point_bytes = g1;
    std::vector<stream_msm> msms = {{hl, msm_group::g1, 0, {}},
                                    {one(key.a.data(), L.n_a, g1), msm_group::g1, 0, {}},
                                    {one(key.b_g1.data(), L.n_b, g1), msm_group::g1, 0, {}},
                                    {one(key.b_g2.data(), L.n_b, g2), msm_group::g2, 1, {}}};
    for (size_t i : which) {
        device_partials &o = *p.outs[i];
        cp_timings &ti = *p.ts[i];
        const job_scalars &sc = p.scalars[i];
        msms[0].sums.push_back({sc.hl, &o.h, &ti.msm_h_ns});
        msms[1].sums.push_back({sc.sa, &o.a, &ti.msm_a_ns});
        msms[2].sums.push_back({sc.sb, &o.b_g1, &ti.msm_b_g1_ns});
        msms[3].sums.push_back({sc.sb, &o.b_g2, &ti.msm_b_g2_ns});
    }
    device_state &d = p.d;
    p.streamed.reset(new streamed_msms(d.streamer, d.cuda_id, d.staging, std::move(msms),
                                       p.kp.plan.g1_per_chunk, p.kp.plan.g2_per_chunk));
}

}  // namespace cuda_dev
}  // namespace cp
