// Streaming a proving key's bases through the device in chunks, when the key
// does not fit the memory a device may use (the context's limit, or the
// card): the decision and the chunk size, shared by both backends so that
// the host backend's simulation takes the same decisions as a GPU. Header
// only (the CUDA libraries use it too).
//
// A streamed proof keeps its working set (polynomials, scalars) resident and
// sends each MSM's bases up in chunks through two buffers of buffer_bytes
// each: chunk k+1 is copied while chunk k is summed, and the partial sums
// are added. The four MSMs are H+L (one MSM over the adjacent H and L
// bases), A and B in G1, and B in G2; a chunk holds buffer_bytes / 96 G1
// bases or buffer_bytes / 192 G2 bases.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "cuda_prover/testing.h"

namespace cp {

constexpr uint64_t STREAM_G1_BYTES = 96;   // blst_p1_affine
constexpr uint64_t STREAM_G2_BYTES = 192;  // blst_p2_affine
// Chunk buffers are a multiple of this (whole G1 and G2 bases, 256-byte
// aligned) and at least STREAM_MIN_BUFFER bytes.
constexpr uint64_t STREAM_GRAIN = 768;
constexpr uint64_t STREAM_MIN_BUFFER = 16 * STREAM_GRAIN;  // 128 G1 / 64 G2 bases

// The bases of one proof's four MSMs.
struct msm_sizes {
    uint64_t n_hl = 0;  // H and L bases (m - 1 + num_aux)
    uint64_t n_a = 0;   // A bases
    uint64_t n_b = 0;   // B bases (G1 and G2 alike)
};

// The four MSMs' bases of a proving key.
template <class Key>
msm_sizes msm_sizes_of(const Key &key) {
    msm_sizes s;
    s.n_hl = uint64_t(key.h.size()) + key.l.size();
    s.n_a = key.a.size();
    s.n_b = key.b_g1.size();
    return s;
}

struct stream_plan {
    uint64_t buffer_bytes = 0;  // each of the two chunk buffers
    uint64_t g1_per_chunk = 0;
    uint64_t g2_per_chunk = 0;
    uint64_t chunks = 0;  // over the four MSMs of one proof
    uint64_t temp_bytes = 0;  // the backend's temporaries for one chunk's MSM
    // Device bytes of a streamed proof: fixed + 2 buffers + temporaries.
    uint64_t total_bytes = 0;
};

inline uint64_t stream_chunks_of(uint64_t n, uint64_t per) {
    return n == 0 ? 1 : (n + per - 1) / per;
}

// Fills p for chunk buffers of `buf` bytes each next to `fixed` bytes, with
// temp as plan_stream's.
template <class Temp>
void plan_fill(stream_plan &p, uint64_t buf, uint64_t fixed, const msm_sizes &s, Temp temp) {
    p.buffer_bytes = buf;
    p.g1_per_chunk = buf / STREAM_G1_BYTES;
    p.g2_per_chunk = buf / STREAM_G2_BYTES;
    p.chunks = stream_chunks_of(s.n_hl, p.g1_per_chunk) + stream_chunks_of(s.n_a, p.g1_per_chunk) +
               stream_chunks_of(s.n_b, p.g1_per_chunk) + stream_chunks_of(s.n_b, p.g2_per_chunk);
    p.temp_bytes = temp(p.g1_per_chunk, p.g2_per_chunk);
    const uint64_t extra = 2 * buf + p.temp_bytes;
    p.total_bytes = fixed > UINT64_MAX - extra ? UINT64_MAX : fixed + extra;
}

// Fills p with the largest buffers that fit `avail` bytes next to `fixed`
// bytes (the working set and whatever else the proof keeps resident), where
// temp(g1_points, g2_points) is what the backend needs on top for one
// chunk's MSM; buffers never exceed what the largest MSM's bases need.
// False when not even two STREAM_MIN_BUFFER buffers fit (p then describes
// that smallest plan, so total_bytes says what would be needed).
template <class Temp>
bool plan_stream(stream_plan &p, uint64_t avail, uint64_t fixed, const msm_sizes &s, Temp temp) {
    auto fill = [&](uint64_t buf) { plan_fill(p, buf, fixed, s, temp); };
    const uint64_t largest = std::max({std::max({s.n_hl, s.n_a, s.n_b}) * STREAM_G1_BYTES,
                                       s.n_b * STREAM_G2_BYTES, STREAM_MIN_BUFFER});
    const uint64_t cap = (largest + STREAM_GRAIN - 1) / STREAM_GRAIN * STREAM_GRAIN;
    fill(STREAM_MIN_BUFFER);
    if (p.total_bytes > avail)
        return false;
    // The largest buffer that fits, searched in grains between the smallest
    // (fits) and the estimate without temporaries: temporaries grow with
    // the chunk, at times in steps (a larger window), so stepping down by
    // the overshoot could jump past every size that fits to the smallest.
    uint64_t lo = STREAM_MIN_BUFFER / STREAM_GRAIN;
    uint64_t hi = std::max(lo, std::min(cap, (avail - fixed) / 2) / STREAM_GRAIN);
    auto fits = [&](uint64_t grains) {
        fill(grains * STREAM_GRAIN);
        return p.total_bytes <= avail;
    };
    while (lo < hi) {
        const uint64_t mid = lo + (hi - lo + 1) / 2;
        if (fits(mid))
            lo = mid;
        else
            hi = mid - 1;
    }
    fill(lo * STREAM_GRAIN);
    return true;
}

// The most proofs one streamed pass serves (plan_shared).
constexpr size_t STREAM_MAX_SHARED = 8;

// How many of `wanted` proofs (at most STREAM_MAX_SHARED) share one
// streamed pass, each chunk sent up once and summed for every one of them,
// and the plan for that pass in *p. Each proof past the first keeps
// `set_bytes` of MSM scalars on the device until the chunks are summed (the
// last one's stay in the working set), so the buffers shrink as proofs
// join. A proof joins while the buffers stay at least half of one proof's
// (`single`, from plan_stream with the same avail, fixed and temp): the
// chunks at most about double, the copies per proof fall to 1 / n. 1 (and
// *p = single) when no second proof fits.
template <class Temp>
size_t plan_shared(stream_plan &p, const stream_plan &single, size_t wanted, uint64_t avail,
                   uint64_t fixed, uint64_t set_bytes, const msm_sizes &s, Temp temp) {
    p = single;
    size_t n = 1;
    const size_t most = std::min(wanted, STREAM_MAX_SHARED);
    for (size_t k = 2; k <= most; k++) {
        const uint64_t extra = uint64_t(k - 1) * set_bytes;
        if (set_bytes && extra / set_bytes != k - 1)
            break;
        if (extra > UINT64_MAX - fixed)
            break;
        stream_plan q;
        if (!plan_stream(q, avail, fixed + extra, s, temp) ||
            q.buffer_bytes < single.buffer_bytes / 2)
            break;
        p = q;
        n = k;
    }
    return n;
}

// What a device measured of its last streamed pass of `key`: the copies of
// the key's chunks, and one proof's sums of them.
struct stream_cost {
    const void *key = nullptr;
    uint64_t copy_ns = 0;
    uint64_t sum_ns = 0;
};

// Proofs worth one shared pass (CP_SHARE_AUTO) by the last pass of the same
// key: a pass copies the next chunk while it sums the current one, so n
// proofs take about max(copy, n * sum); sharing pays while the copy is the
// longer, up to copy / sum proofs. 1 without a measurement of this key.
inline size_t stream_share_pays(const stream_cost &c, const void *key) {
    if (c.key != key || c.sum_ns == 0 || c.copy_ns <= c.sum_ns)
        return 1;
    return (size_t)std::min<uint64_t>(STREAM_MAX_SHARED, (c.copy_ns + c.sum_ns - 1) / c.sum_ns);
}

// How many of n proofs may share a pass by `mode` (the memory decides the
// rest: plan_shared).
inline size_t stream_share_wanted(cp_stream_sharing mode, const stream_cost &c, const void *key,
                                  size_t n) {
    if (mode == CP_SHARE_NEVER)
        return 1;
    if (mode == CP_SHARE_ALWAYS)
        return n;
    return std::min(n, stream_share_pays(c, key));
}

// One chunk of a streamed pass: bases [first, first + count) of MSM `msm`.
struct stream_chunk {
    size_t msm = 0;
    uint64_t first = 0, count = 0;
};

// One MSM of a streamed pass: its bases and how many of them a chunk holds
// (the plan's g1_per_chunk or g2_per_chunk, by the MSM's group).
struct stream_extent {
    uint64_t bases = 0;
    uint64_t per_chunk = 0;
};

// The chunks of a pass's MSMs in the order they are sent and summed: each
// MSM's bases cut per_chunk at a time, MSM after MSM, so one sequence runs
// through two buffers across the MSMs' ends; an MSM without bases is one
// chunk of none. For the four MSMs of msm_sizes (H + L, A, B in G1, B in
// G2) there are plan.chunks of them.
inline std::vector<stream_chunk> stream_sequence(const std::vector<stream_extent> &msms) {
    std::vector<stream_chunk> seq;
    for (size_t j = 0; j < msms.size(); j++) {
        const uint64_t n = msms[j].bases, per = std::max<uint64_t>(1, msms[j].per_chunk);
        if (n == 0) {
            seq.push_back({j, 0, 0});
            continue;
        }
        for (uint64_t first = 0; first < n; first += per)
            seq.push_back({j, first, std::min(per, n - first)});
    }
    return seq;
}

// The least memory a streamed proof needs (two STREAM_MIN_BUFFER buffers).
template <class Temp>
uint64_t min_stream_bytes(uint64_t fixed, const msm_sizes &s, Temp temp) {
    stream_plan p;
    plan_stream(p, 0, fixed, s, temp);
    return p.total_bytes;
}

}  // namespace cp
