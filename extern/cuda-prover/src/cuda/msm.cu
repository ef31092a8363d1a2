// Multi-scalar multiplications on one GPU, for G1 and G2 of BLS12-381: the
// msm_context of gpu_ops.hpp. Each slot is a Pippenger engine
// (msm_engine.cuh: sppark's kernels, our orchestration, buffers allocated
// once), a stream and a pinned buffer for its window sums, so the MSMs of a
// proof run at the same time on their own streams and nothing is allocated
// per MSM. The window sums are combined on the host (blst) when read.
//
// This file makes and configures a context, and holds the one-shot MSMs.
// The rest is in the headers it includes, by concept (one translation
// unit, since sppark's kernels are instantiated here alone):
//   msm_context_slots.cuh   what a context holds: its slots and buffers
//   msm_context_tables.cuh  tables of multiples: when they pay, the build
//   msm_context_launch.cuh  one MSM on a slot: classify, launch
//   msm_context_jobs.cuh    a proof's MSMs: start, finish, run, drain
//   msm_context_read.cuh    a slot's window sums into one point
#include "msm_context_slots.cuh"
#include "msm_context_tables.cuh"
#include "msm_context_launch.cuh"
#include "msm_context_jobs.cuh"
#include "msm_context_read.cuh"

#include <algorithm>
#include <memory>
#include <vector>

namespace cp_cuda {

size_t msm_context_bytes(const std::vector<msm_slot_spec> &slots, int sm_count) {
    size_t total = 0;
    for (const auto &s : slots)
        total += msm_detail::align256(slot_bytes(s, sm_count));
    return std::max<size_t>(total, 256);
}

msm_context::msm_context(const gpu_t &gpu, const std::vector<msm_slot_spec> &slots)
    : p_(new impl) {
    using msm_detail::cuda_ok;
    p_->device = gpu.cid();  // the CUDA ordinal (id() is the index in the device set)
    p_->sm_count = gpu.sm_count();
    cuda_ok(cudaSetDevice(p_->device), "cudaSetDevice");
    size_t per_group[2] = {0, 0};
    for (const auto &s : slots)
        if (++per_group[s.group == msm_group::g2] > MAX_SLOTS_PER_GROUP)
            throw cuda_error{-(int)cudaErrorInvalidValue,
                             std::string("cuda-prover MSM: too many slots of one group")};
    p_->bytes = msm_context_bytes(slots, p_->sm_count);
    p_->slots.resize(slots.size());
    for (auto &s : p_->slots) {
        cuda_ok(cudaStreamCreateWithFlags(&s.stream, cudaStreamNonBlocking), "cudaStreamCreate");
        cuda_ok(cudaEventCreate(&s.start), "cudaEventCreate");
        cuda_ok(cudaEventCreate(&s.stop), "cudaEventCreate");
        cuda_ok(cudaEventCreateWithFlags(&s.sorted, cudaEventDisableTiming), "cudaEventCreate");
        cuda_ok(cudaEventCreateWithFlags(&s.released, cudaEventDisableTiming), "cudaEventCreate");
    }
    cuda_ok(cudaMallocHost((void **)&p_->pinned, std::max<size_t>(slots.size(), 1) *
                                                     sizeof(pinned_t)),
            "cudaMallocHost");
    // From the device's default pool, so the pool's high-water mark (the
    // device part's peak) sees it.
    const cudaStream_t s0 = p_->slots.empty() ? (cudaStream_t)gpu : p_->slots[0].stream;
    cuda_ok(cudaMallocAsync(&p_->base, p_->bytes, s0), "cudaMallocAsync (MSM buffers)");
    cuda_ok(cudaStreamSynchronize(s0), "cudaStreamSynchronize");
    char *at = (char *)p_->base;
    uint32_t sid[2] = {0, 0};
    for (size_t i = 0; i < slots.size(); i++) {
        auto &s = p_->slots[i];
        s.spec = slots[i];
        const bool g2 = s.spec.group == msm_group::g2;
        if (g2)
            s.e2.reset(new g2_engine(at, s.spec.n_max, p_->sm_count, sid[1]++, s.spec.table,
                                     s.spec.batch_max, s.spec.overlap_sort));
        else
            s.e1.reset(new g1_engine(at, s.spec.n_max, p_->sm_count, sid[0]++, s.spec.table,
                                     s.spec.batch_max, s.spec.overlap_sort));
        at += msm_detail::align256(slot_bytes(s.spec, p_->sm_count));
        if (s.spec.overlap_sort) {
            auto &l = s.lane;
            cuda_ok(cudaStreamCreateWithFlags(&l.stream, cudaStreamNonBlocking),
                    "cudaStreamCreate");
            for (cudaEvent_t *e : l.events())
                cuda_ok(cudaEventCreateWithFlags(e, cudaEventDisableTiming), "cudaEventCreate");
            if (g2)
                s.e2->sort_on(l);
            else
                s.e1->sort_on(l);
        }
    }
}

msm_context::~msm_context() = default;

size_t msm_context::bytes() const { return p_->bytes; }

size_t msm_context::slot_count() const { return p_->slots.size(); }

bool msm_context::fits(const std::vector<msm_slot_spec> &slots) const {
    if (slots.size() != p_->slots.size())
        return false;
    for (size_t i = 0; i < slots.size(); i++)
        if (slots[i].group != p_->slots[i].spec.group ||
            slots[i].n_max > p_->slots[i].spec.n_max ||
            (slots[i].table && !p_->slots[i].spec.table) ||
            (slots[i].overlap_sort && !p_->slots[i].spec.overlap_sort) ||
            msm_detail::batch_scalars(slots[i].batch_max) >
                msm_detail::batch_scalars(p_->slots[i].spec.batch_max))
            return false;
    return true;
}

cudaStream_t msm_context::stream(size_t slot) const { return p_->at(slot).stream; }

void msm_context::profile(size_t slot, msm_profile *p) {
    auto &sl = p_->at(slot);
    sl.profile = p;
    if (sl.e2)
        sl.e2->profile(p);
    else
        sl.e1->profile(p);
}

void msm_context::window_bits(size_t slot, uint32_t wbits) {
    auto &sl = p_->at(slot);
    if (sl.e2)
        sl.e2->force_window_bits(wbits);
    else
        sl.e1->force_window_bits(wbits);
}

void msm_context::tune(size_t slot, const msm_tuning &t) {
    auto &sl = p_->at(slot);
    if (sl.e2)
        sl.e2->tune(t);
    else
        sl.e1->tune(t);
}

const char *msm_phase_name(int phase) {
    static const char *const names[msm_phase_count] = {
        "classify", "ones", "breakdown", "sort", "batch_add",
        "accumulate", "integrate", "finish", "combine"};
    return phase >= 0 && phase < msm_phase_count ? names[phase] : "?";
}

void msm_g1_device(const gpu_t &gpu, g1_proj_raw &out, const void *d_points,
                   const void *d_scalars, size_t n) {
    msm_context ctx(gpu, {{msm_group::g1, n}});
    msm_job job{0, d_points, d_scalars, n};
    ctx.run(&job, 1, nullptr, nullptr);
    ctx.read(0, out);
}

void msm_g2_device(const gpu_t &gpu, g2_proj_raw &out, const void *d_points,
                   const void *d_scalars, size_t n) {
    msm_context ctx(gpu, {{msm_group::g2, n}});
    msm_job job{0, d_points, d_scalars, n};
    ctx.run(&job, 1, nullptr, nullptr);
    ctx.read(0, out);
}

}  // namespace cp_cuda
