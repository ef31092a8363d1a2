// The device part of one Groth16 proof on one CUDA device: the witness goes
// up once, through the pinned staging ring on the copy stream, overlapping
// the NTTs; the MSM scalars are gathered on the device; H and the MSMs run
// on the gpu's streams. h and l are one MSM (they enter the proof only as
// h + l): its time is reported in msm_h_ns, out.l is zero. A resident
// key's tables of multiples (key_residency.hpp) serve the MSMs whose
// scalars are mostly long. A job with a
// shape sends only its witness: a, b, c are evaluated and checked from the
// resident shape. A key that does not fit next to the working set is
// streamed through the device in chunks (stream_plan.hpp); the timings'
// stream_chunks says so, and jobs with the same key may share one pass over
// its chunks (groth16_shared_pass; stream_shared).
#pragma once

#include <exception>

#include "backend.hpp"
#include "device/budget.hpp"
#include "device/state.hpp"
#include "stream_plan.hpp"

namespace cp {
namespace cuda_dev {

// Places the key (resident, or streamed when it does not fit the budget next
// to the working set: key_streaming.hpp), the shape and lane 0's working
// cache as the pass needs them (the thread is bound, every lane held).
void prepare_pass(device_state &d, const memory_budget &budget, const proving_key &key, size_t m,
                  const shape *sh);

// After prepare_pass and its warm-up (every lane held): lane 1 for the
// key and domain where memory allows, so that the first proofs find it.
void prepare_lanes(device_state &d, const memory_budget &budget, const proving_key &key, size_t m);

// Runs the device part of `job` (the thread is bound, the device mutex
// held); fills `out` and the phase fields of `t` it measures, or returns
// the tail that does when the pass overlaps the next one (two lanes,
// state.hpp): the tail holds its lane until finished. lanes_held: the
// caller holds every lane (device_state::quiesce), and the pass runs on
// lane 0 and completes before it returns.
std::unique_ptr<device_tail> groth16_pass(device_state &d, const memory_budget &budget,
                                          const proving_key &key, const circuit_job &job,
                                          device_partials &out, cp_timings &t,
                                          bool lanes_held = false);

// How many of n jobs like `job` (one key and shape) one pass of this
// device would serve: 1 unless the key is streamed, `mode` says sharing
// pays (stream_share_wanted, by the device's last pass of the key) and the
// memory holds more jobs' scalars next to the chunk buffers (plan_shared).
// The thread is bound, the device mutex held.
size_t shared_pass_limit(device_state &d, const memory_budget &budget, const proving_key &key,
                         const circuit_job &job, size_t n, cp_stream_sharing mode);

// The device parts of n jobs (one key and shape) with each chunk of a
// streamed key sent up once and summed for each of them, in as few passes
// as the memory allows, on lane 0 after every lane's passes; done when it
// returns. errs[i] receives job i's own failure (an unsatisfied witness).
void groth16_shared_pass(device_state &d, const memory_budget &budget, const proving_key &key,
                         const circuit_job *const *batch, size_t n, device_partials *const *outs,
                         cp_timings *const *ts, std::exception_ptr *errs);

}  // namespace cuda_dev
}  // namespace cp
