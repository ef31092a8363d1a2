// Owns: host streamed MSMs (see streamed_msm.hpp).
#include "host/streamed_msm.hpp"

#include <cstring>
#include <exception>
#include <thread>

#include "host/msm.hpp"

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

template <class Affine, class Proj>
Proj streamed(const base_segment<Affine> *segs, size_t nsegs, size_t per, stream_buffers &bufs,
              int threads, uint64_t *add_ns, uint64_t *chunks) {
    Proj acc;
    std::memset(&acc, 0, sizeof acc);  // the identity (Z = 0)
    size_t total = 0;
    for (size_t i = 0; i < nsegs; i++) total += segs[i].n;
    if (total == 0) {
        // One (empty) chunk, as the device streams it.
        *chunks += 1;
        return acc;
    }
    const size_t nchunks = (total + per - 1) / per;
    // Calls piece(segment, from, len) for the parts of the segments that
    // bases [first, first + count) of the concatenation cover, in order.
    auto pieces = [&](size_t first, size_t count, auto piece) {
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
    };
    // Copies bases [first, first + count) of the concatenation into `dst`.
    auto upload = [&](size_t first, size_t count, unsigned char *dst) {
        pieces(first, count, [&](const base_segment<Affine> &seg, size_t from, size_t len) {
            std::memcpy(dst, seg.points + from, len * sizeof(Affine));
            dst += len * sizeof(Affine);
        });
    };
    // The MSM of bases [first, first + count), held in `src`, with their
    // scalars (one call per segment the chunk touches).
    auto sum = [&](size_t first, size_t count, const unsigned char *src) {
        const Affine *pts = reinterpret_cast<const Affine *>(src);
        pieces(first, count, [&](const base_segment<Affine> &seg, size_t from, size_t len) {
            const Proj part = msm_of(pts, seg.scalars + from, len, threads, add_ns);
            add_to(acc, part);
            pts += len;
        });
    };
    auto range = [&](size_t k) { return std::min(per, total - k * per); };
    upload(0, range(0), bufs.buf[0].get());
    for (size_t k = 0; k < nchunks; k++) {
        std::exception_ptr failed;
        std::thread next;
        if (k + 1 < nchunks) {
            next = std::thread([&, k] {
                try {
                    upload((k + 1) * per, range(k + 1), bufs.buf[(k + 1) % 2].get());
                } catch (...) {
                    failed = std::current_exception();
                }
            });
        }
        try {
            sum(k * per, range(k), bufs.buf[k % 2].get());
        } catch (...) {
            if (next.joinable()) next.join();
            throw;
        }
        if (next.joinable()) next.join();
        if (failed) std::rethrow_exception(failed);
    }
    *chunks += nchunks;
    return acc;
}

}  // namespace

blst_p1 streamed_msm_g1(const base_segment<blst_p1_affine> *segs, size_t nsegs,
                        size_t per_chunk, stream_buffers &bufs, int threads,
                        uint64_t *batch_add_ns, uint64_t *chunks) {
    return streamed<blst_p1_affine, blst_p1>(segs, nsegs, per_chunk, bufs, threads,
                                             batch_add_ns, chunks);
}

blst_p2 streamed_msm_g2(const base_segment<blst_p2_affine> *segs, size_t nsegs,
                        size_t per_chunk, stream_buffers &bufs, int threads,
                        uint64_t *batch_add_ns, uint64_t *chunks) {
    return streamed<blst_p2_affine, blst_p2>(segs, nsegs, per_chunk, bufs, threads,
                                             batch_add_ns, chunks);
}

}  // namespace host
}  // namespace cp
