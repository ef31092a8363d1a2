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
// to the working set: key_streaming.hpp), the shape and the working cache
// as the pass needs them (the thread is bound).
void prepare_pass(device_state &d, const memory_budget &budget, const srs &key, size_t m,
                  const shape *sh);

// Runs the device part of `job` (the thread is bound, the device mutex
// held); fills the phase fields of `t` it measures.
void groth16_pass(device_state &d, const memory_budget &budget, const srs &key,
                  const circuit_job &job, device_partials &out, cp_timings &t);

}  // namespace cuda_dev
}  // namespace cp
