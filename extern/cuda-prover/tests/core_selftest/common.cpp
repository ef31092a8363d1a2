// The core self-test's shared helpers (declared in common.hpp): the random
// generator and point helpers, random keys and circuits, and a host
// context.
#include "common.hpp"
#include "field.hpp"

using namespace cp;

// ---------------------------------------------------------------- helpers

static uint64_t g_rng = 0x9e3779b97f4a7c15ULL;
uint64_t rnd64() {
    uint64_t z = (g_rng += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}
blst_fr rnd_fr() {
    uint64_t v[4] = {rnd64(), rnd64(), rnd64(), rnd64() & 0x3fffffffffffffffULL};
    blst_fr r;
    blst_fr_from_uint64(&r, v);
    return r;
}
blst_p1 g1_mul(const blst_p1 &p, const blst_fr &k) {
    blst_scalar s;
    blst_scalar_from_fr(&s, &k);
    blst_p1 r;
    blst_p1_mult(&r, &p, s.b, 255);
    return r;
}
blst_p2 g2_mul(const blst_p2 &p, const blst_fr &k) {
    blst_scalar s;
    blst_scalar_from_fr(&s, &k);
    blst_p2 r;
    blst_p2_mult(&r, &p, s.b, 255);
    return r;
}
blst_p1_affine g1_aff(const blst_p1 &p) {
    blst_p1_affine a;
    blst_p1_to_affine(&a, &p);
    return a;
}
blst_p2_affine g2_aff(const blst_p2 &p) {
    blst_p2_affine a;
    blst_p2_to_affine(&a, &p);
    return a;
}
blst_p1_affine rnd_g1() { return g1_aff(g1_mul(*blst_p1_generator(), rnd_fr())); }
blst_p2_affine rnd_g2() { return g2_aff(g2_mul(*blst_p2_generator(), rnd_fr())); }
bool p1_eq(const blst_p1 &a, const blst_p1 &b) { return blst_p1_is_equal(&a, &b); }
bool p2_eq(const blst_p2 &a, const blst_p2 &b) { return blst_p2_is_equal(&a, &b); }

// ---------------------------------------------------------------- params

key_parts random_key(size_t ic, size_t h, size_t l, size_t a, size_t b) {
    key_parts k;
    k.alpha_g1 = rnd_g1(), k.beta_g1 = rnd_g1(), k.delta_g1 = rnd_g1();
    k.beta_g2 = rnd_g2(), k.gamma_g2 = rnd_g2(), k.delta_g2 = rnd_g2();
    for (size_t i = 0; i < ic; i++) k.ic.push_back(rnd_g1());
    for (size_t i = 0; i < h; i++) k.h.push_back(rnd_g1());
    for (size_t i = 0; i < l; i++) k.l.push_back(rnd_g1());
    for (size_t i = 0; i < a; i++) k.a.push_back(rnd_g1());
    for (size_t i = 0; i < b; i++) k.b_g1.push_back(rnd_g1()), k.b_g2.push_back(rnd_g2());
    return k;
}

// ---------------------------------------------------------------- circuits

test_circuit random_circuit(size_t nc, size_t ni, size_t na) {
    test_circuit t;
    for (size_t i = 0; i < nc; i++) {
        blst_fr a = rnd_fr(), b = rnd_fr();
        t.a.push_back(a), t.b.push_back(b), t.c.push_back(fr_mul(a, b));
    }
    t.inputs.push_back(fr_one());
    for (size_t i = 1; i < ni; i++) t.inputs.push_back(rnd_fr());
    for (size_t i = 0; i < na; i++) t.aux.push_back(i % 2 ? fr_one() : rnd_fr());
    t.a_aux.assign((na + 63) / 64 + 1, 0);
    t.b_aux.assign((na + 63) / 64 + 1, 0);
    t.b_in.assign((ni + 63) / 64 + 1, 0);
    for (size_t i = 0; i < na; i++) t.a_aux[i / 64] |= uint64_t(1) << (i % 64);
    for (size_t i = 0; i < na; i += 2) t.b_aux[i / 64] |= uint64_t(1) << (i % 64);
    t.b_in[0] = 1;
    return t;
}

key_parts key_for(size_t nc, size_t ni, size_t na) {
    size_t m = 1;
    while (m < nc) m <<= 1;
    return random_key(ni, m - 1, na, ni + na, 1 + (na + 1) / 2);
}

cp_context *host_ctx(int devices, int threads) {
    cp_context_options o{};
    o.backend = CP_BACKEND_HOST;
    o.host_devices = devices;
    o.host_threads = threads;
    cp_context *ctx = nullptr;
    EXPECT_OK(cp_context_new(&o, &ctx));
    return ctx;
}
