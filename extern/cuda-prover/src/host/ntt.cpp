// Owns: host NTT implementation (see ntt.hpp).
#include "host/ntt.hpp"

#include <utility>

#include "field.hpp"
#include "parallel.hpp"

namespace cp {
namespace host {

namespace {
// Below this many elements the work is done on one thread.
constexpr size_t GRAIN = size_t(1) << 11;
// Stages done block by block: 2^12 elements of 32 bytes, 128 KiB.
constexpr uint32_t BLOCK_LG = 12;

inline uint64_t bit_reverse(uint64_t x, uint32_t lg) {
    x = ((x >> 1) & 0x5555555555555555ULL) | ((x & 0x5555555555555555ULL) << 1);
    x = ((x >> 2) & 0x3333333333333333ULL) | ((x & 0x3333333333333333ULL) << 2);
    x = ((x >> 4) & 0x0F0F0F0F0F0F0F0FULL) | ((x & 0x0F0F0F0F0F0F0F0FULL) << 4);
    x = ((x >> 8) & 0x00FF00FF00FF00FFULL) | ((x & 0x00FF00FF00FF00FFULL) << 8);
    x = ((x >> 16) & 0x0000FFFF0000FFFFULL) | ((x & 0x0000FFFF0000FFFFULL) << 16);
    x = (x >> 32) | (x << 32);
    return x >> (64 - lg);
}
}  // namespace

void compute_powers(blst_fr *out, size_t n, const blst_fr &omega, int threads) {
    parallel_for(n, threads, GRAIN, [&](size_t b, size_t e, size_t) {
        blst_fr cur = fr_pow(omega, b);
        for (size_t j = b; j < e; j++) {
            out[j] = cur;
            blst_fr_mul(&cur, &cur, &omega);
        }
    });
}

void domain_twiddles(uint32_t lg, blst_fr *fwd, blst_fr *inv, int threads) {
    blst_fr w = fr_root_of_unity(lg);
    blst_fr wi = fr_inv(w);
    size_t n = twiddle_count(lg);
    compute_powers(fwd, n, w, threads);
    compute_powers(inv, n, wi, threads);
}

void ntt(blst_fr *x, uint32_t lg, const blst_fr *tw, int threads) {
    if (lg == 0) return;
    const size_t m = size_t(1) << lg;
    const size_t half = m / 2;
    // Bit-reversal permutation: each pair is swapped by the owner of the
    // smaller index.
    parallel_for(m, threads, GRAIN, [&](size_t b, size_t e, size_t) {
        for (size_t i = b; i < e; i++) {
            size_t j = static_cast<size_t>(bit_reverse(i, lg));
            if (i < j) std::swap(x[i], x[j]);
        }
    });
    // Stages: butterflies of span h, twiddle w^(j * m / 2h). The first
    // `kb` stages stay inside aligned blocks of 2^kb elements, small enough
    // for the cache: each block runs them all at once, one pass over memory
    // instead of kb. The remaining stages span blocks and run one by one.
    const uint32_t kb = lg < BLOCK_LG ? lg : BLOCK_LG;
    const size_t bs = size_t(1) << kb;
    parallel_for(m / bs, threads, 1, [&](size_t b, size_t e, size_t) {
        for (size_t blk = b; blk < e; blk++) {
            blst_fr *y = x + blk * bs;
            for (uint32_t s = 0; s < kb; s++) {
                const size_t h = size_t(1) << s;
                const uint32_t stride_lg = lg - 1 - s;
                for (size_t g0 = 0; g0 < bs; g0 += 2 * h) {
                    for (size_t j = 0; j < h; j++) {
                        blst_fr t;
                        blst_fr_mul(&t, &tw[j << stride_lg], &y[g0 + j + h]);
                        blst_fr_sub(&y[g0 + j + h], &y[g0 + j], &t);
                        blst_fr_add(&y[g0 + j], &y[g0 + j], &t);
                    }
                }
            }
        }
    });
    for (uint32_t s = kb; s < lg; s++) {
        const size_t h = size_t(1) << s;
        const uint32_t stride_lg = lg - 1 - s;
        parallel_for(half, threads, GRAIN, [&](size_t b, size_t e, size_t) {
            for (size_t k = b; k < e; k++) {
                size_t j = k & (h - 1);
                size_t i0 = ((k >> s) << (s + 1)) + j;
                size_t i1 = i0 + h;
                blst_fr t;
                blst_fr_mul(&t, &tw[j << stride_lg], &x[i1]);
                blst_fr_sub(&x[i1], &x[i0], &t);
                blst_fr_add(&x[i0], &x[i0], &t);
            }
        });
    }
}

void distribute_powers(blst_fr *data, size_t n, const blst_fr &start, const blst_fr &g,
                       int threads) {
    parallel_for(n, threads, GRAIN, [&](size_t b, size_t e, size_t) {
        blst_fr cur = fr_mul(start, fr_pow(g, b));
        for (size_t i = b; i < e; i++) {
            blst_fr_mul(&data[i], &data[i], &cur);
            blst_fr_mul(&cur, &cur, &g);
        }
    });
}

void intt(blst_fr *data, uint32_t lg, const blst_fr *inv, int threads) {
    const size_t m = size_t(1) << lg;
    ntt(data, lg, inv, threads);
    blst_fr minv = fr_inv(fr_from_u64(m));
    distribute_powers(data, m, minv, fr_one(), threads);
}

void compute_h(blst_fr *a, blst_fr *b, blst_fr *c, uint32_t lg, const blst_fr *fwd,
               const blst_fr *inv, int threads) {
    const size_t m = size_t(1) << lg;
    const blst_fr g = fr_coset_generator();
    const blst_fr minv = fr_inv(fr_from_u64(m));
    // Evaluations -> coefficients (scaled by 1/m) -> shifted to the coset g*H
    // -> evaluations on the coset.
    for (blst_fr *p : {a, b, c}) {
        ntt(p, lg, inv, threads);
        distribute_powers(p, m, minv, g, threads);
        ntt(p, lg, fwd, threads);
    }
    // On the coset, Z(x) = x^m - 1 is the constant g^m - 1.
    const blst_fr zinv = fr_inv(fr_sub(fr_pow(g, m), fr_one()));
    parallel_for(m, threads, GRAIN, [&](size_t lo, size_t hi, size_t) {
        for (size_t i = lo; i < hi; i++) {
            blst_fr t;
            blst_fr_mul(&t, &a[i], &b[i]);
            blst_fr_sub(&t, &t, &c[i]);
            blst_fr_mul(&a[i], &t, &zinv);
        }
    });
    // Back to coefficients on the coset, then undo the shift.
    ntt(a, lg, inv, threads);
    distribute_powers(a, m, minv, fr_inv(g), threads);
}

}  // namespace host
}  // namespace cp
