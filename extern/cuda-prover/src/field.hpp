// Owns: small Fr (BLS12-381 scalar field) helpers over blst_fr, shared by the
// orchestration and both backends: constants, comparisons, pow, the 2-adic
// root of unity and the coset generator used by bellperson/blstrs.
#pragma once

#include <cstdint>
#include <cstring>

#include "blst.h"

namespace cp {

inline blst_fr fr_from_u64(uint64_t v) {
    uint64_t a[4] = {v, 0, 0, 0};
    blst_fr r;
    blst_fr_from_uint64(&r, a);
    return r;
}

inline blst_fr fr_zero() {
    blst_fr r;
    std::memset(&r, 0, sizeof r);
    return r;
}

// Montgomery form of 1 (R mod r).
inline const blst_fr &fr_one() {
    static const blst_fr one = fr_from_u64(1);
    return one;
}

inline bool fr_eq(const blst_fr &a, const blst_fr &b) {
    return ((a.l[0] ^ b.l[0]) | (a.l[1] ^ b.l[1]) | (a.l[2] ^ b.l[2]) | (a.l[3] ^ b.l[3])) == 0;
}
inline bool fr_is_zero(const blst_fr &a) { return (a.l[0] | a.l[1] | a.l[2] | a.l[3]) == 0; }
inline bool fr_is_one(const blst_fr &a) { return fr_eq(a, fr_one()); }

inline blst_fr fr_mul(const blst_fr &a, const blst_fr &b) {
    blst_fr r;
    blst_fr_mul(&r, &a, &b);
    return r;
}
inline blst_fr fr_add(const blst_fr &a, const blst_fr &b) {
    blst_fr r;
    blst_fr_add(&r, &a, &b);
    return r;
}
inline blst_fr fr_sub(const blst_fr &a, const blst_fr &b) {
    blst_fr r;
    blst_fr_sub(&r, &a, &b);
    return r;
}
// Inverse; the inverse of 0 is 0.
inline blst_fr fr_inv(const blst_fr &a) {
    blst_fr r;
    blst_fr_inverse(&r, &a);
    return r;
}

// base^e for a 256-bit exponent given as little-endian limbs.
inline blst_fr fr_pow_limbs(const blst_fr &base, const uint64_t e[4]) {
    blst_fr acc = fr_one();
    for (int i = 255; i >= 0; i--) {
        blst_fr_sqr(&acc, &acc);
        if ((e[i / 64] >> (i % 64)) & 1) blst_fr_mul(&acc, &acc, &base);
    }
    return acc;
}

inline blst_fr fr_pow(const blst_fr &base, uint64_t e) {
    blst_fr acc = fr_one(), b = base;
    while (e) {
        if (e & 1) blst_fr_mul(&acc, &acc, &b);
        blst_fr_sqr(&b, &b);
        e >>= 1;
    }
    return acc;
}

// The 2-adicity of r - 1.
constexpr uint32_t FR_TWO_ADICITY = 32;
// Largest domain the provers accept (bellperson: exp < S = 32).
constexpr uint32_t MAX_LG_DOMAIN = 31;

// The smallest lg with 2^lg >= n, at most 63 whatever n is.
inline uint32_t domain_lg_of(uint64_t n) {
    uint32_t lg = 0;
    while (lg < 63 && (uint64_t(1) << lg) < n) lg++;
    return lg;
}

// blstrs' MULTIPLICATIVE_GENERATOR (7), the coset shift.
inline blst_fr fr_coset_generator() { return fr_from_u64(7); }

// blstrs' ROOT_OF_UNITY, 7^((r-1)/2^32), a primitive 2^32-th root of unity,
// in Montgomery form.
inline blst_fr fr_root_of_unity_2_32() {
    blst_fr r;
    r.l[0] = 0xb9b58d8c5f0e466aULL;
    r.l[1] = 0x5b1b4c801819d7ecULL;
    r.l[2] = 0x0af53ae352a31e64ULL;
    r.l[3] = 0x5bf3adda19e9b27bULL;
    return r;
}

// A primitive 2^lg-th root of unity, the one bellperson's EvaluationDomain
// uses (ROOT_OF_UNITY squared 32 - lg times). lg <= 32.
inline blst_fr fr_root_of_unity(uint32_t lg) {
    blst_fr w = fr_root_of_unity_2_32();
    for (uint32_t i = lg; i < FR_TWO_ADICITY; i++) blst_fr_sqr(&w, &w);
    return w;
}

// Number of set bits among the first nbits bits of a density bitmap.
inline uint64_t popcount_bits(const uint64_t *bits, uint64_t nbits) {
    if (nbits == 0 || bits == nullptr) return 0;
    uint64_t full = nbits / 64, n = 0;
    for (uint64_t i = 0; i < full; i++) n += static_cast<uint64_t>(__builtin_popcountll(bits[i]));
    uint64_t rem = nbits % 64;
    if (rem) n += static_cast<uint64_t>(__builtin_popcountll(bits[full] & ((uint64_t(1) << rem) - 1)));
    return n;
}

inline bool bit_is_set(const uint64_t *bits, uint64_t i) { return (bits[i / 64] >> (i % 64)) & 1; }

}  // namespace cp
