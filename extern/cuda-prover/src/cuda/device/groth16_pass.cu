// The Groth16 device pass (groth16_pass.hpp): its driver, run_pass, which
// runs the phases (groth16_pass_state.hpp) in order, and the entry points.
#include "device/groth16_pass.hpp"

#include <algorithm>
#include <cstring>
#include <memory>

#include "device/groth16_pass_state.hpp"
#include "device/key_placement.hpp"
#include "device/key_residency.hpp"
#include "device/lanes.hpp"
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

void prepare_pass(device_state &d, const memory_budget &budget, const proving_key &key, size_t m,
                  const shape *sh) {
    cp_timings t;
    std::memset(&t, 0, sizeof(t));
    const cache_layout L = layout_for(key, m);
    settle_lanes(d, key, L);
    place(d, d.lanes[0], budget, key, L, sh, t);
}

void prepare_lanes(device_state &d, const memory_budget &budget, const proving_key &key, size_t m) {
    if (const key_copy *dk = resident_key(key, d.cuda_id))
        open_second_lane(d, budget, *dk, layout_for(key, m));
}

namespace {

// The device parts of batch[0, n) (one key and shape): the first alone (the
// tail as groth16_pass says), or, when the key is streamed, as many as
// share its pass (*served; plan_shared), each chunk summed for all of
// them. A job whose witness fails its shape gets its error in errs[i] when
// it shares a pass, and leaves it.
std::unique_ptr<device_tail> run_pass(device_state &d, const memory_budget &budget,
                                      const proving_key &key, const circuit_job *const *batch,
                                      size_t n, device_partials *const *outs, cp_timings *const *ts,
                                      std::exception_ptr *errs, bool lanes_held, size_t *served) {
    // What the phases share; on every way out a streamed key's helper is
    // joined before the lanes are let go (pass_state's members).
    pass_state p(d, budget, key, batch, n, outs, ts);
    // The jobs' shapes checked, the lane taken, the key, the shape and the
    // lane's cache placed (the jobs the pass serves), the pool's high-water
    // mark reset, the cache's parts laid out.
    check_shapes(p);
    take_pass_lane(p, lanes_held);
    place_pass(p, served);
    reset_pool_mark(p);
    lay_out_cache(p);

    for (size_t i = 0; i < p.count; i++) {
        if (i)
            p.t_start = now_ns();
        try {
            pass_job j(p, i);
            // The witness up, a, b, c evaluated or sent, H's NTTs queued and
            // the MSMs' scalars gathered (A's and B's MSMs started with a
            // resident key).
            front(p, j);
            // A resident key's pass serves one job: its sums read, or its
            // tail returned when the pass overlaps the next one.
            if (p.dk)
                return finish_resident(p, j);
            // A streamed key's job keeps its scalars for the sums below.
            keep_scalars(p, j);
        } catch (const error &e) {
            // A job's own failure leaves a shared pass; the others go on.
            if (n == 1 || e.code != CP_ERR_UNSATISFIED)
                throw;
            errs[i] = std::current_exception();
        }
    }
    // A streamed key's MSMs, each chunk summed for every job.
    sum_streamed(p);
    return nullptr;
}

}  // namespace

std::unique_ptr<device_tail> groth16_pass(device_state &d, const memory_budget &budget,
                                          const proving_key &key, const circuit_job &job,
                                          device_partials &out, cp_timings &t, bool lanes_held) {
    const circuit_job *batch[1] = {&job};
    device_partials *outs[1] = {&out};
    cp_timings *ts[1] = {&t};
    std::exception_ptr err;
    size_t served = 0;
    return run_pass(d, budget, key, batch, 1, outs, ts, &err, lanes_held, &served);
}

size_t shared_pass_limit(device_state &d, const memory_budget &budget, const proving_key &key,
                         const circuit_job &job, size_t n, cp_stream_sharing mode) {
    const size_t wanted = stream_share_wanted(mode, d.streamer.cost, &key, n);
    if (wanted < 2 || resident_key(key, d.cuda_id))
        return 1;
    know_library_bytes(d);
    const cache_layout L = layout_for(key, size_t(1) << job.lg_domain);
    const stream_choice c = choose(d, d.lanes[0], budget, key, L, job.sh, wanted);
    return c.upload || !c.fits ? 1 : c.shared;
}

void groth16_shared_pass(device_state &d, const memory_budget &budget, const proving_key &key,
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
