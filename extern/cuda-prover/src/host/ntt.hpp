// Owns: the host NTTs over Fr (radix-2, bit reversal + butterfly stages,
// multi-threaded) and the H-polynomial computation bellperson does with its
// EvaluationDomain (ifft, coset fft, divide by Z on the coset, icoset fft).
#pragma once

#include <cstddef>
#include <cstdint>

#include "blst.h"

namespace cp {
namespace host {

// out[j] = omega^j for j in [0, n).
void compute_powers(blst_fr *out, size_t n, const blst_fr &omega, int threads);

// In-place forward transform of size 2^lg: data[k] = sum_i data[i] w^(i k),
// where twiddles[j] = w^j for j < 2^(lg-1). No scaling.
void ntt(blst_fr *data, uint32_t lg, const blst_fr *twiddles, int threads);

// data[i] *= start * g^i.
void distribute_powers(blst_fr *data, size_t n, const blst_fr &start, const blst_fr &g,
                       int threads);

// Twiddles for a domain of size 2^lg: fwd[j] = omega^j, inv[j] = omega^-j,
// j < 2^(lg-1) (at least one entry each).
void domain_twiddles(uint32_t lg, blst_fr *fwd, blst_fr *inv, int threads);
inline size_t twiddle_count(uint32_t lg) { return lg == 0 ? 1 : (size_t(1) << (lg - 1)); }

// Inverse transform: ntt with the inverse twiddles, then times 1/m.
void intt(blst_fr *data, uint32_t lg, const blst_fr *inv_twiddles, int threads);

// Given the evaluations a, b, c of one circuit (each of length m = 2^lg,
// zero padded), leaves in `a` the coefficients of
// h(x) = (a(x) b(x) - c(x)) / (x^m - 1); a[m-1] ends up 0. b and c are
// clobbered.
void compute_h(blst_fr *a, blst_fr *b, blst_fr *c, uint32_t lg, const blst_fr *fwd,
               const blst_fr *inv, int threads);

}  // namespace host
}  // namespace cp
