// Owns: BabyBear arithmetic (p = 2^31 - 2^27 + 1) in Montgomery form
// (R = 2^32) and its degree-4 extension F_p[X] / (X^4 - 11), the same code
// for host C++ and CUDA device code. Values are exact, so every backend and
// every summation order gives the same bits.
#pragma once

#include <cstdint>

#ifdef __CUDACC__
#define CP_HD __host__ __device__ __forceinline__
#else
#define CP_HD inline
#endif

namespace cp {
namespace bb {

constexpr uint32_t P = 0x78000001u;  // 2^31 - 2^27 + 1
constexpr uint32_t W = 11;           // X^4 = W in the extension

// p^-1 mod 2^32 by Newton's iteration (each step doubles the correct bits).
constexpr uint32_t inv_mod_2_32(uint32_t a) {
    uint32_t x = a;  // correct to 3 bits for odd a
    for (int i = 0; i < 5; i++) x *= 2u - a * x;
    return x;
}
constexpr uint32_t P_INV = inv_mod_2_32(P);
static_assert(P * P_INV == 1u, "p * p^-1 = 1 mod 2^32");
// 2^64 mod p, to enter Montgomery form.
constexpr uint32_t R2 = static_cast<uint32_t>(((unsigned __int128)1 << 64) % P);

// a * b * 2^-32 mod p for a, b < p.
CP_HD uint32_t mont_mul(uint32_t a, uint32_t b) {
    const uint64_t t = static_cast<uint64_t>(a) * b;
    const uint32_t m = static_cast<uint32_t>(t) * P_INV;
    const uint64_t u = static_cast<uint64_t>(m) * P;  // low halves of t and u agree
    const uint32_t th = static_cast<uint32_t>(t >> 32), uh = static_cast<uint32_t>(u >> 32);
    return th >= uh ? th - uh : th - uh + P;
}
CP_HD uint32_t add(uint32_t a, uint32_t b) {
    uint32_t s = a + b;  // < 2^32 since a, b < 2^31
    return s >= P ? s - P : s;
}
CP_HD uint32_t sub(uint32_t a, uint32_t b) { return a >= b ? a - b : a + P - b; }
CP_HD uint32_t to_mont(uint32_t canonical) { return mont_mul(canonical, R2); }
CP_HD uint32_t from_mont(uint32_t m) { return mont_mul(m, 1); }

// An extension element, coefficients in Montgomery form.
struct ext {
    uint32_t c[4];
};

CP_HD ext ext_zero() { return ext{{0, 0, 0, 0}}; }
CP_HD ext ext_one() { return ext{{to_mont(1), 0, 0, 0}}; }

CP_HD ext ext_add(const ext &a, const ext &b) {
    return ext{{add(a.c[0], b.c[0]), add(a.c[1], b.c[1]), add(a.c[2], b.c[2]), add(a.c[3], b.c[3])}};
}
CP_HD ext ext_sub(const ext &a, const ext &b) {
    return ext{{sub(a.c[0], b.c[0]), sub(a.c[1], b.c[1]), sub(a.c[2], b.c[2]), sub(a.c[3], b.c[3])}};
}

// Schoolbook product reduced with X^4 = W: the wrapped terms (i + j >= 4)
// are summed first, then multiplied by W.
CP_HD ext ext_mul(const ext &a, const ext &b) {
    const uint32_t w = to_mont(W);
    uint32_t lo[4], hi[3];
    for (int k = 0; k < 4; k++) lo[k] = 0;
    for (int k = 0; k < 3; k++) hi[k] = 0;
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) {
            const uint32_t v = mont_mul(a.c[i], b.c[j]);
            if (i + j < 4)
                lo[i + j] = add(lo[i + j], v);
            else
                hi[i + j - 4] = add(hi[i + j - 4], v);
        }
    ext r;
    for (int k = 0; k < 3; k++) r.c[k] = add(lo[k], mont_mul(hi[k], w));
    r.c[3] = lo[3];
    return r;
}

// a + t * (b - a), the line through a (t = 0) and b (t = 1).
CP_HD ext ext_lerp(const ext &a, const ext &b, const ext &t) { return ext_add(a, ext_mul(t, ext_sub(b, a))); }

CP_HD ext ext_from_base_mont(uint32_t m) { return ext{{m, 0, 0, 0}}; }

// a^e for a 128-bit exponent (hi, lo).
CP_HD ext ext_pow(const ext &a, uint64_t hi, uint64_t lo) {
    ext r = ext_one(), b = a;
    for (int i = 0; i < 128; i++) {
        const uint64_t bit = i < 64 ? (lo >> i) & 1 : (hi >> (i - 64)) & 1;
        if (bit) r = ext_mul(r, b);
        b = ext_mul(b, b);
    }
    return r;
}

// a^-1 = a^(p^4 - 2) (0 maps to 0).
CP_HD ext ext_inv(const ext &a) {
    const unsigned __int128 p = P;
    const unsigned __int128 e = p * p * p * p - 2;
    return ext_pow(a, static_cast<uint64_t>(e >> 64), static_cast<uint64_t>(e));
}

}  // namespace bb
}  // namespace cp
