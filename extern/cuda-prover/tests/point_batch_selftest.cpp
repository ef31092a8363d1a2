// Self-test of keys made from their scalars and of subgroup checks on a
// device (host backend), and of the constants the CUDA kernels use
// (curve_constants.hpp): the kernels' membership tests, computed here with
// blst's arithmetic and those constants, must agree with blst's in_g1 and
// in_g2 on points inside and outside the subgroups. Run with
// tests/run-selftest.sh.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <unistd.h>

#include "blst.h"
#include "cuda_prover.h"
#include "curve_constants.hpp"
#include "support/check.hpp"
#include "support/expect.hpp"

static uint64_t g_rng = 0x2545f4914f6cdd1dULL;
static uint64_t rnd64() {
    uint64_t z = (g_rng += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}
static blst_fr rnd_fr() {
    uint64_t v[4] = {rnd64(), rnd64(), rnd64(), rnd64() & 0x3fffffffffffffffULL};
    blst_fr r;
    blst_fr_from_uint64(&r, v);
    return r;
}
static blst_fp rnd_fp() {
    uint64_t v[6];
    for (auto &x : v) x = rnd64();
    v[5] &= 0x0fffffffffffffffULL;  // below p
    blst_fp r;
    blst_fp_from_uint64(&r, v);
    return r;
}
static blst_fp fp_of(const uint64_t limbs[6]) {
    blst_fp r;
    std::memcpy(&r, limbs, sizeof r);  // Montgomery form, as blst keeps it
    return r;
}
static void scalar_bytes(uint8_t out[16], uint64_t hi, uint64_t lo) {
    for (int i = 0; i < 8; i++) out[i] = uint8_t(lo >> (8 * i)), out[8 + i] = uint8_t(hi >> (8 * i));
}

// A point of E(Fp) (y^2 = x^3 + 4) or E'(Fp2) (y^2 = x^3 + 4(1 + i)) from
// a random x: almost never in the prime-order subgroup.
static blst_p1_affine curve_point_g1() {
    for (;;) {
        blst_p1_affine p;
        p.x = rnd_fp();
        blst_fp x3, four, rhs;
        blst_fp_sqr(&x3, &p.x);
        blst_fp_mul(&x3, &x3, &p.x);
        const uint64_t f[6] = {4, 0, 0, 0, 0, 0};
        blst_fp_from_uint64(&four, f);
        blst_fp_add(&rhs, &x3, &four);
        if (blst_fp_sqrt(&p.y, &rhs)) return p;
    }
}
static blst_p2_affine curve_point_g2() {
    for (;;) {
        blst_p2_affine p;
        p.x.fp[0] = rnd_fp();
        p.x.fp[1] = rnd_fp();
        blst_fp2 x3, b, rhs;
        blst_fp2_sqr(&x3, &p.x);
        blst_fp2_mul(&x3, &x3, &p.x);
        const uint64_t f[6] = {4, 0, 0, 0, 0, 0};
        blst_fp_from_uint64(&b.fp[0], f);
        blst_fp_from_uint64(&b.fp[1], f);
        blst_fp2_add(&rhs, &x3, &b);
        if (blst_fp2_sqrt(&p.y, &rhs)) return p;
    }
}

// The kernels' tests, with blst's arithmetic and curve_constants.hpp.
static bool kernel_test_g1(const blst_p1_affine &a) {
    blst_p1 p, q;
    blst_p1_from_affine(&p, &a);
    uint8_t k[16];
    scalar_bytes(k, cp::curve::Z_SQ_HI, cp::curve::Z_SQ_LO);
    blst_p1_mult(&q, &p, k, 128);  // [|z|^2]P = [z^2]P
    blst_p1_affine s = a;          // sigma^2(P) = (beta^2 x, y)
    const blst_fp b2 = fp_of(cp::curve::BETA_SQ);
    blst_fp_mul(&s.x, &s.x, &b2);
    blst_p1 sp;
    blst_p1_from_affine(&sp, &s);
    blst_p1_cneg(&q, true);  // -[z^2]P
    return blst_p1_is_equal(&q, &sp);
}
static bool kernel_test_g2(const blst_p2_affine &a) {
    blst_p2 p, q;
    blst_p2_from_affine(&p, &a);
    uint8_t k[16];
    scalar_bytes(k, 0, cp::curve::Z_ABS);
    blst_p2_mult(&q, &p, k, 64);  // [|z|]P = -[z]P
    blst_p2_cneg(&q, true);       // [z]P
    blst_p2_affine s = a;         // psi(P) = (conj(x) PSI_X, conj(y) PSI_Y)
    blst_fp_cneg(&s.x.fp[1], &s.x.fp[1], true);
    blst_fp_cneg(&s.y.fp[1], &s.y.fp[1], true);
    blst_fp2 px, py;
    std::memset(&px, 0, sizeof px);
    px.fp[1] = fp_of(cp::curve::PSI_X_IM);
    py.fp[0] = fp_of(cp::curve::PSI_Y_RE);
    py.fp[1] = fp_of(cp::curve::PSI_Y_IM);
    blst_fp2_mul(&s.x, &s.x, &px);
    blst_fp2_mul(&s.y, &s.y, &py);
    blst_p2 sp;
    blst_p2_from_affine(&sp, &s);
    return blst_p2_is_equal(&q, &sp);
}

static void test_constants() {
    std::printf("the kernels' subgroup tests agree with blst's (curve_constants.hpp)\n");
    int inside = 0, outside = 0;
    for (int i = 0; i < 24; i++) {
        blst_p1 g;
        blst_scalar s;
        const blst_fr k = rnd_fr();
        blst_scalar_from_fr(&s, &k);
        blst_p1_mult(&g, blst_p1_generator(), s.b, 255);
        blst_p1_affine in;
        blst_p1_to_affine(&in, &g);
        CHECK(kernel_test_g1(in), "G1 point %d of the subgroup refused", i);
        const blst_p1_affine out = curve_point_g1();
        const bool blst_says = blst_p1_affine_in_g1(&out);
        CHECK(kernel_test_g1(out) == blst_says, "G1 curve point %d: test %d, blst %d", i,
              kernel_test_g1(out), blst_says);
        blst_says ? inside++ : outside++;

        blst_p2 g2;
        blst_p2_mult(&g2, blst_p2_generator(), s.b, 255);
        blst_p2_affine in2;
        blst_p2_to_affine(&in2, &g2);
        CHECK(kernel_test_g2(in2), "G2 point %d of the subgroup refused", i);
        const blst_p2_affine out2 = curve_point_g2();
        const bool blst2 = blst_p2_affine_in_g2(&out2);
        CHECK(kernel_test_g2(out2) == blst2, "G2 curve point %d: test %d, blst %d", i,
              kernel_test_g2(out2), blst2);
        blst2 ? inside++ : outside++;
    }
    CHECK(outside >= 40, "only %d of 48 random curve points outside the subgroups", outside);
}

// ------------------------------------------------------------ builder
static cp_context *host_ctx() {
    cp_context_options o{};
    o.backend = CP_BACKEND_HOST;
    o.host_devices = 2;
    o.host_threads = 2;
    cp_context *ctx = nullptr;
    EXPECT_OK(cp_context_new(&o, &ctx));
    return ctx;
}

static blst_p1_affine g1_times(const blst_fr &k) {
    blst_scalar s;
    blst_scalar_from_fr(&s, &k);
    blst_p1 p;
    blst_p1_mult(&p, blst_p1_generator(), s.b, 255);
    blst_p1_affine a;
    blst_p1_to_affine(&a, &p);
    return a;
}
static blst_p2_affine g2_times(const blst_fr &k) {
    blst_scalar s;
    blst_scalar_from_fr(&s, &k);
    blst_p2 p;
    blst_p2_mult(&p, blst_p2_generator(), s.b, 255);
    blst_p2_affine a;
    blst_p2_to_affine(&a, &p);
    return a;
}

template <class To, class From> static void put(To *to, const From &from) {
    static_assert(sizeof(To) == sizeof(From), "same layout");
    std::memcpy(to, &from, sizeof from);
}

template <class To, class From> static To as(const From &from) {
    To to;
    put(&to, from);
    return to;
}

static void test_builder() {
    std::printf("keys built from their scalars: points, file, record, checks on a device\n");
    char dir[] = "/tmp/cp_builder_XXXXXX";
    CHECK(mkdtemp(dir) != nullptr, "mkdtemp");
    setenv("CUDA_PROVER_STATE_DIR", dir, 1);  // the record key lives here
    cp_context *ctx = host_ctx();

    cp_key_parts vk;
    std::memset(&vk, 0, sizeof vk);
    put(&vk.alpha_g1, g1_times(rnd_fr()));
    put(&vk.beta_g1, g1_times(rnd_fr()));
    put(&vk.delta_g1, g1_times(rnd_fr()));
    put(&vk.beta_g2, g2_times(rnd_fr()));
    put(&vk.gamma_g2, g2_times(rnd_fr()));
    put(&vk.delta_g2, g2_times(rnd_fr()));
    std::vector<blst_p1_affine> ic = {g1_times(rnd_fr()), g1_times(rnd_fr())};
    vk.ic = reinterpret_cast<const cp_g1_affine *>(ic.data());
    vk.ic_len = 2;
    vk.h_len = 7;
    vk.l_len = 5;
    vk.a_len = 6;
    vk.b_g1_len = 4;
    vk.b_g2_len = 4;
    const size_t lens[5] = {7, 5, 6, 4, 4};

    cp_key_builder *b = nullptr;
    EXPECT_OK(cp_key_builder_new(&vk, &b));
    std::vector<std::vector<blst_fr>> scalars(5);
    for (int s = 0; s < 5; s++)
        for (size_t i = 0; i < lens[s]; i++) scalars[s].push_back(rnd_fr());
    const cp_fr *fr0 = reinterpret_cast<const cp_fr *>(scalars[0].data());
    EXPECT_CODE(cp_key_builder_fill(ctx, 0, b, CP_SECTION_H, 1, fr0, 2), CP_ERR_INVALID_ARGUMENT);
    EXPECT_CODE(cp_key_builder_fill(ctx, 0, b, CP_SECTION_H, 0, fr0, 8), CP_ERR_INVALID_ARGUMENT);
    EXPECT_CODE(cp_key_builder_fill(ctx, 7, b, CP_SECTION_H, 0, fr0, 2), CP_ERR_DEVICE_INDEX);
    EXPECT_CODE(cp_key_builder_fill(ctx, 0, b, 9, 0, fr0, 2), CP_ERR_INVALID_ARGUMENT);
    // A zero scalar would be the point at infinity, which no key holds.
    std::vector<blst_fr> with_zero = scalars[CP_SECTION_L];
    std::memset(&with_zero[1], 0, sizeof(blst_fr));
    EXPECT_CODE(cp_key_builder_fill(ctx, 0, b, CP_SECTION_L, 0,
                                    reinterpret_cast<const cp_fr *>(with_zero.data()), 3),
                CP_ERR_INVALID_ARGUMENT);
    cp_key *unfinished = nullptr;
    EXPECT_CODE(cp_key_builder_finish(b, nullptr, &unfinished), CP_ERR_INVALID_ARGUMENT);
    for (int s = 0; s < 5; s++) {
        const cp_fr *fr = reinterpret_cast<const cp_fr *>(scalars[s].data());
        // Two fills per section, on the two simulated devices.
        EXPECT_OK(cp_key_builder_fill(ctx, 0, b, s, 0, fr, 3));
        EXPECT_OK(cp_key_builder_fill(ctx, 1, b, s, 3, fr + 3, lens[s] - 3));
    }
    const std::string path = std::string(dir) + "/key.params";
    cp_key *key = nullptr;
    cp_status st = cp_key_builder_finish(b, path.c_str(), &key);
    CHECK(st.code == CP_OK && st.message == nullptr, "finish: %d %s", st.code, take(st).c_str());
    cp_key_builder_free(b);

    // The file is exactly bellperson's format of the generators times the
    // scalars.
    std::vector<uint8_t> want;
    auto g1b = [&](const blst_p1_affine &p) {
        uint8_t o[96];
        blst_p1_affine_serialize(o, &p);
        want.insert(want.end(), o, o + 96);
    };
    auto g2b = [&](const blst_p2_affine &p) {
        uint8_t o[192];
        blst_p2_affine_serialize(o, &p);
        want.insert(want.end(), o, o + 192);
    };
    auto be32 = [&](uint32_t v) {
        const uint8_t c[4] = {uint8_t(v >> 24), uint8_t(v >> 16), uint8_t(v >> 8), uint8_t(v)};
        want.insert(want.end(), c, c + 4);
    };
    g1b(as<blst_p1_affine>(vk.alpha_g1));
    g1b(as<blst_p1_affine>(vk.beta_g1));
    g2b(as<blst_p2_affine>(vk.beta_g2));
    g2b(as<blst_p2_affine>(vk.gamma_g2));
    g1b(as<blst_p1_affine>(vk.delta_g1));
    g2b(as<blst_p2_affine>(vk.delta_g2));
    be32(2);
    for (const auto &p : ic) g1b(p);
    for (int s = 0; s < 5; s++) {
        be32(static_cast<uint32_t>(lens[s]));
        for (const blst_fr &k : scalars[s]) s == CP_SECTION_B_G2 ? g2b(g2_times(k)) : g1b(g1_times(k));
    }
    std::vector<uint8_t> file;
    if (FILE *f = std::fopen(path.c_str(), "rb")) {
        uint8_t buf[4096];
        size_t n;
        while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) file.insert(file.end(), buf, buf + n);
        std::fclose(f);
    }
    CHECK(file == want, "the written key (%zu bytes) is not the expected %zu bytes", file.size(),
          want.size());
    CHECK(access((path + ".partial").c_str(), F_OK) != 0, "the partial file was left behind");

    // The record the builder wrote vouches for the file.
    cp_key *loaded = nullptr;
    cp_key_load_report rep{};
    EXPECT_OK(cp_key_load_file(path.c_str(), CP_KEY_CHECKED, &rep, &loaded));
    CHECK(rep.subgroup == CP_SUBGROUP_DIGEST_MATCHED, "the built key's record was not matched (%d)",
          rep.subgroup);
    cp_key_free(loaded);

    // Checked on a device: the same key passes, and a point outside G1 in h
    // is named as the host's check names it.
    EXPECT_OK(cp_key_load_file_on(ctx, 1, path.c_str(), CP_KEY_NO_DIGEST, &rep, &loaded));
    CHECK(rep.subgroup == CP_SUBGROUP_CHECKED, "device check: subgroup %d", rep.subgroup);
    cp_key_free(loaded);
    blst_p1_affine bad = curve_point_g1();
    while (blst_p1_affine_in_g1(&bad)) bad = curve_point_g1();
    const size_t h1 = 864 + 4 + 2 * 96 + 4 + 96;  // vk, ic, h's length, h point 0
    blst_p1_affine_serialize(&file[h1], &bad);
    const std::string bad_path = std::string(dir) + "/bad.params";
    if (FILE *f = std::fopen(bad_path.c_str(), "wb")) {
        std::fwrite(file.data(), 1, file.size(), f);
        std::fclose(f);
    }
    for (int on_device = 0; on_device < 2; on_device++) {
        cp_key *k = nullptr;
        cp_status s2 = on_device
                           ? cp_key_load_file_on(ctx, 0, bad_path.c_str(), CP_KEY_NO_DIGEST, nullptr, &k)
                           : cp_key_load_file(bad_path.c_str(), CP_KEY_NO_DIGEST, nullptr, &k);
        const int code = s2.code;
        const std::string msg = take(s2);
        CHECK(code == CP_ERR_PARAMS_FORMAT && msg.find("section h point 1") != std::string::npos &&
                  msg.find("subgroup") != std::string::npos && k == nullptr,
              "%s: %d %s", on_device ? "device" : "host", code, msg.c_str());
    }
    EXPECT_CODE(cp_key_load_file_on(ctx, 5, path.c_str(), 0, nullptr, &loaded), CP_ERR_DEVICE_INDEX);
    cp_key_free(key);
    cp_context_free(ctx);
}

int main() {
    test_constants();
    test_builder();
    if (g_failures) {
        std::printf("point_batch_selftest: %d FAILURES\n", g_failures);
        return 1;
    }
    std::printf("point_batch_selftest: all passed\n");
    return 0;
}
