// Params parsing: shape and verifying key of a parsed key, the round trip
// through parts and a file, a missing file, every truncation, trailing
// bytes, a huge section length, corrupt points.
#include <cstdio>

#include "common.hpp"

// ---------------------------------------------------------------- params

template <class T>
static bool same_points(const std::vector<T> &a, const T *b, size_t n) {
    return a.size() == n && (n == 0 || std::memcmp(a.data(), b, n * sizeof(T)) == 0);
}

void test_params() {
    std::printf("params parsing\n");
    key_parts k = random_key(2, 3, 2, 3, 2);
    std::vector<uint8_t> bytes = k.bytes();
    cp_key *s = nullptr;
    EXPECT_OK(cp_key_from_bytes(bytes.data(), bytes.size(), &s));
    if (s) {
        cp_key_shape sh;
        EXPECT_OK(cp_key_shape_get(s, &sh));
        CHECK(sh.ic_len == 2 && sh.h_len == 3 && sh.l_len == 2 && sh.a_len == 3 && sh.b_g1_len == 2 &&
                  sh.b_g2_len == 2,
              "shape");
        cp_key_parts vk;
        std::vector<blst_p1_affine> ic(2);
        EXPECT_OK(cp_key_vk_get(s, &vk, reinterpret_cast<cp_g1_affine *>(ic.data()), 2));
        CHECK(std::memcmp(&vk.alpha_g1, &k.alpha_g1, sizeof k.alpha_g1) == 0, "alpha_g1");
        CHECK(std::memcmp(&vk.beta_g2, &k.beta_g2, sizeof k.beta_g2) == 0, "beta_g2");
        CHECK(std::memcmp(&vk.gamma_g2, &k.gamma_g2, sizeof k.gamma_g2) == 0, "gamma_g2");
        CHECK(std::memcmp(&vk.delta_g2, &k.delta_g2, sizeof k.delta_g2) == 0, "delta_g2");
        CHECK(same_points(k.ic, ic.data(), 2), "ic");
        EXPECT_CODE(cp_key_vk_get(s, &vk, reinterpret_cast<cp_g1_affine *>(ic.data()), 1),
                    CP_ERR_INVALID_ARGUMENT);
        // Internal arrays: compare through a round trip via parts.
        cp_key_free(s);
    }
    // Round trip through parts and a file.
    {
        cp_key_parts p = k.parts();
        cp_key *s2 = nullptr;
        EXPECT_OK(cp_key_from_parts(&p, &s2));
        cp_key_free(s2);
        const char *path = "/tmp/cp_selftest_params.bin";
        FILE *f = std::fopen(path, "wb");
        std::fwrite(bytes.data(), 1, bytes.size(), f);
        std::fclose(f);
        cp_key *s3 = nullptr;
        EXPECT_OK(cp_key_from_file(path, &s3));
        cp_key_free(s3);
        std::remove(path);
        std::remove("/tmp/cp_selftest_params.bin.verified");  // written by the checked load
        cp_status st = cp_key_from_file("/nonexistent/cp_params", &s3);
        int code = st.code;
        std::string msg = take(st);
        CHECK(code == CP_ERR_PARAMS_IO && msg.find("/nonexistent/cp_params") != std::string::npos,
              "missing file: %d %s", code, msg.c_str());
    }
    // Every truncation fails with PARAMS_FORMAT.
    int bad = 0;
    std::string example;
    for (size_t len = 0; len < bytes.size(); len++) {
        cp_key *t = nullptr;
        cp_status st = cp_key_from_bytes(bytes.data(), len, &t);
        if (st.code != CP_ERR_PARAMS_FORMAT || t) bad++;
        if (len == bytes.size() - 100) example = st.message ? st.message : "";
        cp_string_free(st.message);
        cp_key_free(t);
    }
    CHECK(bad == 0, "%d truncations not rejected", bad);
    std::printf("  e.g. %s\n", example.c_str());
    // Trailing bytes.
    {
        std::vector<uint8_t> v = bytes;
        v.push_back(0);
        cp_key *t = nullptr;
        EXPECT_CODE(cp_key_from_bytes(v.data(), v.size(), &t), CP_ERR_PARAMS_FORMAT);
    }
    // A huge section length must fail cleanly (no giant allocation).
    {
        std::vector<uint8_t> v(bytes.begin(), bytes.begin() + 864);
        put_u32(v, 0xffffffffu);
        cp_key *t = nullptr;
        EXPECT_CODE(cp_key_from_bytes(v.data(), v.size(), &t), CP_ERR_PARAMS_FORMAT);
    }
    // Corrupt points: off curve, infinity, compressed flag.
    {
        size_t h0 = 864 + 4 + 2 * 96 + 4;  // first h point
        std::vector<uint8_t> v = bytes;
        v[h0 + 95] ^= 1;
        cp_key *t = nullptr;
        cp_status st = cp_key_from_bytes(v.data(), v.size(), &t);
        int code = st.code;
        std::string msg = take(st);
        CHECK(code == CP_ERR_PARAMS_FORMAT && msg.find("section h point 0") != std::string::npos,
              "off-curve: %d %s", code, msg.c_str());
        v = bytes;
        std::memset(&v[h0 + 96], 0, 96);
        v[h0 + 96] = 0x40;
        EXPECT_CODE(cp_key_from_bytes(v.data(), v.size(), &t), CP_ERR_PARAMS_FORMAT);
        v = bytes;
        v[h0] |= 0x80;
        EXPECT_CODE(cp_key_from_bytes(v.data(), v.size(), &t), CP_ERR_PARAMS_FORMAT);
        v = bytes;
        v[0] ^= 0x01;  // alpha_g1 x changed: off curve (or bad encoding)
        EXPECT_CODE(cp_key_from_bytes(v.data(), v.size(), &t), CP_ERR_PARAMS_FORMAT);
    }
}
