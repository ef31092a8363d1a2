// Owns: the seam between the GKR entry points (sumcheck.cpp, tower.cpp) and
// a backend's GKR kernels on one device: buffers of extension elements kept
// in the device's working cache (freed all at once by trim), and the
// kernels over them. Values cross this seam in Montgomery form (bb::ext).
//
// Every call runs with the calling thread bound to the device and the
// device's own mutex held (the dispatcher's), except bytes(), which reads an
// atomic.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "gkr/babybear.hpp"

namespace cp {
namespace gkr {

// A buffer of the device's cache. Ids are never reused by a device; an id
// that trim freed is unknown (lookups fail with CP_ERR_INVALID_ARGUMENT).
using buf_id = uint64_t;

// A table: `len` entries of buffer `buf` from `offset` on.
struct view {
    buf_id buf = 0;
    size_t offset = 0;
};

// coeff * prod_{k < n} tables[idx[k]].
struct term {
    bb::ext coeff;
    uint32_t n = 0;
    uint32_t idx[4] = {0, 0, 0, 0};
};

constexpr uint32_t MAX_DEGREE = 4;

class kernels {
public:
    virtual ~kernels() = default;

    // A buffer of n elements: uninitialized, or a copy of host values.
    virtual buf_id alloc(size_t n) = 0;
    virtual buf_id upload(const bb::ext *host, size_t n) = 0;
    virtual void download(view v, size_t n, bb::ext *host) = 0;
    virtual void release(buf_id b) = 0;

    // Fills the first n entries of `dst` from host words (4 per element):
    // canonical coefficients converted to Montgomery form, or Montgomery
    // words taken as they are, every coefficient checked to be below p on
    // the way. The input travels in pieces of `chunk` elements (0: the
    // backend's default); the piece size never changes the result.
    // Returns the index of the first element with a coefficient >= p, or n
    // when there is none (dst's contents are then unspecified).
    virtual size_t upload_words(view dst, const uint32_t *words, size_t n, bool canonical,
                                size_t chunk) = 0;
    // Waits for the kernels queued so far and reports their errors. The
    // element-wise kernels (layers, eq, fold) may return before they
    // finish; round and download wait for everything queued before them.
    virtual void sync() = 0;

    // out[i] = prod_k (bit k of i from the top ? r[k] : 1 - r[k]), i < 2^m.
    virtual void eq_table(view out, const bb::ext *r, uint32_t m) = 0;

    // parent[j] = child[j] * child[j + half], j < half.
    virtual void product_layer(view child, view parent, size_t half) = 0;
    // (p, q)[j] = (pL qR + pR qL, qL qR), L = [j], R = [j + half].
    virtual void fraction_layer(view p_child, view q_child, view p_parent, view q_parent,
                                size_t half) = 0;

    // out[t] = sum_{j < len/2} sum_terms coeff * prod lerp(T[j], T[j + len/2], t)
    // for t = 0..degree; len >= 2.
    virtual void round(const view *tables, size_t num_tables, size_t len, const term *terms,
                       size_t num_terms, uint32_t degree, bb::ext *out) = 0;
    // Every table: T[j] = lerp(T[j], T[j + len/2], r), j < len/2.
    virtual void fold(const view *tables, size_t num_tables, size_t len, const bb::ext &r) = 0;

    // out[i] = a[i] op b[i] on the device (cp_bb4_op), host arrays.
    virtual void field_op(int op, const bb::ext *a, const bb::ext *b, bb::ext *out, size_t n) = 0;

    // Bytes the kernels hold: live buffers, and the released ones a backend
    // keeps for reuse (CUDA), which trim frees too.
    virtual uint64_t bytes() const = 0;
    // Frees every buffer; returns the bytes freed.
    virtual uint64_t trim() = 0;
};

// The host backend's kernels (CPU threads).
std::unique_ptr<kernels> host_kernels(int threads);
#ifdef CP_WITH_CUDA
// The CUDA backend's kernels on CUDA device `cuda_id`.
std::unique_ptr<kernels> cuda_kernels(int cuda_id);
#endif

}  // namespace gkr
}  // namespace cp
