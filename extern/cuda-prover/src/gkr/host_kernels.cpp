// Owns: the host backend's GKR kernels: buffers in host memory, the kernels
// on the device's CPU threads (parallel_for).
#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>
#include <memory>
#include <vector>

#include "backend.hpp"
#include "gkr/kernels.hpp"
#include "parallel.hpp"

namespace cp {
namespace gkr {
namespace {

constexpr size_t GRAIN = 1 << 12;
// Elements per piece of an input copy when the caller names none.
constexpr size_t DEFAULT_CHUNK = size_t(1) << 16;

class host_kernels_impl final : public kernels {
public:
    explicit host_kernels_impl(int threads) : threads_(threads) {}

    buf_id alloc(size_t n) override {
        // Uninitialized, as the seam says: every kernel writes before it reads.
        buffer b;
        b.n = n;
        if (n) b.p.reset(new bb::ext[n]);
        const buf_id id = next_++;
        bufs_.emplace(id, std::move(b));
        bytes_ += n * sizeof(bb::ext);
        return id;
    }

    buf_id upload(const bb::ext *host, size_t n) override {
        const buf_id id = alloc(n);
        if (n) std::memcpy(bufs_[id].p.get(), host, n * sizeof(bb::ext));
        return id;
    }

    void download(view v, size_t n, bb::ext *host) override {
        const bb::ext *p = at(v, n);
        if (n) std::memcpy(host, p, n * sizeof(bb::ext));
    }

    void release(buf_id b) override {
        auto it = bufs_.find(b);
        if (it == bufs_.end()) return;
        bytes_ -= it->second.n * sizeof(bb::ext);
        bufs_.erase(it);
    }

    size_t upload_words(view dst, const uint32_t *words, size_t n, bool canonical,
                        size_t chunk) override {
        bb::ext *d = at(dst, n);
        if (chunk == 0) chunk = DEFAULT_CHUNK;
        const size_t pieces = (n + chunk - 1) / chunk;
        std::atomic<size_t> first_bad{n};
        // One piece per step, the pieces spread over the threads.
        parallel_for(pieces, threads_, 1, [&](size_t pb, size_t pe, size_t) {
            for (size_t piece = pb; piece < pe; piece++) {
                const size_t lo = piece * chunk, hi = std::min(n, lo + chunk);
                for (size_t i = lo; i < hi; i++) {
                    const uint32_t *w = words + 4 * i;
                    if (w[0] >= bb::P || w[1] >= bb::P || w[2] >= bb::P || w[3] >= bb::P) {
                        size_t seen = first_bad.load();
                        while (i < seen && !first_bad.compare_exchange_weak(seen, i)) {
                        }
                        break;  // later entries of this piece cannot be first
                    }
                    for (int c = 0; c < 4; c++) d[i].c[c] = canonical ? bb::to_mont(w[c]) : w[c];
                }
            }
        });
        return first_bad.load();
    }

    void sync() override {}

    void eq_table(view out, const bb::ext *r, uint32_t m) override {
        const size_t n = size_t(1) << m;
        bb::ext *o = at(out, n);
        std::vector<bb::ext> one_minus(m);
        for (uint32_t k = 0; k < m; k++) one_minus[k] = bb::ext_sub(bb::ext_one(), r[k]);
        parallel_for(n, threads_, GRAIN, [&](size_t b, size_t e, size_t) {
            for (size_t i = b; i < e; i++) {
                bb::ext acc = bb::ext_one();
                for (uint32_t k = 0; k < m; k++) {
                    const bool bit = (i >> (m - 1 - k)) & 1;
                    acc = bb::ext_mul(acc, bit ? r[k] : one_minus[k]);
                }
                o[i] = acc;
            }
        });
    }

    void product_layer(view child, view parent, size_t half) override {
        const bb::ext *c = at(child, 2 * half);
        bb::ext *p = at(parent, half);
        parallel_for(half, threads_, GRAIN, [&](size_t b, size_t e, size_t) {
            for (size_t j = b; j < e; j++) p[j] = bb::ext_mul(c[j], c[j + half]);
        });
    }

    void fraction_layer(view p_child, view q_child, view p_parent, view q_parent,
                        size_t half) override {
        const bb::ext *pc = at(p_child, 2 * half), *qc = at(q_child, 2 * half);
        bb::ext *pp = at(p_parent, half), *qp = at(q_parent, half);
        parallel_for(half, threads_, GRAIN, [&](size_t b, size_t e, size_t) {
            for (size_t j = b; j < e; j++) {
                const bb::ext &pl = pc[j], &pr = pc[j + half], &ql = qc[j], &qr = qc[j + half];
                pp[j] = bb::ext_add(bb::ext_mul(pl, qr), bb::ext_mul(pr, ql));
                qp[j] = bb::ext_mul(ql, qr);
            }
        });
    }

    void round(const view *tables, size_t num_tables, size_t len, const term *terms,
               size_t num_terms, uint32_t degree, bb::ext *out) override {
        std::vector<const bb::ext *> t(num_tables);
        for (size_t i = 0; i < num_tables; i++) t[i] = at(tables[i], len);
        const size_t half = len / 2;
        const size_t chunks = chunk_count(half, threads_, GRAIN);
        std::vector<bb::ext> partial(chunks * (MAX_DEGREE + 1), bb::ext_zero());
        parallel_for(half, threads_, GRAIN, [&](size_t b, size_t e, size_t c) {
            bb::ext *acc = &partial[c * (MAX_DEGREE + 1)];
            std::vector<bb::ext> at_t(num_tables), diff(num_tables);
            for (size_t j = b; j < e; j++) {
                for (size_t i = 0; i < num_tables; i++) {
                    at_t[i] = t[i][j];
                    diff[i] = bb::ext_sub(t[i][j + half], t[i][j]);
                }
                for (uint32_t k = 0; k <= degree; k++) {
                    if (k > 0)
                        for (size_t i = 0; i < num_tables; i++) at_t[i] = bb::ext_add(at_t[i], diff[i]);
                    bb::ext s = bb::ext_zero();
                    for (size_t q = 0; q < num_terms; q++) {
                        bb::ext prod = terms[q].coeff;
                        for (uint32_t f = 0; f < terms[q].n; f++)
                            prod = bb::ext_mul(prod, at_t[terms[q].idx[f]]);
                        s = bb::ext_add(s, prod);
                    }
                    acc[k] = bb::ext_add(acc[k], s);
                }
            }
        });
        for (uint32_t k = 0; k <= degree; k++) {
            bb::ext s = bb::ext_zero();
            for (size_t c = 0; c < chunks; c++) s = bb::ext_add(s, partial[c * (MAX_DEGREE + 1) + k]);
            out[k] = s;
        }
    }

    void fold(const view *tables, size_t num_tables, size_t len, const bb::ext &r) override {
        const size_t half = len / 2;
        for (size_t i = 0; i < num_tables; i++) {
            bb::ext *p = at(tables[i], len);
            parallel_for(half, threads_, GRAIN, [&](size_t b, size_t e, size_t) {
                for (size_t j = b; j < e; j++) p[j] = bb::ext_lerp(p[j], p[j + half], r);
            });
        }
    }

    void field_op(int op, const bb::ext *a, const bb::ext *b, bb::ext *out, size_t n) override {
        parallel_for(n, threads_, GRAIN, [&](size_t lo, size_t hi, size_t) {
            for (size_t i = lo; i < hi; i++) {
                switch (op) {
                    case CP_BB4_ADD: out[i] = bb::ext_add(a[i], b[i]); break;
                    case CP_BB4_SUB: out[i] = bb::ext_sub(a[i], b[i]); break;
                    case CP_BB4_MUL: out[i] = bb::ext_mul(a[i], b[i]); break;
                    default: out[i] = bb::ext_inv(a[i]); break;
                }
            }
        });
    }

    uint64_t bytes() const override { return bytes_.load(); }

    uint64_t trim() override {
        const uint64_t freed = bytes_.exchange(0);
        bufs_.clear();
        return freed;
    }

private:
    // The first n entries of a view, checked against its buffer.
    bb::ext *at(view v, size_t n) {
        auto it = bufs_.find(v.buf);
        if (it == bufs_.end())
            fail(CP_ERR_INVALID_ARGUMENT,
                 "GKR buffer " + std::to_string(v.buf) + " is gone (freed by cp_device_trim?)");
        if (v.offset > it->second.n || n > it->second.n - v.offset)
            fail(CP_ERR_INTERNAL, "GKR view past the end of buffer " + std::to_string(v.buf));
        return it->second.p.get() + v.offset;
    }

    struct buffer {
        std::unique_ptr<bb::ext[]> p;
        size_t n = 0;
    };

    int threads_;
    buf_id next_ = 1;
    std::map<buf_id, buffer> bufs_;
    std::atomic<uint64_t> bytes_{0};
};

}  // namespace

std::unique_ptr<kernels> host_kernels(int threads) {
    return std::unique_ptr<kernels>(new host_kernels_impl(threads));
}

}  // namespace gkr
}  // namespace cp
