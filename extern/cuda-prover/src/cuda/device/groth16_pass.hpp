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
// stream_chunks says so.
#pragma once

#include "backend.hpp"
#include "device/budget.hpp"
#include "device/state.hpp"
#include "stream_plan.hpp"

namespace cp {
namespace cuda_dev {

// The chunk plan of a streamed key: `avail` bytes for everything, `fixed`
// of them held by what stays resident; *fits says whether it fits.
stream_plan plan_for(const device_state &d, uint64_t avail, uint64_t fixed, const srs &key,
                     bool *fits);

// Places the key (resident, or streamed when it does not fit the budget next
// to the working set: key_streaming.hpp), the shape and lane 0's working
// cache as the pass needs them (the thread is bound, every lane held).
void prepare_pass(device_state &d, const memory_budget &budget, const srs &key, size_t m,
                  const shape *sh);

// After prepare_pass and its warm-up (every lane held): lane 1 for the
// key and domain where memory allows, so that the first proofs find it.
void prepare_lanes(device_state &d, const memory_budget &budget, const srs &key, size_t m);

// Runs the device part of `job` (the thread is bound, the device mutex
// held); fills `out` and the phase fields of `t` it measures, or returns
// the tail that does when the pass overlaps the next one (two lanes,
// state.hpp): the tail holds its lane until finished. lanes_held: the
// caller holds every lane (device_state::quiesce), and the pass runs on
// lane 0 and completes before it returns.
std::unique_ptr<device_tail> groth16_pass(device_state &d, const memory_budget &budget,
                                          const srs &key, const circuit_job &job,
                                          device_partials &out, cp_timings &t,
                                          bool lanes_held = false);

}  // namespace cuda_dev
}  // namespace cp
