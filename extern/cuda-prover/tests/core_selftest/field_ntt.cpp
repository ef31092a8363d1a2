// Fr constants (the 2-adic root of unity, the coset generator, inverse),
// the host NTT (round trip, and equal to a naive DFT), and the H
// polynomial identity a(z)b(z) - c(z) = h(z)(z^m - 1) at a random point.
#include "common.hpp"
#include "field.hpp"
#include "host/ntt.hpp"

using namespace cp;

// ---------------------------------------------------------------- field / NTT

void test_field() {
    std::printf("field constants\n");
    // (r - 1) / 2^32
    const uint64_t r[4] = {0xffffffff00000001ULL, 0x53bda402fffe5bfeULL, 0x3339d80809a1d805ULL,
                           0x73eda753299d7d48ULL};
    uint64_t e[4];
    uint64_t rm1[4] = {r[0] - 1, r[1], r[2], r[3]};
    for (int i = 0; i < 4; i++) e[i] = (rm1[i] >> 32) | (i < 3 ? (rm1[i + 1] << 32) : 0);
    blst_fr w = fr_pow_limbs(fr_coset_generator(), e);
    CHECK(fr_eq(w, fr_root_of_unity_2_32()), "ROOT_OF_UNITY != 7^((r-1)/2^32)");
    blst_fr w31 = fr_root_of_unity(1);  // must be -1
    CHECK(fr_eq(fr_add(w31, fr_one()), fr_zero()), "omega_2 != -1");
    CHECK(fr_eq(fr_root_of_unity(0), fr_one()), "omega_1 != 1");
    blst_fr x = rnd_fr();
    CHECK(fr_eq(fr_mul(x, fr_inv(x)), fr_one()), "inverse");
}

void test_ntt() {
    std::printf("ntt\n");
    for (uint32_t lg = 0; lg <= 13; lg++) {
        size_t m = size_t(1) << lg;
        std::vector<blst_fr> fwd(host::twiddle_count(lg)), inv(host::twiddle_count(lg));
        host::domain_twiddles(lg, fwd.data(), inv.data(), 2);
        std::vector<blst_fr> x(m), y;
        for (auto &v : x) v = rnd_fr();
        y = x;
        host::ntt(y.data(), lg, fwd.data(), 2);
        host::intt(y.data(), lg, inv.data(), 2);
        bool same = true;
        for (size_t i = 0; i < m; i++) same &= fr_eq(x[i], y[i]);
        CHECK(same, "intt(ntt(x)) != x at lg %u", lg);
        if (lg <= 6) {
            // Naive DFT: X_k = sum_i x_i w^(ik)
            blst_fr w = fr_root_of_unity(lg);
            std::vector<blst_fr> z = x;
            host::ntt(z.data(), lg, fwd.data(), 1);
            bool eq = true;
            for (size_t k = 0; k < m; k++) {
                blst_fr acc = fr_zero();
                blst_fr wk = fr_pow(w, k), cur = fr_one();
                for (size_t i = 0; i < m; i++) {
                    acc = fr_add(acc, fr_mul(x[i], cur));
                    cur = fr_mul(cur, wk);
                }
                eq &= fr_eq(acc, z[k]);
            }
            CHECK(eq, "ntt != naive DFT at lg %u", lg);
        }
    }
}

// Evaluates the polynomial with coefficients c at z.
static blst_fr horner(const std::vector<blst_fr> &c, const blst_fr &z) {
    blst_fr acc = fr_zero();
    for (size_t i = c.size(); i-- > 0;) acc = fr_add(fr_mul(acc, z), c[i]);
    return acc;
}

void test_h() {
    std::printf("H polynomial\n");
    for (size_t n : {1, 2, 3, 5, 100, 1000, 5000}) {
        uint32_t lg = 0;
        while ((size_t(1) << lg) < n) lg++;
        size_t m = size_t(1) << lg;
        std::vector<blst_fr> a(m, fr_zero()), b(m, fr_zero()), c(m, fr_zero());
        for (size_t i = 0; i < n; i++) {
            a[i] = rnd_fr();
            b[i] = (i % 3 == 0) ? fr_one() : rnd_fr();
            c[i] = fr_mul(a[i], b[i]);
        }
        std::vector<blst_fr> fwd(host::twiddle_count(lg)), inv(host::twiddle_count(lg));
        host::domain_twiddles(lg, fwd.data(), inv.data(), 2);
        // Coefficients of the interpolating polynomials.
        std::vector<blst_fr> ca = a, cb = b, cc = c;
        host::intt(ca.data(), lg, inv.data(), 2);
        host::intt(cb.data(), lg, inv.data(), 2);
        host::intt(cc.data(), lg, inv.data(), 2);
        std::vector<blst_fr> h = a, tb = b, tc = c;
        host::compute_h(h.data(), tb.data(), tc.data(), lg, fwd.data(), inv.data(), 2);
        CHECK(fr_is_zero(h[m - 1]), "h[m-1] != 0 for n=%zu", n);
        blst_fr z = rnd_fr();
        blst_fr lhs = fr_sub(fr_mul(horner(ca, z), horner(cb, z)), horner(cc, z));
        blst_fr rhs = fr_mul(horner(h, z), fr_sub(fr_pow(z, m), fr_one()));
        CHECK(fr_eq(lhs, rhs), "a(z)b(z)-c(z) != h(z)(z^m-1) for n=%zu", n);
    }
}
