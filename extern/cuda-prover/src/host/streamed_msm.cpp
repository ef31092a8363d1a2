// Owns: host streamed MSMs (see streamed_msm.hpp).
#include "host/streamed_msm.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <exception>
#include <thread>
#include <vector>

#include "clock.hpp"
#include "host/msm.hpp"
#include "stream_plan.hpp"

namespace cp {
namespace host {

void stream_buffers::ensure(size_t b) {
    if (bytes == b && buf[0])
        return;
    release();
    buf[0].reset(new unsigned char[b]);
    buf[1].reset(new unsigned char[b]);
    bytes = b;
}

void stream_buffers::release() {
    buf[0].reset();
    buf[1].reset();
    bytes = 0;
}

namespace {

blst_p1 msm_of(const blst_p1_affine *p, const blst_fr *s, size_t n, int threads, uint64_t *add) {
    return msm_g1(p, s, n, nullptr, threads, add);
}
blst_p2 msm_of(const blst_p2_affine *p, const blst_fr *s, size_t n, int threads, uint64_t *add) {
    return msm_g2(p, s, n, nullptr, threads, add);
}
void add_to(blst_p1 &acc, const blst_p1 &x) { blst_p1_add_or_double(&acc, &acc, &x); }
void add_to(blst_p2 &acc, const blst_p2 &x) { blst_p2_add_or_double(&acc, &acc, &x); }

// Calls piece(segment, from, len) for the parts of the segments that bases
// [first, first + count) of their concatenation cover, in order.
template <class Affine, class Piece>
void pieces(const base_segment<Affine> *segs, size_t nsegs, size_t first, size_t count,
            Piece piece) {
    size_t at = 0;
    for (size_t i = 0; i < nsegs && count; i++) {
        const size_t n = segs[i].n;
        if (first >= at + n) {
            at += n;
            continue;
        }
        const size_t from = first - at;
        const size_t len = std::min(count, n - from);
        piece(segs[i], from, len);
        first += len;
        count -= len;
        at += n;
    }
}

// Copies bases [first, first + count) of the segments into `dst`.
template <class Affine>
void upload(const base_segment<Affine> *segs, size_t nsegs, size_t first, size_t count,
            unsigned char *dst) {
    auto copy = [&](const base_segment<Affine> &seg, size_t from, size_t len) {
        std::memcpy(dst, seg.points + from, len * sizeof(Affine));
        dst += len * sizeof(Affine);
    };
    pieces(segs, nsegs, first, count, copy);
}

// Adds to acc the MSM of bases [first, first + count), held in `src`, with
// their scalars (one call per segment the chunk touches).
template <class Affine, class Proj>
void sum(const base_segment<Affine> *segs, size_t nsegs, size_t first, size_t count,
         const unsigned char *src, Proj &acc, int threads, uint64_t *add_ns) {
    const Affine *pts = reinterpret_cast<const Affine *>(src);
    auto add = [&](const base_segment<Affine> &seg, size_t from, size_t len) {
        const Proj part = msm_of(pts, seg.scalars + from, len, threads, add_ns);
        add_to(acc, part);
        pts += len;
    };
    pieces(segs, nsegs, first, count, add);
}

template <class Affine>
size_t total(const base_segment<Affine> *segs, size_t nsegs) {
    size_t n = 0;
    for (size_t i = 0; i < nsegs; i++) n += segs[i].n;
    return n;
}

}  // namespace

void streamed_msms(const streamed_msm *msms, size_t n, uint64_t g1_per, uint64_t g2_per,
                   stream_buffers &bufs, int threads, uint64_t *add_ns, uint64_t *chunks,
                   stream_cost *cost) {
    std::atomic<uint64_t> copy_ns{0};
    uint64_t sum_ns = 0;
    std::vector<stream_extent> extents;
    for (size_t j = 0; j < n; j++) {
        const streamed_msm &m = msms[j];
        if (m.g2)
            extents.push_back({total(m.g2, m.nsegs), g2_per});
        else
            extents.push_back({total(m.g1, m.nsegs), g1_per});
        // The identity (Z = 0).
        for (size_t s = 0; s < m.sets; s++)
            std::memset(m.outs[s], 0, m.g2 ? sizeof(blst_p2) : sizeof(blst_p1));
    }
    const std::vector<stream_chunk> seq = stream_sequence(extents);
    auto copy = [&](size_t k) {
        const auto t0 = clock_type::now();
        const stream_chunk &c = seq[k];
        const streamed_msm &m = msms[c.msm];
        unsigned char *dst = bufs.buf[k % 2].get();
        if (m.g2)
            upload(m.g2, m.nsegs, c.first, c.count, dst);
        else
            upload(m.g1, m.nsegs, c.first, c.count, dst);
        copy_ns += ns_since(t0);
    };
    auto t = clock_type::now();
    if (!seq.empty()) copy(0);
    for (size_t k = 0; k < seq.size(); k++) {
        // Chunk k + 1 goes up from a helper thread while chunk k is
        // summed; buffer (k + 1) % 2 is free: the sum of chunk k - 1 returned.
        std::exception_ptr failed;
        std::thread next;
        if (k + 1 < seq.size()) {
            next = std::thread([&, k] {
                try {
                    copy(k + 1);
                } catch (...) {
                    failed = std::current_exception();
                }
            });
        }
        const stream_chunk &c = seq[k];
        const streamed_msm &m = msms[c.msm];
        const unsigned char *src = bufs.buf[k % 2].get();
        const auto t_sum = clock_type::now();
        try {
            for (size_t s = 0; s < m.sets; s++) {
                if (m.g2)
                    sum(m.g2 + s * m.nsegs, m.nsegs, c.first, c.count, src,
                        *static_cast<blst_p2 *>(m.outs[s]), threads, add_ns);
                else
                    sum(m.g1 + s * m.nsegs, m.nsegs, c.first, c.count, src,
                        *static_cast<blst_p1 *>(m.outs[s]), threads, add_ns);
            }
        } catch (...) {
            if (next.joinable()) next.join();
            throw;
        }
        sum_ns += ns_since(t_sum) / std::max<size_t>(1, m.sets);
        if (next.joinable()) next.join();
        if (failed) std::rethrow_exception(failed);
        if (k + 1 == seq.size() || seq[k + 1].msm != c.msm) {
            const auto now = clock_type::now();
            const uint64_t spent = ns_between(t, now);
            for (size_t s = 0; s < m.sets; s++)
                if (m.ns && m.ns[s]) *m.ns[s] += spent / m.sets;
            t = now;
        }
    }
    *chunks += seq.size();
    cost->copy_ns = copy_ns.load();
    cost->sum_ns = sum_ns;
}

}  // namespace host
}  // namespace cp
