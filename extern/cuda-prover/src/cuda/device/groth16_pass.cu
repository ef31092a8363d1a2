// The Groth16 device pass (groth16_pass.hpp).
#include "device/groth16_pass.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "device/key_placement.hpp"
#include "device/key_residency.hpp"
#include "device/host_rows.hpp"
#include "device/key_streaming.hpp"
#include "device/shape_rows.hpp"
#include "device/lanes.hpp"
#include "device/pass_memory.hpp"
#include "device/witness_lender.hpp"
#include "stream_plan.hpp"

namespace cp {
namespace cuda_dev {

using namespace cp_cuda;

static_assert(sizeof(blst_fr) == sizeof(fr_raw), "blst_fr layout");
static_assert(sizeof(blst_p1_affine) == sizeof(g1_affine_raw), "blst_p1_affine layout");
static_assert(sizeof(blst_p2_affine) == sizeof(g2_affine_raw), "blst_p2_affine layout");
static_assert(sizeof(blst_p1) == sizeof(g1_proj_raw), "blst_p1 layout");
static_assert(sizeof(blst_p2) == sizeof(g2_proj_raw), "blst_p2 layout");
static_assert(sizeof(cp_fr) == sizeof(fr_raw), "cp_fr layout");

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

}  // namespace

namespace {

// The sums of a resident key's four MSMs (started on `msm`) into out, and
// their times.
void finish_msms(cp_cuda::msm_context &msm, const msm_job *jobs, device_partials &out,
                 cp_timings &t) {
    uint64_t msm_ns[4] = {};
    msm.finish(jobs + 1, 3, msm_ns + 1);
    msm.finish(jobs, 1, msm_ns);
    g1_proj_raw r1;
    g2_proj_raw r2;
    msm.read(0, r1);
    std::memcpy(&out.h, &r1, sizeof(r1));
    std::memset(&out.l, 0, sizeof(out.l));  // infinity (Z = 0)
    msm.read(1, r1);
    std::memcpy(&out.a, &r1, sizeof(r1));
    msm.read(2, r1);
    std::memcpy(&out.b_g1, &r1, sizeof(r1));
    msm.read(3, r2);
    std::memcpy(&out.b_g2, &r2, sizeof(r2));
    t.msm_h_ns += msm_ns[0];
    t.msm_a_ns += msm_ns[1];
    t.msm_b_g1_ns += msm_ns[2];
    t.msm_b_g2_ns += msm_ns[3];
    t.stream_chunks = 0;
    t.stream_buffer_bytes = 0;
    t.stream_shared = 0;
}

// The tail of an overlapped pass: its MSMs run on its lane's streams, the
// lane held until their sums are read.
class lane_tail final : public device_tail {
public:
    lane_tail(std::unique_lock<std::mutex> lane, cp_cuda::msm_context &msm, const msm_job *jobs,
              device_partials &out, cp_timings &t, const peak_probe &probe)
        : lane_(std::move(lane)), msm_(msm), out_(out), t_(t), probe_(probe) {
        std::copy(jobs, jobs + key_arrays, jobs_);
    }
    ~lane_tail() override {
        if (!done_)
            msm_.drain();  // its buffers are reused once the lane is let go
    }
    void finish() override {
        finish_msms(msm_, jobs_, out_, t_);
        done_ = true;
        probe_.record(t_);
        lane_.unlock();
    }

private:
    std::unique_lock<std::mutex> lane_;
    cp_cuda::msm_context &msm_;
    msm_job jobs_[key_arrays];
    device_partials &out_;
    cp_timings &t_;
    peak_probe probe_;
    bool done_ = false;
};

}  // namespace

void prepare_pass(device_state &d, const memory_budget &budget, const srs &key, size_t m,
                  const shape *sh) {
    cp_timings t;
    std::memset(&t, 0, sizeof(t));
    const cache_layout L = layout_for(key, m);
    settle_lanes(d, key, L);
    place(d, d.lanes[0], budget, key, L, sh, t);
}

void prepare_lanes(device_state &d, const memory_budget &budget, const srs &key, size_t m) {
    if (const srs_copy *dk = resident_key(key, d.cuda_id))
        open_second_lane(d, budget, *dk, layout_for(key, m));
}

namespace {

// The device parts of batch[0, n) (one key and shape): the first alone (the
// tail as groth16_pass says), or, when the key is streamed, as many as
// share its pass (*served; plan_shared), each chunk summed for all of
// them. A job whose witness fails its shape gets its error in errs[i] when
// it shares a pass, and leaves it.
std::unique_ptr<device_tail> run_pass(device_state &d, const memory_budget &budget,
                                      const srs &key, const circuit_job *const *batch, size_t n,
                                      device_partials *const *outs, cp_timings *const *ts,
                                      std::exception_ptr *errs, bool lanes_held, size_t *served) {
    uint64_t t_start = now_ns();
    const circuit_job &job0 = *batch[0];
    const size_t m = size_t(1) << job0.lg_domain;
    // The pass's layout: place() may choose a phased one (the same counts).
    cache_layout L = layout_for(key, m);
    for (size_t i = 0; i < n; i++) {
        const circuit_job &job = *batch[i];
        if (job.lg_domain != job0.lg_domain || job.sh != job0.sh || job.num_inputs != L.ni ||
            job.num_aux != L.na || L.ni + job.a_aux_count != L.n_a ||
            job.b_input_count + job.b_aux_count != L.n_b || key.h.size() != m - 1 ||
            key.b_g2.size() != L.n_b)
            fail(CP_ERR_INTERNAL, "circuit and proving key shapes disagree");
    }

    // The lane (state.hpp): in turn with the other when both are ready and
    // nothing shared changes (overlap_ready); the pass then returns its
    // tail once its MSMs are queued. Otherwise every lane's passes are
    // waited for, the pass runs on lane 0 and completes here.
    std::vector<std::unique_lock<std::mutex>> all_lanes;
    std::unique_lock<std::mutex> lane_lock;
    pass_lane *lane = nullptr;
    if (!lanes_held && n == 1 && overlap_ready(d, budget, key, L, job0.sh))
        lane = &take_lane(d, lane_lock);
    const bool overlap = lane != nullptr;
    if (!overlap) {
        if (!lanes_held)
            all_lanes = d.quiesce();
        settle_lanes(d, key, L);
        lane = &d.lanes[0];
    }
    pass_lane &ln = *lane;

    // A first upload of the key or the shape falls in upload_ns through
    // t_start.
    cp_timings key_t{};
    const key_place kp = place(d, ln, budget, key, L, job0.sh, key_t, n);
    L = kp.L;
    // A resident key's pass serves one job; a streamed key's those that
    // share it.
    const size_t count = kp.dk ? 1 : std::min(n, kp.shared);
    *served = count;
    // CP_TRACE_PASS (diagnostics): where the upload phase's time goes.
    const bool trace = std::getenv("CP_TRACE_PASS") != nullptr;
    const uint64_t t_placed = now_ns();
    const srs_copy *dk = kp.dk;
    const size_t temp = kp.temp;
    // The pool's high-water mark from here on measures sppark's
    // temporaries of this device part.
    trace_memory(d, count > 1 ? "placed (shared)" : "placed");
    if (trace && !dk)
        std::fprintf(stderr,
                     "cp pass trace: streamed plan for %zu: buffer %.1f MiB, temp %.1f MiB, "
                     "total %.1f MiB\n",
                     count, kp.plan.buffer_bytes / 1048576.0, kp.plan.temp_bytes / 1048576.0,
                     kp.plan.total_bytes / 1048576.0);
    cudaMemPool_t pool = nullptr;
    if (cudaDeviceGetDefaultMemPool(&pool, d.cuda_id) == cudaSuccess) {
        uint64_t zero = 0;
        if (cudaMemPoolSetAttribute(pool, cudaMemPoolAttrUsedMemHigh, &zero) != cudaSuccess)
            pool = nullptr;
    } else {
        pool = nullptr;
    }
    (void)cudaGetLastError();
    // What the device holds with the key's copy (`key_bytes`) and what this
    // proof was estimated to need, recorded when its MSMs are done.
    auto probe_of = [&](uint64_t key_bytes) {
        peak_probe probe;
        probe.pool = pool;
        probe.held = key_bytes + d.caches_bytes() + d.shape.bytes();
        probe.estimated =
            key_bytes + L.total + temp + (job0.sh ? d.shape.bytes() : 0) + d.library_bytes.load();
        return probe;
    };

    const gpu_t &gpu = d.gpu();
    const cudaStream_t copy = d.staging.stream();
    auto stage = [&](void *dst, const void *src, size_t bytes) {
        d.staging.stage(gpu, dst, src, bytes);
    };
    char *base = ln.cache.buf.bytes_ptr();
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
    const cudaStream_t zs = d.stream();

    // Where each job's MSM scalars wait in a shared pass: the last job's
    // stay in the working cache, the others' are copied to the stream's
    // scalar sets (H + L's, A's, B's) before the next job reuses the cache.
    struct job_scalars {
        fr_raw *hl, *sa, *sb;
    };
    std::vector<job_scalars> scalars(count);
    for (size_t i = 0; i < count; i++) {
        if (i + 1 < count) {
            fr_raw *set = (fr_raw *)d.streamer.sets() + i * (L.n_hl + L.n_a + L.n_b);
            scalars[i] = {set, set + L.n_hl, set + L.n_hl + L.n_a};
        } else {
            scalars[i] = {d_hl, d_sa, d_sb};
        }
    }
    // A streamed key's MSMs for the jobs `which` (their sums side by side),
    // whose first chunk goes up while the NTTs run when the pass serves one
    // job (started once its witness is staged; the helper is joined on
    // every way out).
    std::unique_ptr<streamed_msms> streamed;
    auto start_stream = [&](const std::vector<size_t> &which) {
        if (dk)
            return;
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
            device_partials &o = *outs[i];
            cp_timings &ti = *ts[i];
            const job_scalars &sc = scalars[i];
            msms[0].sums.push_back({sc.hl, &o.h, &ti.msm_h_ns});
            msms[1].sums.push_back({sc.sa, &o.a, &ti.msm_a_ns});
            msms[2].sums.push_back({sc.sb, &o.b_g1, &ti.msm_b_g1_ns});
            msms[3].sums.push_back({sc.sb, &o.b_g2, &ti.msm_b_g2_ns});
        }
        streamed.reset(new streamed_msms(d.streamer, d.cuda_id, d.staging, std::move(msms),
                                         kp.plan.g1_per_chunk, kp.plan.g2_per_chunk));
    };
    std::vector<size_t> live;  // the jobs whose fronts are done

    for (size_t i = 0; i < count; i++) {
        if (i)
            t_start = now_ns();
        const circuit_job &job = *batch[i];
        device_partials &out = *outs[i];
        cp_timings &t = *ts[i];
        try {
            const size_t nc = std::min(job.num_constraints, m);
            uint64_t t_h;

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
            msm_job jobs[key_arrays];
            bool ab_started = false;
            struct drain_guard {
                cp_cuda::msm_context *m = nullptr;
                ~drain_guard() {
                    if (m)
                        m->drain();
                }
            } guard;
            // The scalars of A and B, gathered by their densities (d_bits_*, d_pre,
            // set by either branch below first).
            auto gather_ab = [&](cudaStream_t s) {
                if (L.ni)
                    cuda_check(
                        cudaMemcpyAsync(d_sa, d_in, L.ni * sizeof(fr_raw),
                                        cudaMemcpyDeviceToDevice, s),
                        "copy of the inputs");
                launch_compact(s, d_sa + L.ni, d_aux, d_bits_a, d_pre, L.na);
                launch_compact(s, d_sb, d_in, d_bits_bi, d_pre + L.w_aux, L.ni);
                launch_compact(s, d_sb + job.b_input_count, d_aux, d_bits_ba,
                               d_pre + L.w_aux + L.w_in,
                               L.na);
            };
            auto start_ab = [&]() {
                if (!dk)
                    return;
                // Slot k serves key array k (key_residency.hpp), over its table
                // when the key has one.
                const fr_raw *scalars[key_arrays] = {d_hl, d_sa, d_sb, d_sb};
                for (int k = 0; k < key_arrays; k++) {
                    const key_table &tab = dk->tables[k];
                    jobs[k] = msm_job{(size_t)k,
                                      tab.wbits ? tab.buf.bytes_ptr() : dk->bases(key_array(k)),
                                      scalars[k], dk->n[k], tab.wbits};
                }
                // H's scalars (before L's) are dense: at C2's size L's 0s
                // and 1s are split off past them (msm_job::dense).
                jobs[0].dense = (size_t)(d_aux - d_hl);
                const cudaStream_t s1 = ln.msm->stream(1);
                cuda_check(cudaStreamWaitEvent(s1, ln.ev_rest.get(), 0), "cudaStreamWaitEvent");
                gather_ab(s1);
                cuda_check(cudaEventRecord(ln.ev_ab.get(), s1), "cudaEventRecord");
                if (std::getenv("CP_AB_WITH_NTT") == nullptr)
                    for (int k = 1; k < key_arrays; k++)
                        jobs[k].gate = ln.ev_ntt.get();
                guard.m = ln.msm.get();
                ln.msm->start(jobs + 1, 3, ln.ev_ab.get());
                ab_started = true;
            };

            // The density bitmaps (the job's, or its shape's) and their word
            // prefixes into the working cache, for a pass without a resident
            // shape.
            auto stage_densities = [&](const uint64_t *den_a, const uint64_t *den_bi,
                                       const uint64_t *den_ba) {
                uint64_t *bits_a = (uint64_t *)(base + L.bits);
                uint64_t *bits_bi = bits_a + L.w_aux;
                uint64_t *bits_ba = bits_bi + L.w_in;
                uint32_t *pre = (uint32_t *)(base + L.pre);
                stage(bits_a, den_a, L.w_aux * sizeof(uint64_t));
                stage(bits_bi, den_bi, L.w_in * sizeof(uint64_t));
                stage(bits_ba, den_ba, L.w_aux * sizeof(uint64_t));
                ln.pre_host.resize(2 * L.w_aux + L.w_in);
                uint32_t *pre_a = ln.pre_host.data();
                uint32_t *pre_bi = pre_a + L.w_aux;
                uint32_t *pre_ba = pre_bi + L.w_in;
                if (L.na) {
                    word_prefix(pre_a, den_a, L.na);
                    word_prefix(pre_ba, den_ba, L.na);
                }
                word_prefix(pre_bi, den_bi, L.ni);
                stage(pre, ln.pre_host.data(), ln.pre_host.size() * sizeof(uint32_t));
                d_bits_a = bits_a;
                d_bits_bi = bits_bi;
                d_bits_ba = bits_ba;
                d_pre = pre;
            };

            // After a device evaluation of the shape (queued on zs, its row
            // check into L.bad): the check read, a, b, c zero-padded to the
            // domain and H queued; returns when H was queued (eval_ns from
            // t_up).
            auto check_rows_then_h = [&](uint64_t t_up) {
                uint64_t bad = 0;
                cuda_check(cudaMemcpyAsync(&bad, base + L.bad, sizeof bad, cudaMemcpyDeviceToHost,
                                           zs),
                           "read of the row check");
                cuda_check(cudaStreamSynchronize(zs), "evaluation of the shape");
                if (bad != UINT64_MAX)
                    fail(CP_ERR_UNSATISFIED, "constraint " + std::to_string(bad) +
                                                 " is not satisfied by the witness (a*b != c)");
                for (fr_raw *p : {d_a, d_b, d_c})
                    if (m > nc)
                        cuda_check(cudaMemsetAsync(p + nc, 0, (m - nc) * sizeof(fr_raw), zs),
                                   "cudaMemsetAsync");
                const uint64_t at = now_ns();
                t.eval_ns += at - t_up;
                compute_h_async(gpu, d_a, d_b, d_c, job.lg_domain, z_inverse(job.lg_domain));
                cuda_check(cudaEventRecord(ln.ev_ntt.get(), zs), "cudaEventRecord");
                return at;
            };

            if (job.sh && L.shape_rows) {
                // A phased pass that evaluates on the device: the witness
                // goes up, then the shape's rows through the key's chunk
                // buffers (shape_rows.hpp); a, b, c are checked before H.
                stage(d_aux, job.aux, L.na * sizeof(fr_raw));
                stage(d_in, job.inputs, L.ni * sizeof(fr_raw));
                stage_densities(job.sh->a_aux_density.data(), job.sh->b_input_density.data(),
                                job.sh->b_aux_density.data());
                cuda_check(cudaEventRecord(ln.ev_rest.get(), copy), "cudaEventRecord");
                cuda_check(cudaStreamWaitEvent(zs, ln.ev_rest.get(), 0), "cudaStreamWaitEvent");
                const uint64_t t_up = now_ns();
                t.upload_ns += t_up - t_start;
                char *const bufs[2] = {d.streamer.buffer(0), d.streamer.buffer(1)};
                fr_raw *const abc[3] = {d_a, d_b, d_c};
                evaluate_shape_rows(gpu, d.staging, *job.sh, bufs, d.streamer.buffer_bytes(), abc,
                                    d_in, d_aux, (uint64_t *)(base + L.bad));
                t_h = check_rows_then_h(t_up);
                // The buffers are free again: the key's first chunk goes up
                // while the NTTs run.
                if (count == 1)
                    start_stream({0});
            } else if (job.sh && !L.compact) {
                // Only the witness goes up; a, b, c are evaluated from the
                // resident shape and checked before H.
                const uint64_t t_pool = now_ns();
                if (job.early_upload || job.lent) {
                    // Already on the device (witness_lender.hpp): copied into place;
                    // else pinned (device::lend_witness): one DMA per array.
                    const void *aux = job.aux, *inputs = job.inputs;
                    cudaMemcpyKind kind = cudaMemcpyHostToDevice;
                    if (job.early_upload) {
                        const early_upload &up =
                            *static_cast<const early_upload *>(job.early_upload);
                        cuda_check(cudaStreamWaitEvent(copy, up.done, 0), "cudaStreamWaitEvent");
                        aux = up.d_aux;
                        inputs = up.d_inputs;
                        kind = cudaMemcpyDeviceToDevice;
                    }
                    cuda_check(cudaMemcpyAsync(d_aux, aux, L.na * sizeof(fr_raw), kind, copy),
                               "upload of the witness");
                    cuda_check(cudaMemcpyAsync(d_in, inputs, L.ni * sizeof(fr_raw), kind, copy),
                               "upload of the witness");
                } else {
                    stage(d_aux, job.aux, L.na * sizeof(fr_raw));
                    stage(d_in, job.inputs, L.ni * sizeof(fr_raw));
                }
                const uint64_t t_staged = now_ns();
                cuda_check(cudaEventRecord(ln.ev_rest.get(), copy), "cudaEventRecord");
                cuda_check(cudaStreamSynchronize(copy), "upload of the witness");
                const uint64_t t_up = now_ns();
                if (count == 1)
                    start_stream({0});
                if (trace)
                    std::fprintf(stderr,
                                 "cp pass trace: place %.2f ms, pool mark %.2f ms, staging %.2f ms "
                                 "(%zu bytes), copy stream drained %.2f ms later\n",
                                 (t_placed - t_start) / 1e6, (t_pool - t_placed) / 1e6,
                                 (t_staged - t_pool) / 1e6, (L.na + L.ni) * sizeof(fr_raw),
                                 (t_up - t_staged) / 1e6);
                t.upload_ns += t_up - t_start;
                cuda_check(cudaStreamWaitEvent(zs, ln.ev_rest.get(), 0), "cudaStreamWaitEvent");
                d_bits_a = d.shape.bits;
                d_bits_bi = d_bits_a + L.w_aux;
                d_bits_ba = d_bits_bi + L.w_in;
                d_pre = d.shape.pre;
                d.shape.evaluate(gpu, *job.sh, base, L);
                t_h = check_rows_then_h(t_up);
                start_ab();
            } else {
                // a, b, c (given, or evaluated from the shape on the host in
                // a phased pass), zero-padded to the domain, then H on the
                // compute stream while the rest of the witness is copied.
                if (job.sh) {
                    const uint64_t t_eval = now_ns();
                    stage_host_rows(gpu, d.staging, *job.sh, job.inputs, job.aux, d_a, d_b,
                                    d_c);
                    t.eval_ns += now_ns() - t_eval;
                } else {
                    const blst_fr *src[3] = {job.a, job.b, job.c};
                    fr_raw *dst[3] = {d_a, d_b, d_c};
                    for (int i = 0; i < 3; i++)
                        stage(dst[i], src[i], nc * sizeof(fr_raw));
                }
                for (fr_raw *p : {d_a, d_b, d_c})
                    if (m > nc)
                        cuda_check(cudaMemsetAsync(p + nc, 0, (m - nc) * sizeof(fr_raw), copy),
                                   "cudaMemsetAsync");
                cuda_check(cudaEventRecord(ln.ev_abc.get(), copy), "cudaEventRecord");
                cuda_check(cudaStreamWaitEvent(zs, ln.ev_abc.get(), 0), "cudaStreamWaitEvent");
                compute_h_async(gpu, d_a, d_b, d_c, job.lg_domain, z_inverse(job.lg_domain));
                cuda_check(cudaEventRecord(ln.ev_ntt.get(), zs), "cudaEventRecord");
                // In a phased layout aux lies over b and c: its copy waits
                // for H.
                if (L.compact)
                    cuda_check(cudaStreamWaitEvent(copy, ln.ev_ntt.get(), 0),
                               "cudaStreamWaitEvent");

                stage(d_aux, job.aux, L.na * sizeof(fr_raw));
                stage(d_in, job.inputs, L.ni * sizeof(fr_raw));
                // The densities: the job's, or its shape's.
                if (job.sh)
                    stage_densities(job.sh->a_aux_density.data(),
                                    job.sh->b_input_density.data(),
                                    job.sh->b_aux_density.data());
                else
                    stage_densities(job.a_aux_density, job.b_input_density, job.b_aux_density);
                cuda_check(cudaEventRecord(ln.ev_rest.get(), copy), "cudaEventRecord");
                start_ab();
                if (count == 1)
                    start_stream({0});
                cuda_check(cudaEventSynchronize(ln.ev_rest.get()), "upload of the witness");
                t_h = now_ns();
                t.upload_ns += t_h - t_start;
                cuda_check(cudaStreamWaitEvent(zs, ln.ev_rest.get(), 0), "cudaStreamWaitEvent");
            }

            // H's coefficients before aux, and (unless their MSMs already run) the
            // scalars of A and B gathered by their densities.
            cuda_check(cudaStreamWaitEvent(zs, ln.ev_rest.get(), 0), "cudaStreamWaitEvent");
            if (m > 1 && d_hl != d_a)
                cuda_check(cudaMemcpyAsync(d_hl, d_a, (m - 1) * sizeof(fr_raw),
                                           cudaMemcpyDeviceToDevice,
                                           zs),
                           "copy of H");
            if (!ab_started)
                gather_ab(zs);
            uint64_t t0;
            if (dk) {
                // h + l (one MSM over the adjacent H and L points) once H is
                // ready, next to a, b_g1 and b_g2; the times are each MSM's own on
                // its stream, so they overlap.
                cuda_check(cudaEventRecord(ln.ev_h.get(), zs), "cudaEventRecord");
                ln.msm->start(jobs, 1, ln.ev_h.get());
                t0 = now_ns();
                t.ntt_ns += t0 - t_h;
                // Tables for the arrays whose scalars would have used one, for the
                // next proofs (below): known once the MSMs started.
                bool to_build = false;
                for (int k = 0; k < key_arrays; k++)
                    to_build = to_build ||
                               (ln.msm->wants_table((size_t)k) &&
                                may_build_table(*dk, key_array(k)));
                if (overlap && !to_build) {
                    std::unique_ptr<device_tail> tail(new lane_tail(std::move(lane_lock), *ln.msm,
                                                                    jobs,
                                                                    out, t, probe_of(dk->bytes())));
                    guard.m = nullptr;  // the tail drains the lane if it is not finished
                    return tail;
                }
                finish_msms(*ln.msm, jobs, out, t);
                guard.m = nullptr;
                // The tables are built in half of what the device may still use
                // (under the limit and on the card) less the MSM slots' room for
                // table runs: tables stay until the key is freed, and other keys
                // and work need the rest. The other lane's pass, if any, is waited
                // for first. The card's free memory (a driver call, cudaMemGetInfo)
                // is asked only when a table may be built.
                if (to_build) {
                    std::vector<std::unique_lock<std::mutex>> others;
                    if (overlap)
                        for (auto &l : d.lanes)
                            if (&l != &ln)
                                others.emplace_back(l.mu);
                    const uint64_t held = dk->bytes() + d.lanes_bytes() + d.shape.bytes();
                    const uint64_t usable = budget.usable(held);
                    const uint64_t half = usable > held ? (usable - held) / 2 : 0;
                    const uint64_t slots_room = temp_bytes(L, d.props.multiProcessorCount, true);
                    uint64_t room = half > slots_room ? half - slots_room : 0;
                    uint64_t built = 0;
                    for (int k = 0; k < key_arrays; k++)
                        if (ln.msm->wants_table((size_t)k)) {
                            const uint64_t b =
                                build_key_table(*dk, key_array(k), d.cuda_id, room, d.stream(), t);
                            room -= b;
                            built += b;
                        }
                    // The MSM buffers for table runs (counted in slots_room), now,
                    // so the next proof does not pay for them (5-7 ms at C2's size).
                    // This proof is done: if they cannot be made here, the next
                    // pass's place makes them (or fails with its own error).
                    if (built) {
                        try {
                            ln.ensure_msm(d.gpu(), msm_slots(L, true));
                        } catch (...) {
                        }
                    }
                }
                if (!overlap)
                    open_second_lane(d, budget, *dk, L);
            } else {
                // The scalars out of the cache the next job reuses.
                const job_scalars &sc = scalars[i];
                if (sc.hl != d_hl) {
                    const std::pair<fr_raw *, const fr_raw *> parts[3] = {
                        {sc.hl, d_hl}, {sc.sa, d_sa}, {sc.sb, d_sb}};
                    const size_t lens[3] = {L.n_hl, L.n_a, L.n_b};
                    for (int k = 0; k < 3; k++)
                        if (lens[k])
                            cuda_check(cudaMemcpyAsync(parts[k].first, parts[k].second,
                                                       lens[k] * sizeof(fr_raw),
                                                       cudaMemcpyDeviceToDevice, zs),
                                       "copy of a shared pass's scalars");
                }
                gpu_sync_default(gpu);
                t0 = now_ns();
                t.ntt_ns += t0 - t_h;
                live.push_back(i);
                trace_memory(d, "front done");
            }
            if (dk) {
                probe_of(dk->bytes()).record(t);
                return nullptr;
            }
        } catch (const error &e) {
            // A job's own failure leaves a shared pass; the others go on.
            if (n == 1 || e.code != CP_ERR_UNSATISFIED)
                throw;
            errs[i] = std::current_exception();
        }
    }

    // The MSMs with the bases streamed from the host key, each chunk summed
    // for every job; each MSM's time includes the uploads it waited for,
    // split evenly among the jobs.
    if (live.empty())
        return nullptr;
    if (!streamed)
        start_stream(live);
    uint64_t chunks = 0;
    streamed->run(*ln.msm, chunks, d.streamer.cost);
    d.streamer.cost.key = &key;
    trace_memory(d, "summed");
    for (size_t i : live) {
        cp_timings &t = *ts[i];
        std::memset(&outs[i]->l, 0, sizeof(outs[i]->l));  // infinity (Z = 0): L is in H's MSM
        t.stream_chunks = chunks;
        t.stream_buffer_bytes = kp.plan.buffer_bytes;
        t.stream_shared = live.size();
        t.phased = L.shape_rows ? 2 : L.compact ? 1 : 0;
        probe_of(d.streamer.held()).record(t);
    }
    return nullptr;
}

}  // namespace

std::unique_ptr<device_tail> groth16_pass(device_state &d, const memory_budget &budget,
                                          const srs &key, const circuit_job &job,
                                          device_partials &out, cp_timings &t, bool lanes_held) {
    const circuit_job *batch[1] = {&job};
    device_partials *outs[1] = {&out};
    cp_timings *ts[1] = {&t};
    std::exception_ptr err;
    size_t served = 0;
    return run_pass(d, budget, key, batch, 1, outs, ts, &err, lanes_held, &served);
}

size_t shared_pass_limit(device_state &d, const memory_budget &budget, const srs &key,
                         const circuit_job &job, size_t n, cp_stream_sharing mode) {
    const size_t wanted = stream_share_wanted(mode, d.streamer.cost, &key, n);
    if (wanted < 2 || resident_key(key, d.cuda_id))
        return 1;
    know_library_bytes(d);
    const cache_layout L = layout_for(key, size_t(1) << job.lg_domain);
    const stream_choice c = choose(d, d.lanes[0], budget, key, L, job.sh, wanted);
    return c.upload || !c.fits ? 1 : c.shared;
}

void groth16_shared_pass(device_state &d, const memory_budget &budget, const srs &key,
                         const circuit_job *const *batch, size_t n, device_partials *const *outs,
                         cp_timings *const *ts, std::exception_ptr *errs) {
    // Every lane waited for: a shared pass runs on lane 0. The jobs go in
    // as many passes as the memory allows (one when the decision that
    // formed them still holds).
    auto lanes = d.quiesce();
    for (size_t at = 0; at < n;) {
        size_t served = 0;
        run_pass(d, budget, key, batch + at, n - at, outs + at, ts + at, errs + at, true,
                 &served);
        at += std::max<size_t>(served, 1);
    }
}

}  // namespace cuda_dev
}  // namespace cp
