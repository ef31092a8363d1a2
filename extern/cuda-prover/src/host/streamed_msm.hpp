// Owns: the host backend's streamed MSMs, the simulation of a device whose
// memory cannot hold the proving key (stream_plan.hpp). The bases are
// "uploaded" chunk by chunk into two bounded buffers: a helper thread copies
// chunk k+1 into one buffer while the MSM of chunk k runs on the other, and
// the partial sums are added. The result is the same group element as one
// MSM over all bases, so proofs are byte-identical.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "blst.h"

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

// sum over the segments of scalars[i] * points[i], the bases copied through
// `bufs` `per_chunk` at a time. Adds to *chunks the chunks it streamed.
blst_p1 streamed_msm_g1(const base_segment<blst_p1_affine> *segs, size_t nsegs,
                        size_t per_chunk, stream_buffers &bufs, int threads,
                        uint64_t *batch_add_ns, uint64_t *chunks);
blst_p2 streamed_msm_g2(const base_segment<blst_p2_affine> *segs, size_t nsegs,
                        size_t per_chunk, stream_buffers &bufs, int threads,
                        uint64_t *batch_add_ns, uint64_t *chunks);

}  // namespace host
}  // namespace cp
