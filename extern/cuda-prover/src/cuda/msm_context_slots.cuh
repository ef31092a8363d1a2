// What an msm_context holds (part of msm.cu, included by it alone): the
// sppark types it runs on, each slot's engine, streams, events and state,
// the pinned host buffer each slot's counts and window sums come back to,
// and the device buffer the slots are carved from.
#pragma once

#define SPPARK_DONT_INSTANTIATE_TEMPLATES
#define TAKE_RESPONSIBILITY_FOR_ERROR_MESSAGE

#include <cuda_runtime.h>

#include <ff/bls12-381-fp2.hpp>
#include <ec/jacobian_t.hpp>
#include <ec/xyzz_t.hpp>

#include "gpu_ops.hpp"

#include <msm/pippenger.cuh>

#include "msm_engine.cuh"

#include <memory>
#include <string>
#include <vector>

namespace cp_cuda {
namespace {

using g1_point = jacobian_t<fp_t>;
using g1_bucket = xyzz_t<fp_t>;
using g1_affine = g1_bucket::affine_t;
using g2_point = jacobian_t<fp2_t>;
using g2_bucket = xyzz_t<fp2_t>;
using g2_affine = g2_bucket::affine_t;

#ifndef __CUDA_ARCH__  // host-side types; on the device an Fp2 element is spread over two lanes
static_assert(sizeof(g1_point) == sizeof(g1_proj_raw), "G1 Jacobian layout");
static_assert(sizeof(g2_point) == sizeof(g2_proj_raw), "G2 Jacobian layout");
static_assert(sizeof(g1_affine) == sizeof(g1_affine_raw), "G1 affine layout");
static_assert(sizeof(g2_affine) == sizeof(g2_affine_raw), "G2 affine layout");
static_assert(sizeof(g1_affine::mem_t) == sizeof(g1_affine_raw), "G1 affine layout");
static_assert(sizeof(g2_affine::mem_t) == sizeof(g2_affine_raw), "G2 affine layout");
static_assert(sizeof(fr_t) == sizeof(fr_raw), "Fr layout");
// On the host a bucket's memory form is the bucket itself (xyzz_t::mem_t).
static_assert(sizeof(g1_bucket::mem_t) == sizeof(g1_bucket), "G1 bucket layout");
static_assert(sizeof(g2_bucket::mem_t) == sizeof(g2_bucket), "G2 bucket layout");
#endif
static_assert(msm_detail::FINISH_THREADS == MSM_NTHREADS,
              "finish kernel must see integrate's thread layout");

using g1_engine = msm_detail::msm_engine<g1_bucket, g1_affine, fr_t>;
using g2_engine = msm_detail::msm_engine<g2_bucket, g2_affine, fr_t>;

// Concurrent users of sppark's cooperative kernels need distinct counter
// slots per group (accumulate's MSM_NSTREAMS, batch_addition's
// BATCH_ADD_NSTREAMS).
constexpr size_t MAX_SLOTS_PER_GROUP = 8;

size_t slot_bytes(const msm_slot_spec &s, int sm_count) {
    return s.group == msm_group::g2
               ? g2_engine::layout(s.n_max, sm_count, s.table, s.batch_max, s.overlap_sort).total
               : g1_engine::layout(s.n_max, sm_count, s.table, s.batch_max, s.overlap_sort).total;
}

// Host side of what a slot copies back: the counts of classify and the
// window sums (xyzz points, msm_engine::window_sums), with the window count
// and width of the run that left them.
struct pinned_t {
    uint32_t counts[msm_detail::COUNTS];
    uint32_t recounts[msm_detail::COUNTS];  // a second classify's (the same values)
    uint32_t windows_and_wbits;
    alignas(16) unsigned char wsum[msm_detail::WSUM_SLOTS][sizeof(g2_bucket)];
};

}  // namespace

struct msm_context::impl {
    struct slot_t {
        msm_slot_spec spec;
        std::unique_ptr<g1_engine> e1;
        std::unique_ptr<g2_engine> e2;
        cudaStream_t stream = nullptr;
        cudaEvent_t start = nullptr, stop = nullptr;
        // Past the last table run's sort; past the last run that used
        // another slot's sorted digits.
        cudaEvent_t sorted = nullptr, released = nullptr;
        // The engine's second stream and its events (msm_slot_spec::
        // overlap_sort), or null ones.
        msm_detail::sort_lane lane;
        msm_profile *profile = nullptr;
        bool wants_table = false;  // the last launch's table_pays
        bool table_run = false;    // the last launch sorted its own digits for a table run
        bool gathered = false;     // the last classify gathered the split's rest
        size_t dense = 0;          // the last classify's dense head (msm_job::dense), or 0
        bool in_crowd = false;     // started as a table run, not finished yet
    };
    int device = 0;
    int sm_count = 0;
    void *base = nullptr;
    size_t bytes = 0;
    pinned_t *pinned = nullptr;  // one per slot
    std::vector<slot_t> slots;
    // Table runs started and not yet finished (the crowd a run starts in:
    // msm_engine::affine).
    uint32_t tables_in_flight = 0;

    ~impl() {
        int prev = -1;
        (void)cudaGetDevice(&prev);
        (void)cudaSetDevice(device);
        // The buffers came from the default pool (cudaMallocAsync) and go
        // back to it in stream order, once every slot's work is done:
        // cudaFree would release the memory but leave the pool's count of
        // used bytes (what a pass reads as its peak) as it was.
        for (auto &s : slots) {
            if (s.stream)
                (void)cudaStreamSynchronize(s.stream);
            if (s.lane.stream)
                (void)cudaStreamSynchronize(s.lane.stream);
        }
        if (base) {
            const cudaStream_t s0 = slots.empty() ? nullptr : slots[0].stream;
            (void)cudaFreeAsync(base, s0);
            (void)cudaStreamSynchronize(s0);
        }
        for (auto &s : slots) {
            if (s.stream)
                (void)cudaStreamDestroy(s.stream);  // idle: synchronized above
            if (s.start)
                (void)cudaEventDestroy(s.start);
            if (s.stop)
                (void)cudaEventDestroy(s.stop);
            for (cudaEvent_t e : {s.sorted, s.released})
                if (e)
                    (void)cudaEventDestroy(e);
            if (s.lane.stream)
                (void)cudaStreamDestroy(s.lane.stream);  // idle: synchronized above
            for (cudaEvent_t *e : s.lane.events())
                if (*e)
                    (void)cudaEventDestroy(*e);
        }
        if (pinned)
            (void)cudaFreeHost(pinned);
        (void)cudaGetLastError();
        if (prev >= 0)
            (void)cudaSetDevice(prev);
    }

    // msm_context::launch, with the sorted digits of `donor`'s table run
    // (a slot of an earlier job of the same start over the same scalars)
    // when this launch also takes a table run.
    void launch(size_t slot, cudaStream_t s, const void *d_points, const void *d_scalars,
                size_t n, bool split01, uint32_t table_wbits, slot_t *donor,
                cudaEvent_t gate);
    // msm_context::classify; without `gather` the scalars are only counted
    // (a job with a table: launch gathers them if the table does not pay).
    // A dense head (msm_job::dense) is left out of the classification when
    // it is larger than the split could gather anyway.
    void classify(size_t slot, cudaStream_t s, const void *d_points, const void *d_scalars,
                  size_t n, bool gather, size_t dense = 0);

    slot_t &at(size_t i) {
        if (i >= slots.size())
            throw cuda_error{-(int)cudaErrorInvalidValue,
                             std::string("cuda-prover MSM: no such slot")};
        return slots[i];
    }
};

}  // namespace cp_cuda
