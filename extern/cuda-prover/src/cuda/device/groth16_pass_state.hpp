// What the phases of one Groth16 pass (groth16_pass.hpp) share: the pass's
// layout, lane, key copy, streams and the working cache's parts
// (pass_state), and one job's MSMs while its front runs (pass_job); and
// the phases, each in a file of its own (below), which the driver
// (groth16_pass.cu, run_pass) runs in order: the setup, then for each job
// its front (uploads, evaluation, H's NTTs, the MSMs started) and its end,
// then a streamed key's sums. The phases call each other only through the
// declarations below; every file is bundled into one archive, so their
// order does not matter (DEVELOPERS.md).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include <cuda_runtime.h>

#include "backend.hpp"
#include "device/budget.hpp"
#include "device/key_placement.hpp"
#include "device/key_residency.hpp"
#include "device/key_streaming.hpp"
#include "device/pass_memory.hpp"
#include "device/state.hpp"
#include "device/working_cache.hpp"
#include "gpu_ops.hpp"

namespace cp {
namespace cuda_dev {

// Where one job's MSM scalars wait in a shared pass (pass_state::scalars).
struct job_scalars {
    cp_cuda::fr_raw *hl, *sa, *sb;
};

// One pass over the device parts of batch[0, count) (run_pass).
struct pass_state {
    pass_state(device_state &d, const memory_budget &budget, const proving_key &key,
               const circuit_job *const *batch, size_t n, device_partials *const *outs,
               cp_timings *const *ts);

    device_state &d;
    const memory_budget &budget;
    const proving_key &key;
    const circuit_job *const *batch;
    size_t n;
    device_partials *const *outs;
    cp_timings *const *ts;
    uint64_t t_start;  // the pass's start, then each later job's
    const circuit_job &job0;
    size_t m;
    // The pass's layout: place() may choose a phased one (the same counts).
    cache_layout L;

    // The lane (take_pass_lane): an overlapped pass's lock on it (moved
    // into its tail), or every lane's when the pass runs alone and the
    // caller does not hold them.
    std::vector<std::unique_lock<std::mutex>> all_lanes;
    std::unique_lock<std::mutex> lane_lock;
    pass_lane *ln = nullptr;
    bool overlap = false;

    // The placement (place_pass): the key's copy (dk) or its streamed plan.
    key_place kp;
    size_t count = 0;  // jobs the pass serves
    bool trace = false;  // CP_TRACE_PASS
    uint64_t t_placed = 0;
    const key_copy *dk = nullptr;
    size_t temp = 0;
    cudaMemPool_t pool = nullptr;  // its high-water mark reset (reset_pool_mark)

    // The streams and the working cache's parts (lay_out_cache).
    const gpu_t *gpu = nullptr;
    cudaStream_t copy = nullptr;  // the staging ring's
    cudaStream_t zs = nullptr;    // the gpu's default (compute) stream
    char *base = nullptr;
    cp_cuda::fr_raw *d_a = nullptr, *d_b = nullptr, *d_c = nullptr, *d_hl = nullptr,
                    *d_aux = nullptr, *d_in = nullptr, *d_sa = nullptr, *d_sb = nullptr;
    // The density bitmaps and their word prefixes, set by each job's front.
    const uint64_t *d_bits_a = nullptr, *d_bits_bi = nullptr, *d_bits_ba = nullptr;
    const uint32_t *d_pre = nullptr;
    std::vector<job_scalars> scalars;  // per job

    // A streamed key's MSMs (start_stream): declared after the locks, so
    // destroyed (its helper joined) before the lanes are let go, on every
    // way out.
    std::unique_ptr<streamed_msms> streamed;
    std::vector<size_t> live;  // the jobs whose fronts are done

    // Queues a host to device copy through the staging ring.
    void stage(void *dst, const void *src, size_t bytes) {
        d.staging.stage(*gpu, dst, src, bytes);
    }
};

// Job i of the pass: a resident key's MSMs (slot k for key array k) and
// whether A's and B's have started (start_ab).
struct pass_job {
    pass_job(const pass_state &p, size_t i_)
        : i(i_), job(*p.batch[i_]), out(*p.outs[i_]), t(*p.ts[i_]),
          nc(std::min(job.num_constraints, p.m)) {}

    size_t i;
    const circuit_job &job;
    device_partials &out;
    cp_timings &t;
    size_t nc;         // rows of a, b, c before the zero padding
    uint64_t t_h = 0;  // H queued: the NTT phase's start
    cp_cuda::msm_job jobs[key_arrays];
    bool ab_started = false;
    // A failure after A's and B's MSMs started waits for them (start_ab).
    struct drain_guard {
        cp_cuda::msm_context *m = nullptr;
        ~drain_guard() {
            if (m)
                m->drain();
        }
    } guard;
};

// groth16_pass_setup.cu: each job's shape against the key's; the lane
// (p.ln, p.overlap); the key, shape and cache placed (p.kp, p.count:
// *served); the pool's high-water mark reset (p.pool); the cache's parts
// and each job's scalar set.
void check_shapes(const pass_state &p);
void take_pass_lane(pass_state &p, bool lanes_held);
void place_pass(pass_state &p, size_t *served);
void reset_pool_mark(pass_state &p);
void lay_out_cache(pass_state &p);

// groth16_pass_front.cu: job j's front, up to its MSMs' scalars in place
// (A's and B's MSMs started with a resident key; a pass of one job over a
// streamed key started its stream).
void front(pass_state &p, pass_job &j);

// groth16_pass_upload.cu: a, b, c from the host, zero-padded; aux and the
// inputs through the staging ring; the witness of a pass with a resident
// shape (lent or uploaded early: copied into place); the density bitmaps
// and their prefixes (p.d_bits_*, p.d_pre).
void stage_abc(pass_state &p, pass_job &j);
void stage_witness(pass_state &p, const circuit_job &job);
void upload_witness(pass_state &p, const circuit_job &job);
void stage_densities(pass_state &p, const uint64_t *den_a, const uint64_t *den_bi,
                     const uint64_t *den_ba);

// groth16_pass_ntt.cu: H queued after a, b, c (ev_ntt); a device
// evaluation's row check, then H queued (returns when it was).
void queue_h(pass_state &p, pass_job &j);
uint64_t check_rows_then_h(pass_state &p, pass_job &j, uint64_t t_up);

// groth16_pass_msms.cu: A's and B's scalars gathered on stream s; a
// resident key's MSMs of A and B started (j.guard set); a streamed key's
// MSMs for the jobs `which` set up (p.streamed).
void gather_ab(pass_state &p, pass_job &j, cudaStream_t s);
void start_ab(pass_state &p, pass_job &j);
void start_stream(pass_state &p, const std::vector<size_t> &which);

// groth16_pass_finish.cu: a resident key's job ended (its tail when it
// overlaps the next pass, else nullptr); a streamed key's job's scalars
// kept (p.live); the streamed MSMs summed for p.live.
std::unique_ptr<device_tail> finish_resident(pass_state &p, pass_job &j);
void keep_scalars(pass_state &p, pass_job &j);
void sum_streamed(pass_state &p);

// groth16_pass_tail.cu: a resident key's four sums read into out; the
// tail of an overlapped pass, holding `lane`'s lock until it is finished;
// what the pass measured of the device's memory, given the key's bytes.
void finish_msms(cp_cuda::msm_context &msm, const cp_cuda::msm_job *jobs, device_partials &out,
                 cp_timings &t);
std::unique_ptr<device_tail> lane_tail_of(std::unique_lock<std::mutex> &lane,
                                          cp_cuda::msm_context &msm, const cp_cuda::msm_job *jobs,
                                          device_partials &out, cp_timings &t,
                                          const peak_probe &probe);
peak_probe probe_of(const pass_state &p, uint64_t key_bytes);

}  // namespace cuda_dev
}  // namespace cp
