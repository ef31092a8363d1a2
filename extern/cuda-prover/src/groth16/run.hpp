// Owns: the device part of a call's checked jobs: each job routed by the
// dispatcher to its device, a witness-only job's witness lent to that
// device before its mutex is taken, items of several callers sharing one
// pass over a streamed key, and the results gathered into a new pending
// proof for the epilogue.
#pragma once

#include <vector>

#include "core.hpp"
#include "dispatch.hpp"

namespace cp {

// A job's blinding factors, where the caller keeps them.
struct blinding {
    const cp_fr *r, *s;
};

// The device part of every job over its route, into a new pending proof.
cp_pending *run_jobs(cp_context &ctx, const proving_key &key, const std::vector<circuit_job> &jobs,
                     const std::vector<blinding> &bl, const route &rt, cp_mutex *mutex);

}  // namespace cp
