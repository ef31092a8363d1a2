// The shared helpers: the failure count and report, now_s, ck, random
// scalars and points, blst's CPU MSMs as the reference, eq1/eq2, fold.
#include "common.hpp"

int g_failures = 0;

void report(bool ok, const std::string &what) {
    std::printf("%s %s\n", ok ? "PASS" : "FAIL", what.c_str());
    std::fflush(stdout);
    if (!ok)
        g_failures++;
}

double now_s() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

void ck(cudaError_t e, const char *what) {
    if (e != cudaSuccess) {
        std::printf("FAIL cuda %s: %s\n", what, cudaGetErrorString(e));
        std::exit(2);
    }
}

// ---------------------------------------------------------------- random

blst_fr fr_u64(uint64_t v) {
    const uint64_t a[4] = {v, 0, 0, 0};
    blst_fr r;
    blst_fr_from_uint64(&r, a);
    return r;
}

blst_fr fr_rand(rng_t &g) {
    uint64_t a[4] = {g.next(), g.next(), g.next(), g.next() & 0x3fffffffffffffffULL};
    blst_fr r;
    blst_fr_from_uint64(&r, a);
    return r;
}

// zero_pct% zeros, one_pct% ones, the rest random.
std::vector<blst_fr> scalars_mix(size_t n, int zero_pct, int one_pct, uint64_t seed) {
    rng_t g(seed);
    std::vector<blst_fr> s(n);
    const blst_fr one = fr_u64(1);
    for (size_t i = 0; i < n; i++) {
        int r = (int)(g.next() % 100);
        s[i] = r < zero_pct ? FR_ZERO : r < zero_pct + one_pct ? one : fr_rand(g);
    }
    return s;
}

// long_pct% random, the rest short: below 2^bits (bits <= 64), half of
// them negated (r - v, short in absolute value, as Pippenger's digits see
// it). Few bits pile many scalars into few buckets.
std::vector<blst_fr> scalars_short(size_t n, int bits, int long_pct, uint64_t seed) {
    rng_t g(seed);
    std::vector<blst_fr> s(n);
    const uint64_t mask = bits >= 64 ? ~0ULL : (1ULL << bits) - 1;
    for (size_t i = 0; i < n; i++) {
        if ((int)(g.next() % 100) < long_pct) {
            s[i] = fr_rand(g);
            continue;
        }
        s[i] = fr_u64(g.next() & mask);
        if (g.next() & 1)
            blst_fr_sub(&s[i], &FR_ZERO, &s[i]);
    }
    return s;
}

// ---------------------------------------------------------------- blst by group

// blst's calls for one group, for points_of and cpu_msm_of.
struct g1_ops {
    using point = blst_p1;
    using affine = blst_p1_affine;
    static const point *generator() { return blst_p1_generator(); }
    static void mult(point *out, const point *p, const byte *k, size_t bits) {
        blst_p1_mult(out, p, k, bits);
    }
    static void add(point *out, const point *a, const point *b) { blst_p1_add_or_double(out, a, b); }
    static void to_affine(affine *out, const point *const *in, size_t n) {
        blst_p1s_to_affine(out, in, n);
    }
    static void from_affine(point *out, const affine *in) { blst_p1_from_affine(out, in); }
    static size_t pippenger_scratch_sizeof(size_t n) {
        return blst_p1s_mult_pippenger_scratch_sizeof(n);
    }
    static void pippenger(point *out, const affine *const *p, size_t n, const byte *const *k,
                          size_t bits, limb_t *scratch) {
        blst_p1s_mult_pippenger(out, p, n, k, bits, scratch);
    }
};
struct g2_ops {
    using point = blst_p2;
    using affine = blst_p2_affine;
    static const point *generator() { return blst_p2_generator(); }
    static void mult(point *out, const point *p, const byte *k, size_t bits) {
        blst_p2_mult(out, p, k, bits);
    }
    static void add(point *out, const point *a, const point *b) { blst_p2_add_or_double(out, a, b); }
    static void to_affine(affine *out, const point *const *in, size_t n) {
        blst_p2s_to_affine(out, in, n);
    }
    static void from_affine(point *out, const affine *in) { blst_p2_from_affine(out, in); }
    static size_t pippenger_scratch_sizeof(size_t n) {
        return blst_p2s_mult_pippenger_scratch_sizeof(n);
    }
    static void pippenger(point *out, const affine *const *p, size_t n, const byte *const *k,
                          size_t bits, limb_t *scratch) {
        blst_p2s_mult_pippenger(out, p, n, k, bits, scratch);
    }
};

// ---------------------------------------------------------------- points

// n distinct-ish points P_i = (i+1)*Q + R, then tiled to `total`.
template<class G>
static std::vector<typename G::affine> points_of(size_t n, size_t total, uint64_t seed) {
    using point = typename G::point;
    point q, r;
    blst_scalar k;
    blst_fr f;
    rng_t g(seed);
    f = fr_rand(g);
    blst_scalar_from_fr(&k, &f);
    G::mult(&q, G::generator(), k.b, 255);
    f = fr_rand(g);
    blst_scalar_from_fr(&k, &f);
    G::mult(&r, G::generator(), k.b, 255);
    std::vector<point> pr(n);
    point acc = r;
    for (size_t i = 0; i < n; i++) {
        G::add(&acc, &acc, &q);
        pr[i] = acc;
    }
    std::vector<typename G::affine> out(total);
    const point *ptrs[2] = {pr.data(), nullptr};
    G::to_affine(out.data(), ptrs, n);
    for (size_t i = n; i < total; i++)
        out[i] = out[i % n];
    return out;
}

std::vector<blst_p1_affine> g1_points(size_t n, size_t total, uint64_t seed) {
    return points_of<g1_ops>(n, total, seed);
}

std::vector<blst_p2_affine> g2_points(size_t n, size_t total, uint64_t seed) {
    return points_of<g2_ops>(n, total, seed);
}

// ---------------------------------------------------------------- CPU MSM

static std::vector<blst_scalar> to_scalars(const blst_fr *s, size_t n) {
    std::vector<blst_scalar> out(n);
    for (size_t i = 0; i < n; i++)
        blst_scalar_from_fr(&out[i], &s[i]);
    return out;
}

// blst's MSM: the points one by one below 4, else its Pippenger.
template<class G>
static typename G::point cpu_msm_of(const typename G::affine *p, const blst_fr *s, size_t n) {
    using point = typename G::point;
    point r;
    std::memset(&r, 0, sizeof(r));
    if (n == 0)
        return r;
    auto sc = to_scalars(s, n);
    if (n < 4) {
        for (size_t i = 0; i < n; i++) {
            point a, t;
            G::from_affine(&a, &p[i]);
            G::mult(&t, &a, sc[i].b, 255);
            G::add(&r, &r, &t);
        }
        return r;
    }
    std::vector<limb_t> scratch(G::pippenger_scratch_sizeof(n) / sizeof(limb_t) + 1);
    const typename G::affine *pp[2] = {p, nullptr};
    const byte *sp[2] = {sc[0].b, nullptr};
    G::pippenger(&r, pp, n, sp, 255, scratch.data());
    return r;
}

blst_p1 cpu_msm_g1(const blst_p1_affine *p, const blst_fr *s, size_t n) {
    return cpu_msm_of<g1_ops>(p, s, n);
}

blst_p2 cpu_msm_g2(const blst_p2_affine *p, const blst_fr *s, size_t n) {
    return cpu_msm_of<g2_ops>(p, s, n);
}

bool eq1(const blst_p1 &a, const blst_p1 &b) {
    if (blst_p1_is_inf(&a) || blst_p1_is_inf(&b))
        return blst_p1_is_inf(&a) && blst_p1_is_inf(&b);
    return blst_p1_is_equal(&a, &b);
}
bool eq2(const blst_p2 &a, const blst_p2 &b) {
    if (blst_p2_is_inf(&a) || blst_p2_is_inf(&b))
        return blst_p2_is_inf(&a) && blst_p2_is_inf(&b);
    return blst_p2_is_equal(&a, &b);
}

// Scalars of a tiled MSM folded onto the n distinct points.
std::vector<blst_fr> fold(const std::vector<blst_fr> &s, size_t n) {
    std::vector<blst_fr> out(n, FR_ZERO);
    for (size_t i = 0; i < s.size(); i++)
        blst_fr_add(&out[i % n], &out[i % n], &s[i]);
    return out;
}
