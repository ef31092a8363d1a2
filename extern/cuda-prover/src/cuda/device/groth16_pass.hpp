// The device part of one Groth16 proof on one CUDA device: the witness goes
// up once, through the pinned staging ring on the copy stream, overlapping
// the NTTs; the MSM scalars are gathered on the device; H and the MSMs run
// on the gpu's streams. h and l are one MSM (they enter the proof only as
// h + l): its time is reported in msm_h_ns, out.l is zero. A job with a
// shape sends only its witness: a, b, c are evaluated and checked from the
// resident shape.
#pragma once

#include "backend.hpp"
#include "device/budget.hpp"
#include "device/state.hpp"

namespace cp {
namespace cuda_dev {

// Places the key, the shape and the working cache as the pass needs them
// (the thread is bound).
void prepare_pass(device_state &d, const memory_budget &budget, const srs &key, size_t m,
                  const shape *sh);

// Runs the device part of `job` (the thread is bound, the device mutex
// held); fills the phase fields of `t` it measures.
void groth16_pass(device_state &d, const memory_budget &budget, const srs &key,
                  const circuit_job &job, device_partials &out, cp_timings &t);

}  // namespace cuda_dev
}  // namespace cp
