// Self-test of the proving-key checks of the C++ core: subgroup membership
// (torsion points built here: on the curve, outside the prime-order
// subgroup), the verified digest beside a params file, hostile files (named
// pipe, directory, a file that shrinks while it is read), corrupt length
// fields named correctly, huge lengths through cp_key_load_parts, the
// saturating memory estimate and status messages. Run with
// tests/run-selftest.sh.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "blst.h"
#include "cuda_prover.h"
#include "core.hpp"
#include "host/estimate.hpp"
#include "params_file.hpp"
#include "status.hpp"
#include "support/check.hpp"
#include "support/key_parts.hpp"

// The status's code and message; frees the message. (support/expect.hpp's
// take() gives the message alone; this test reads the code beside it.)
struct result {
    int code;
    std::string msg;
};
static result take(cp_status st) {
    result r{st.code, st.message ? st.message : ""};
    cp_string_free(st.message);
    return r;
}

static uint64_t g_rng = 0x243f6a8885a308d3ULL;
static uint64_t rnd64() {
    uint64_t z = (g_rng += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}
static blst_scalar rnd_scalar() {
    uint64_t v[4] = {rnd64(), rnd64(), rnd64(), rnd64() & 0x3fffffffffffffffULL};
    blst_scalar s;
    blst_scalar_from_uint64(&s, v);
    return s;
}
// A random multiple of a group's generator, through that group's blst calls.
template <class P, class A>
static A rnd_point(const P *gen, void (*mult)(P *, const P *, const byte *, size_t),
                   void (*to_affine)(A *, const P *)) {
    blst_scalar s = rnd_scalar();
    P p;
    mult(&p, gen, s.b, 255);
    A a;
    to_affine(&a, &p);
    return a;
}
static blst_p1_affine rnd_g1() {
    return rnd_point(blst_p1_generator(), blst_p1_mult, blst_p1_to_affine);
}
static blst_p2_affine rnd_g2() {
    return rnd_point(blst_p2_generator(), blst_p2_mult, blst_p2_to_affine);
}

// A point of E(Fp): y^2 = x^3 + 4, found by incrementing x from `start`
// until x^3 + 4 is a square. The cofactor is not cleared, so the point lies
// outside G1 (with probability 1 - 1/h, h about 2^126).
static blst_p1_affine torsion_g1(uint64_t start) {
    for (uint64_t x0 = start;; x0++) {
        uint64_t xv[6] = {x0, 0, 0, 0, 0, 0}, fv[6] = {4, 0, 0, 0, 0, 0};
        blst_fp x, four, rhs, y;
        blst_fp_from_uint64(&x, xv);
        blst_fp_from_uint64(&four, fv);
        blst_fp_sqr(&rhs, &x);
        blst_fp_mul(&rhs, &rhs, &x);
        blst_fp_add(&rhs, &rhs, &four);
        if (blst_fp_sqrt(&y, &rhs)) return blst_p1_affine{x, y};
    }
}

// A point of E'(Fp2): y^2 = x^3 + 4(1 + i), the same way.
static blst_p2_affine torsion_g2(uint64_t start) {
    for (uint64_t x0 = start;; x0++) {
        uint64_t xv[6] = {x0, 0, 0, 0, 0, 0}, fv[6] = {4, 0, 0, 0, 0, 0};
        blst_fp2 x, b, rhs, y;
        std::memset(&x, 0, sizeof x);
        blst_fp_from_uint64(&x.fp[0], xv);
        blst_fp_from_uint64(&x.fp[1], xv);
        blst_fp_from_uint64(&b.fp[0], fv);
        blst_fp_from_uint64(&b.fp[1], fv);
        blst_fp2_sqr(&rhs, &x);
        blst_fp2_mul(&rhs, &rhs, &x);
        blst_fp2_add(&rhs, &rhs, &b);
        if (blst_fp2_sqrt(&y, &rhs)) return blst_p2_affine{x, y};
    }
}

static key_parts random_key() {
    key_parts k;
    k.alpha_g1 = rnd_g1(), k.beta_g1 = rnd_g1(), k.delta_g1 = rnd_g1();
    k.beta_g2 = rnd_g2(), k.gamma_g2 = rnd_g2(), k.delta_g2 = rnd_g2();
    for (int i = 0; i < 2; i++) k.ic.push_back(rnd_g1());
    for (int i = 0; i < 7; i++) k.h.push_back(rnd_g1());
    for (int i = 0; i < 5; i++) k.l.push_back(rnd_g1());
    for (int i = 0; i < 6; i++) k.a.push_back(rnd_g1());
    for (int i = 0; i < 4; i++) k.b_g1.push_back(rnd_g1()), k.b_g2.push_back(rnd_g2());
    return k;
}

static result load_bytes(const std::vector<uint8_t> &v, uint32_t flags, cp_key_load_report *rep) {
    cp_key *s = nullptr;
    result r = take(cp_key_load_bytes(v.data(), v.size(), flags, rep, &s));
    CHECK((r.code == CP_OK) == (s != nullptr), "out set iff success");
    cp_key_free(s);
    return r;
}
static result load_parts(const key_parts &k, uint32_t flags, cp_key_load_report *rep) {
    cp_key *s = nullptr;
    cp_key_parts p = k.parts();
    result r = take(cp_key_load_parts(&p, flags, rep, &s));
    CHECK((r.code == CP_OK) == (s != nullptr), "out set iff success");
    cp_key_free(s);
    return r;
}
static result load_file(const std::string &path, uint32_t flags, cp_key_load_report *rep) {
    cp_key *s = nullptr;
    result r = take(cp_key_load_file(path.c_str(), flags, rep, &s));
    CHECK((r.code == CP_OK) == (s != nullptr), "out set iff success");
    cp_key_free(s);
    return r;
}
static void write_file(const std::string &path, const std::vector<uint8_t> &v) {
    FILE *f = std::fopen(path.c_str(), "wb");
    std::fwrite(v.data(), 1, v.size(), f);
    std::fclose(f);
}

static void test_torsion_points() {
    std::printf("subgroup checks: torsion points in every section\n");
    const blst_p1_affine t1 = torsion_g1(1000);
    const blst_p2_affine t2 = torsion_g2(1000);
    CHECK(blst_p1_affine_on_curve(&t1) && !blst_p1_affine_in_g1(&t1), "G1 torsion point");
    CHECK(blst_p2_affine_on_curve(&t2) && !blst_p2_affine_in_g2(&t2), "G2 torsion point");
    const key_parts good = random_key();
    CHECK(load_bytes(good.bytes(), 0, nullptr).code == CP_OK, "good key, bytes");
    CHECK(load_parts(good, 0, nullptr).code == CP_OK, "good key, parts");
    struct place {
        const char *name;
        void (*put)(key_parts &, const blst_p1_affine &, const blst_p2_affine &);
    } places[] = {
        {"alpha_g1", [](key_parts &k, const blst_p1_affine &p, const blst_p2_affine &) { k.alpha_g1 = p; }},
        {"beta_g1", [](key_parts &k, const blst_p1_affine &p, const blst_p2_affine &) { k.beta_g1 = p; }},
        {"beta_g2", [](key_parts &k, const blst_p1_affine &, const blst_p2_affine &q) { k.beta_g2 = q; }},
        {"gamma_g2", [](key_parts &k, const blst_p1_affine &, const blst_p2_affine &q) { k.gamma_g2 = q; }},
        {"delta_g1", [](key_parts &k, const blst_p1_affine &p, const blst_p2_affine &) { k.delta_g1 = p; }},
        {"delta_g2", [](key_parts &k, const blst_p1_affine &, const blst_p2_affine &q) { k.delta_g2 = q; }},
        {"section ic point 1", [](key_parts &k, const blst_p1_affine &p, const blst_p2_affine &) { k.ic[1] = p; }},
        {"section h point 6", [](key_parts &k, const blst_p1_affine &p, const blst_p2_affine &) { k.h[6] = p; }},
        {"section l point 0", [](key_parts &k, const blst_p1_affine &p, const blst_p2_affine &) { k.l[0] = p; }},
        {"section a point 3", [](key_parts &k, const blst_p1_affine &p, const blst_p2_affine &) { k.a[3] = p; }},
        {"section b_g1 point 2", [](key_parts &k, const blst_p1_affine &p, const blst_p2_affine &) { k.b_g1[2] = p; }},
        {"section b_g2 point 3", [](key_parts &k, const blst_p1_affine &, const blst_p2_affine &q) { k.b_g2[3] = q; }},
    };
    for (const place &pl : places) {
        key_parts k = good;
        pl.put(k, t1, t2);
        for (int how = 0; how < 2; how++) {
            cp_key_load_report rep;
            result r = how == 0 ? load_bytes(k.bytes(), 0, &rep) : load_parts(k, 0, &rep);
            CHECK(r.code == CP_ERR_PARAMS_FORMAT && r.msg.find(pl.name) != std::string::npos &&
                      r.msg.find("subgroup") != std::string::npos,
                  "%s (%s): %d %s", pl.name, how ? "parts" : "bytes", r.code, r.msg.c_str());
            // Only a caller that says so gets the key unchecked.
            r = how == 0 ? load_bytes(k.bytes(), CP_KEY_TRUSTED_UNCHECKED, &rep)
                         : load_parts(k, CP_KEY_TRUSTED_UNCHECKED, &rep);
            CHECK(r.code == CP_OK && rep.subgroup == CP_SUBGROUP_TRUSTED && rep.subgroup_ns == 0,
                  "%s trusted: %d %s", pl.name, r.code, r.msg.c_str());
        }
    }
    // (0, 2) is on the curve and of order 3.
    {
        key_parts k = good;
        uint64_t two[6] = {2, 0, 0, 0, 0, 0};
        std::memset(&k.l[1], 0, sizeof k.l[1]);
        blst_fp_from_uint64(&k.l[1].y, two);
        result r = load_parts(k, 0, nullptr);
        CHECK(r.code == CP_ERR_PARAMS_FORMAT && r.msg.find("section l point 1") != std::string::npos,
              "(0, 2): %s", r.msg.c_str());
    }
    // Parts get the cheap checks too: infinity, off-curve, unreduced.
    {
        key_parts k = good;
        std::memset(&k.h[2], 0, sizeof k.h[2]);
        result r = load_parts(k, CP_KEY_TRUSTED_UNCHECKED, nullptr);
        CHECK(r.code == CP_ERR_PARAMS_FORMAT && r.msg.find("infinity") != std::string::npos,
              "infinity in parts: %s", r.msg.c_str());
        k = good;
        k.a[0].y.l[0] ^= 1;
        r = load_parts(k, CP_KEY_TRUSTED_UNCHECKED, nullptr);
        CHECK(r.code == CP_ERR_PARAMS_FORMAT && r.msg.find("not on curve") != std::string::npos,
              "off curve in parts: %s", r.msg.c_str());
        // x + p in Montgomery limbs: the same point, unreduced.
        static const uint64_t P[6] = {0xb9feffffffffaaabULL, 0x1eabfffeb153ffffULL,
                                      0x6730d2a0f6b0f624ULL, 0x64774b84f38512bfULL,
                                      0x4b1ba7b6434bacd7ULL, 0x1a0111ea397fe69aULL};
        k = good;
        bool unreduced_fits = false;
        for (int tries = 0; tries < 64 && !unreduced_fits; tries++) {
            k.l[4] = rnd_g1();
            unsigned __int128 carry = 0;
            uint64_t sum[6];
            for (int i = 0; i < 6; i++) {
                carry += (unsigned __int128)k.l[4].x.l[i] + P[i];
                sum[i] = uint64_t(carry);
                carry >>= 64;
            }
            if (carry == 0) {
                std::memcpy(k.l[4].x.l, sum, sizeof sum);
                unreduced_fits = true;
            }
        }
        CHECK(unreduced_fits, "found an x with x + p < 2^384");
        r = load_parts(k, CP_KEY_TRUSTED_UNCHECKED, nullptr);
        CHECK(r.code == CP_ERR_PARAMS_FORMAT && r.msg.find("section l point 4") != std::string::npos,
              "unreduced in parts: %s", r.msg.c_str());
    }
    CHECK(load_parts(good, 4, nullptr).code == CP_ERR_INVALID_ARGUMENT, "unknown flag");
}

static void test_digest() {
    std::printf("verified digest beside a params file\n");
    const std::string path = "/tmp/cp_key_checks_" + std::to_string(getpid()) + ".params";
    const std::string record = path + ".verified";
    const key_parts good = random_key();
    write_file(path, good.bytes());
    std::remove(record.c_str());
    cp_key_load_report rep;
    result r = load_file(path, 0, &rep);
    CHECK(r.code == CP_OK && rep.subgroup == CP_SUBGROUP_CHECKED && rep.digest_written == 1,
          "first load: %d %s subgroup %d written %d", r.code, r.msg.c_str(), rep.subgroup,
          rep.digest_written);
    CHECK(access(record.c_str(), F_OK) == 0, "record written");
    r = load_file(path, 0, &rep);
    CHECK(r.code == CP_OK && rep.subgroup == CP_SUBGROUP_DIGEST_MATCHED && rep.subgroup_ns == 0 &&
              rep.digest_written == 0,
          "second load uses the record: %d subgroup %d", r.code, rep.subgroup);
    r = load_file(path, CP_KEY_NO_DIGEST, &rep);
    CHECK(r.code == CP_OK && rep.subgroup == CP_SUBGROUP_CHECKED && rep.digest_written == 0,
          "NO_DIGEST checks: subgroup %d", rep.subgroup);
    // Same size, one point swapped for a torsion point: the digest differs,
    // the full check runs and rejects it, and the record is left alone.
    key_parts bad = good;
    bad.h[3] = torsion_g1(77);
    write_file(path, bad.bytes());
    r = load_file(path, 0, &rep);
    CHECK(r.code == CP_ERR_PARAMS_FORMAT && r.msg.find("section h point 3") != std::string::npos,
          "tampered file after a record: %d %s", r.code, r.msg.c_str());
    // A different valid key of the same size: checked, record replaced.
    key_parts other = random_key();
    write_file(path, other.bytes());
    r = load_file(path, 0, &rep);
    CHECK(r.code == CP_OK && rep.subgroup == CP_SUBGROUP_CHECKED && rep.digest_written == 1,
          "other key: subgroup %d", rep.subgroup);
    // A malformed record is ignored (and replaced).
    write_file(record, std::vector<uint8_t>{'x', '\n'});
    r = load_file(path, 0, &rep);
    CHECK(r.code == CP_OK && rep.subgroup == CP_SUBGROUP_CHECKED, "malformed record");
    // A record that cannot be written: the load succeeds and says why.
    std::remove(record.c_str());
    mkdir(record.c_str(), 0755);  // a directory where the record would go
    r = load_file(path, 0, &rep);
    CHECK(r.code == CP_OK && rep.digest_written == 0 && r.msg.find("not written") != std::string::npos,
          "unwritable record: %d '%s'", r.code, r.msg.c_str());
    rmdir(record.c_str());
    // A named pipe where the record goes does not block the load.
    mkfifo(record.c_str(), 0644);
    r = load_file(path, 0, &rep);
    CHECK(r.code == CP_OK, "fifo record: %s", r.msg.c_str());
    std::remove(record.c_str());
    std::remove(path.c_str());
    std::remove(record.c_str());
}

static void test_hostile_files() {
    std::printf("hostile params files\n");
    const std::string dir = "/tmp/cp_key_hostile_" + std::to_string(getpid());
    mkdir(dir.c_str(), 0755);
    const std::string fifo = dir + "/pipe.params";
    mkfifo(fifo.c_str(), 0644);
    auto t0 = std::chrono::steady_clock::now();
    result r = load_file(fifo, 0, nullptr);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    CHECK(r.code == CP_ERR_PARAMS_IO && r.msg.find("named pipe") != std::string::npos && s < 5,
          "fifo: %d %s (%.1f s)", r.code, r.msg.c_str(), s);
    r = load_file(dir, 0, nullptr);
    CHECK(r.code == CP_ERR_PARAMS_IO && r.msg.find("a directory") != std::string::npos,
          "directory: %s", r.msg.c_str());
    r = load_file(dir + "/missing.params", 0, nullptr);
    CHECK(r.code == CP_ERR_PARAMS_IO && r.msg.find("does not exist") != std::string::npos,
          "missing: %s", r.msg.c_str());
    r = load_file("/dev/zero", 0, nullptr);
    CHECK(r.code == CP_ERR_PARAMS_IO && r.msg.find("character device") != std::string::npos,
          "device: %s", r.msg.c_str());
    // A file that shrinks after it was opened: pread() sees the end, no SIGBUS.
    const std::string path = dir + "/shrinks.params";
    write_file(path, random_key().bytes());
    cp_status st = cp::guard("shrink", [&] {
        cp::params_file f(path.c_str());
        CHECK(truncate(path.c_str(), 100) == 0, "truncate");
        std::vector<uint8_t> buf(f.size());
        f.read_at(0, buf.data(), buf.size());
    });
    r = take(st);
    CHECK(r.code == CP_ERR_PARAMS_IO && r.msg.find("shrank") != std::string::npos,
          "shrink: %d %s", r.code, r.msg.c_str());
    // And one that grows: the load refuses what it did not check.
    std::vector<uint8_t> v = random_key().bytes();
    write_file(path, v);
    st = cp::guard("grow", [&] {
        cp::params_file f(path.c_str());
        std::vector<uint8_t> buf(f.size());
        f.read_at(0, buf.data(), buf.size());
        FILE *a = std::fopen(path.c_str(), "ab");
        std::fputc(0, a);
        std::fclose(a);
        f.expect_end();
    });
    r = take(st);
    CHECK(r.code == CP_ERR_PARAMS_IO && r.msg.find("grew") != std::string::npos,
          "grow: %d %s", r.code, r.msg.c_str());
    std::remove(path.c_str());
    std::remove(fifo.c_str());
    rmdir(dir.c_str());
}

static void test_length_fields() {
    std::printf("corrupt length fields are named\n");
    const key_parts k = random_key();
    const std::vector<uint8_t> good = k.bytes();
    const size_t ic_at = 864, h_at = ic_at + 4 + 2 * 96, l_at = h_at + 4 + 7 * 96;
    auto with_u32 = [&](size_t at, uint32_t v) {
        std::vector<uint8_t> b = good;
        for (int i = 0; i < 4; i++) b[at + i] = uint8_t(v >> (24 - 8 * i));
        return b;
    };
    struct tcase {
        size_t at;
        uint32_t value;
        const char *expect;
    } cases[] = {
        {ic_at, 1, "section ic (length field at offset 864) says 1 points, but the file's layout fits 2"},
        {ic_at, 3, "section ic (length field at offset 864) says 3 points, but the file's layout fits 2"},
        {ic_at, 0xffffffffu, "section ic (length field at offset 864) says 4294967295"},
        {h_at, 8, "section h (length field at offset 1060) says 8 points"},
        {h_at, 3, "section h (length field at offset 1060) says 3 points, but the file's layout fits 7"},
        {l_at, 6, "section l (length field at offset 1736) says 6 points, but the file's layout fits 5"},
    };
    for (const tcase &c : cases) {
        result r = load_bytes(with_u32(c.at, c.value), 0, nullptr);
        CHECK(r.code == CP_ERR_PARAMS_FORMAT && r.msg.find(c.expect) != std::string::npos,
              "length %u at %zu: %s", c.value, c.at, r.msg.c_str());
    }
    // h must be 2^k - 1 and b_g2 as long as b_g1, even when the file fits.
    key_parts odd = k;
    odd.h.pop_back();
    result r = load_bytes(odd.bytes(), 0, nullptr);
    CHECK(r.code == CP_ERR_PARAMS_FORMAT && r.msg.find("2^k - 1") != std::string::npos, "h of 6: %s",
          r.msg.c_str());
    odd = k;
    odd.b_g2.pop_back();
    r = load_bytes(odd.bytes(), 0, nullptr);
    CHECK(r.code == CP_ERR_PARAMS_FORMAT && r.msg.find("as many points as b_g1") != std::string::npos,
          "b_g2 short: %s", r.msg.c_str());
}

static void test_huge_inputs() {
    std::printf("huge lengths and constraint counts\n");
    key_parts k = random_key();
    cp_key_parts p = k.parts();
    p.l_len = SIZE_MAX / 2;
    cp_key *s = nullptr;
    result r = take(cp_key_load_parts(&p, 0, nullptr, &s));
    CHECK(r.code == CP_ERR_INVALID_ARGUMENT && r.msg.find("l_len") != std::string::npos &&
              r.msg.find("larger than any proving key") != std::string::npos && !s,
          "huge l_len: %d %s", r.code, r.msg.c_str());
    p = k.parts();
    p.b_g2 = nullptr;
    r = take(cp_key_load_parts(&p, 0, nullptr, &s));
    CHECK(r.code == CP_ERR_INVALID_ARGUMENT && r.msg.find("b_g2 is NULL") != std::string::npos,
          "NULL b_g2: %s", r.msg.c_str());
    p = k.parts();
    r = take(cp_key_load_parts(&p, 0, nullptr, &s));
    CHECK(r.code == CP_OK && s, "good parts: %s", r.msg.c_str());
    if (!s) return;
    cp_memory_estimate e;
    const uint64_t big[] = {(uint64_t(1) << 59) + 1, (uint64_t(1) << 63) + 1, UINT64_MAX};
    for (uint64_t n : big) {
        r = take(cp_memory_estimate_get(s, n, &e));
        CHECK(r.code == CP_ERR_INVALID_ARGUMENT && r.msg.find("largest domain") != std::string::npos,
              "estimate of %llu: %s", (unsigned long long)n, r.msg.c_str());
        // The host backend's own estimate saturates and returns at once.
        cp_memory_estimate h = cp::host::estimate(s->key, n);
        CHECK(h.working_bytes == UINT64_MAX, "host estimate %llu: %llu", (unsigned long long)n,
              (unsigned long long)h.working_bytes);
    }
    r = take(cp_memory_estimate_get(s, uint64_t(1) << 31, &e));
    CHECK(r.code == CP_OK && e.working_bytes >= (uint64_t(1) << 31) * 4 * 32, "2^31: %s",
          r.msg.c_str());
    cp_context_options o{CP_BACKEND_HOST, 1, 1};
    cp_context *ctx = nullptr;
    CHECK(take(cp_context_new(&o, &ctx)).code == CP_OK, "context");
    for (uint64_t n : big) {
        r = take(cp_device_prepare(ctx, 0, s, n));
        CHECK(r.code == CP_ERR_INVALID_ARGUMENT, "prepare %llu: %s", (unsigned long long)n,
              r.msg.c_str());
    }
    cp_context_free(ctx);
    cp_key_free(s);
}

static void test_status() {
    std::printf("status messages\n");
    result r = take(cp::make_status(CP_ERR_INTERNAL, "where", ": ", "what"));
    CHECK(r.code == CP_ERR_INTERNAL && r.msg == "where: what", "joined: %s", r.msg.c_str());
    cp_status st = cp::make_status(CP_OK, nullptr);
    CHECK(st.code == CP_OK && st.message == nullptr, "ok has no message");
    r = take(cp::guard("thrower", [] { throw std::runtime_error("boom"); }));
    CHECK(r.code == CP_ERR_INTERNAL && r.msg == "thrower: internal error: boom", "%s", r.msg.c_str());
    r = take(cp::guard("alloc", [] { throw std::bad_alloc(); }));
    CHECK(r.code == CP_ERR_OUT_OF_MEMORY && r.msg == "alloc: out of host memory", "%s", r.msg.c_str());
}

int main() {
    test_torsion_points();
    test_digest();
    test_hostile_files();
    test_length_fields();
    test_huge_inputs();
    test_status();
    if (g_failures) {
        std::printf("key_checks_selftest: %d FAILURES\n", g_failures);
        return 1;
    }
    std::printf("key_checks_selftest: all passed\n");
    return 0;
}
