// Owns: host MSM implementation (see msm.hpp).
//
// Three phases, each over `threads` threads:
//  1. classify: walk the scalars (and the density bitmap), skip zeros,
//     collect pointers to the points whose scalar is one, and collect
//     (point pointer, blst_scalar) pairs for the rest;
//  2. gather the per-thread lists into contiguous arrays;
//  3. even split: each thread runs blst Pippenger on its share of the general
//     pairs and blst_pXs_add on its share of the "ones", then the partial
//     sums are added.
// blst's array convention: `points[]` is an array of pointers; a NULL entry
// after the first means "continue contiguously from the previous one". We
// pass arrays of non-NULL pointers to points (no copy of the points) and
// {scalars, NULL} for the contiguous scalars.
#include "host/msm.hpp"

#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "clock.hpp"
#include "field.hpp"
#include "parallel.hpp"

namespace cp {
namespace host {

namespace {

struct g1_ops {
    using affine = blst_p1_affine;
    using proj = blst_p1;
    static size_t scratch_sizeof(size_t n) { return blst_p1s_mult_pippenger_scratch_sizeof(n); }
    static void pippenger(proj *r, const affine *const *pts, size_t n, const byte *const *sc,
                          limb_t *scratch) {
        blst_p1s_mult_pippenger(r, pts, n, sc, 255, scratch);
    }
    static void sum(proj *r, const affine *const *pts, size_t n) { blst_p1s_add(r, pts, n); }
    static void add(proj *r, const proj *a, const proj *b) { blst_p1_add_or_double(r, a, b); }
};

struct g2_ops {
    using affine = blst_p2_affine;
    using proj = blst_p2;
    static size_t scratch_sizeof(size_t n) { return blst_p2s_mult_pippenger_scratch_sizeof(n); }
    static void pippenger(proj *r, const affine *const *pts, size_t n, const byte *const *sc,
                          limb_t *scratch) {
        blst_p2s_mult_pippenger(r, pts, n, sc, 255, scratch);
    }
    static void sum(proj *r, const affine *const *pts, size_t n) { blst_p2s_add(r, pts, n); }
    static void add(proj *r, const proj *a, const proj *b) { blst_p2_add_or_double(r, a, b); }
};

// Below this many scalars per thread, fewer threads are used.
constexpr size_t CLASSIFY_GRAIN = 4096;
constexpr size_t PIPPENGER_GRAIN = 2048;
constexpr size_t ADD_GRAIN = 4096;

template <class G>
struct local_lists {
    std::vector<const typename G::affine *> ones;
    std::vector<const typename G::affine *> pts;
    std::vector<blst_scalar> sc;
};

template <class G>
typename G::proj msm(const typename G::affine *points, const blst_fr *scalars, size_t nscalars,
                     const uint64_t *density, int threads, uint64_t *batch_add_ns) {
    using affine = typename G::affine;
    using proj = typename G::proj;
    proj result;
    std::memset(&result, 0, sizeof result);  // the identity (Z = 0)
    if (nscalars == 0) return result;

    // 1. classify.
    const size_t nchunks = chunk_count(nscalars, threads, CLASSIFY_GRAIN);
    std::vector<local_lists<G>> lists(nchunks);
    // Point index at the start of each chunk (prefix popcount of density).
    std::vector<size_t> point_start(nchunks, 0);
    for (size_t t = 0; t < nchunks; t++) {
        size_t b = nscalars * t / nchunks;
        point_start[t] = density ? static_cast<size_t>(popcount_bits(density, b)) : b;
    }
    parallel_for(nscalars, static_cast<int>(nchunks), CLASSIFY_GRAIN,
                 [&](size_t b, size_t e, size_t t) {
                     local_lists<G> &L = lists[t];
                     size_t k = point_start[t];
                     for (size_t i = b; i < e; i++) {
                         if (density && !bit_is_set(density, i)) continue;
                         const blst_fr &s = scalars[i];
                         const affine *p = &points[k++];
                         if (fr_is_zero(s)) continue;
                         if (fr_is_one(s)) {
                             L.ones.push_back(p);
                             continue;
                         }
                         blst_scalar bs;
                         blst_scalar_from_fr(&bs, &s);
                         L.pts.push_back(p);
                         L.sc.push_back(bs);
                     }
                 });

    // 2. gather.
    size_t n_ones = 0, n_gen = 0;
    std::vector<size_t> ones_off(nchunks), gen_off(nchunks);
    for (size_t t = 0; t < nchunks; t++) {
        ones_off[t] = n_ones;
        gen_off[t] = n_gen;
        n_ones += lists[t].ones.size();
        n_gen += lists[t].pts.size();
    }
    std::vector<const affine *> ones, pts;
    std::vector<blst_scalar> sc;
    if (nchunks == 1) {
        ones.swap(lists[0].ones);
        pts.swap(lists[0].pts);
        sc.swap(lists[0].sc);
    } else {
        ones.resize(n_ones);
        pts.resize(n_gen);
        sc.resize(n_gen);
        parallel_for(nchunks, static_cast<int>(nchunks), 1, [&](size_t b, size_t e, size_t) {
            for (size_t t = b; t < e; t++) {
                local_lists<G> &L = lists[t];
                std::copy(L.ones.begin(), L.ones.end(), ones.begin() + ones_off[t]);
                std::copy(L.pts.begin(), L.pts.end(), pts.begin() + gen_off[t]);
                std::copy(L.sc.begin(), L.sc.end(), sc.begin() + gen_off[t]);
                local_lists<G>().ones.swap(L.ones);  // release early
                std::vector<const affine *>().swap(L.pts);
                std::vector<blst_scalar>().swap(L.sc);
            }
        });
    }
    lists.clear();

    // 3. Pippenger over the general scalars and sums of the "ones".
    const size_t gchunks = chunk_count(n_gen, threads, PIPPENGER_GRAIN);
    const size_t achunks = chunk_count(n_ones, threads, ADD_GRAIN);
    const size_t work = std::max<size_t>(std::max(gchunks, achunks), 1);
    std::vector<proj> partial(2 * work);
    std::memset(partial.data(), 0, partial.size() * sizeof(proj));
    std::vector<uint64_t> add_ns(work, 0);
    parallel_for(work, static_cast<int>(work), 1, [&](size_t b, size_t e, size_t) {
        for (size_t w = b; w < e; w++) {
            if (w < gchunks) {
                size_t lo = n_gen * w / gchunks, hi = n_gen * (w + 1) / gchunks;
                size_t cnt = hi - lo;
                if (cnt) {
                    std::unique_ptr<limb_t[]> scratch(
                        new limb_t[G::scratch_sizeof(cnt) / sizeof(limb_t) + 1]);
                    const byte *sptr[2] = {sc[lo].b, nullptr};
                    G::pippenger(&partial[2 * w], &pts[lo], cnt, sptr, scratch.get());
                }
            }
            if (w < achunks) {
                auto t0 = clock_type::now();
                size_t lo = n_ones * w / achunks, hi = n_ones * (w + 1) / achunks;
                if (hi > lo) G::sum(&partial[2 * w + 1], &ones[lo], hi - lo);
                add_ns[w] = ns_since(t0);
            }
        }
    });
    uint64_t max_add = 0;
    for (size_t w = 0; w < work; w++) {
        G::add(&result, &result, &partial[2 * w]);
        G::add(&result, &result, &partial[2 * w + 1]);
        max_add = std::max(max_add, add_ns[w]);
    }
    if (batch_add_ns) *batch_add_ns += max_add;
    return result;
}

}  // namespace

blst_p1 msm_g1(const blst_p1_affine *points, const blst_fr *scalars, size_t nscalars,
               const uint64_t *density, int threads, uint64_t *batch_add_ns) {
    return msm<g1_ops>(points, scalars, nscalars, density, threads, batch_add_ns);
}

blst_p2 msm_g2(const blst_p2_affine *points, const blst_fr *scalars, size_t nscalars,
               const uint64_t *density, int threads, uint64_t *batch_add_ns) {
    return msm<g2_ops>(points, scalars, nscalars, density, threads, batch_add_ns);
}

}  // namespace host
}  // namespace cp
