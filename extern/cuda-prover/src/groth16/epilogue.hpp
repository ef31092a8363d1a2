// Owns: the host epilogue of a Groth16 proof (bellperson 0.27's formulas):
// A, B and C from a device part's partial sums, the key's points and the
// blinding factors, every point checked to lie in its prime-order subgroup
// before the proof leaves the core.
#pragma once

#include "core.hpp"

namespace cp {

// One pending entry's proof into out, its epilogue timed.
void finish_one(const cp_pending &p, const cp_pending::entry &e, cp_proof &out);

}  // namespace cp
