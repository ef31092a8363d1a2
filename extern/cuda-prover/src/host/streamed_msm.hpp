// Owns: the host backend's streamed MSMs, the simulation of a device whose
// memory cannot hold the proving key (stream_plan.hpp). The bases of a
// pass's MSMs are "uploaded" chunk by chunk into two bounded buffers, in
// the sequence a device sends them (stream_sequence): a helper thread copies
// chunk k+1 into one buffer while the MSM of chunk k runs on the other, also
// across the end of one MSM and the start of the next, and the partial sums
// are added. Proofs with the same key may share a pass: each chunk is
// copied once and summed for each of them. Each result is the same group
// element as one MSM over all its bases, so proofs are byte-identical.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "blst.h"
#include "stream_plan.hpp"

namespace cp {
namespace host {

// The two chunk buffers (the simulated device's streaming memory).
struct stream_buffers {
    std::unique_ptr<unsigned char[]> buf[2];
    size_t bytes = 0;

    // Holds two buffers of exactly `bytes` each.
    void ensure(size_t bytes);
    void release();
};

// One run of bases with their scalars (one scalar per base, no density):
// an MSM's bases are the concatenation of its segments.
template <class Affine>
struct base_segment {
    const Affine *points;
    const blst_fr *scalars;
    size_t n;
};

// One MSM of a streamed pass, for `sets` proofs that share it: its
// segments in G1 (g1) or in G2 (g2), nsegs per proof (proof s's are
// [s * nsegs, (s + 1) * nsegs), with the same points and lengths as proof
// 0's and the proof's own scalars), and where each proof's sum and time go.
struct streamed_msm {
    const base_segment<blst_p1_affine> *g1 = nullptr;  // *outs[s] is a blst_p1
    const base_segment<blst_p2_affine> *g2 = nullptr;  // *outs[s] is a blst_p2
    size_t nsegs = 0;
    size_t sets = 1;
    void *const *outs = nullptr;
    // Each proof's share of the time from the previous MSM's end (an
    // entry may be null).
    uint64_t *const *ns = nullptr;
};

// Sums the MSMs with their bases copied through `bufs`, g1_per_chunk or
// g2_per_chunk bases at a time, each chunk once for every proof that
// shares it. Adds to *chunks the chunks it streamed.
// *cost receives the time of the copies and one proof's share of the
// sums' (stream_cost; its key is left to the caller).
void streamed_msms(const streamed_msm *msms, size_t n, uint64_t g1_per_chunk,
                   uint64_t g2_per_chunk, stream_buffers &bufs, int threads,
                   uint64_t *batch_add_ns, uint64_t *chunks, stream_cost *cost);

}  // namespace host
}  // namespace cp
