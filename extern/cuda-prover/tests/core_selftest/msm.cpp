// The host MSM (G1 and G2) against naive sums: with and without densities
// (garbage bits beyond n ignored), zero/one scalars, duplicate points, 1 to
// 3 threads, all ones and all zeros.
#include "common.hpp"
#include "field.hpp"
#include "host/msm.hpp"

using namespace cp;

// ---------------------------------------------------------------- MSM

void test_msm() {
    std::printf("msm\n");
    for (size_t n : {0, 1, 2, 3, 100, 5000}) {
        for (int with_density = 0; with_density < 2; with_density++) {
            std::vector<blst_fr> sc(n);
            std::vector<uint64_t> dens((n + 63) / 64 + 1, 0);
            size_t np = 0;
            for (size_t i = 0; i < n; i++) {
                uint64_t k = rnd64() % 4;
                sc[i] = k == 0 ? fr_zero() : k == 1 ? fr_one() : rnd_fr();
                bool set = !with_density || (rnd64() % 3 != 0);
                if (set) {
                    dens[i / 64] |= uint64_t(1) << (i % 64);
                    np++;
                }
            }
            // Garbage bits beyond n must be ignored.
            if (with_density && n % 64) dens[n / 64] |= ~uint64_t(0) << (n % 64);
            std::vector<blst_p1_affine> p1(np);
            std::vector<blst_p2_affine> p2(np);
            for (size_t i = 0; i < np; i++) {
                if (i >= 2 && i % 17 == 0) {  // duplicate points exercise doubling
                    p1[i] = p1[i - 1];
                    p2[i] = p2[i - 1];
                } else {
                    p1[i] = rnd_g1();
                    p2[i] = rnd_g2();
                }
            }
            blst_p1 e1;
            blst_p2 e2;
            std::memset(&e1, 0, sizeof e1);
            std::memset(&e2, 0, sizeof e2);
            size_t k = 0;
            for (size_t i = 0; i < n; i++) {
                if (with_density && !bit_is_set(dens.data(), i)) continue;
                blst_p1 q1;
                blst_p1_from_affine(&q1, &p1[k]);
                blst_p2 q2;
                blst_p2_from_affine(&q2, &p2[k]);
                blst_p1 t1 = g1_mul(q1, sc[i]);
                blst_p2 t2 = g2_mul(q2, sc[i]);
                blst_p1_add_or_double(&e1, &e1, &t1);
                blst_p2_add_or_double(&e2, &e2, &t2);
                k++;
            }
            for (int threads : {1, 2, 3}) {
                uint64_t add_ns = 0;
                blst_p1 g1 = host::msm_g1(p1.data(), sc.data(), n, with_density ? dens.data() : nullptr,
                                          threads, &add_ns);
                blst_p2 g2 = host::msm_g2(p2.data(), sc.data(), n, with_density ? dens.data() : nullptr,
                                          threads, &add_ns);
                CHECK(p1_eq(g1, e1), "G1 msm n=%zu density=%d threads=%d", n, with_density, threads);
                CHECK(p2_eq(g2, e2), "G2 msm n=%zu density=%d threads=%d", n, with_density, threads);
            }
        }
    }
    // All ones and all zeros (pure batch-add and empty Pippenger).
    for (int which = 0; which < 2; which++) {
        size_t n = 3000;
        std::vector<blst_fr> sc(n, which ? fr_one() : fr_zero());
        std::vector<blst_p1_affine> p(n);
        blst_p1 e;
        std::memset(&e, 0, sizeof e);
        for (auto &x : p) {
            x = rnd_g1();
            if (which) blst_p1_add_or_double_affine(&e, &e, &x);
        }
        blst_p1 g = host::msm_g1(p.data(), sc.data(), n, nullptr, 2, nullptr);
        CHECK(p1_eq(g, e), "all-%s msm", which ? "ones" : "zeros");
    }
}
