// Owns: point validation (see points.hpp).
#include "points.hpp"

#include <atomic>
#include <cstring>
#include <limits>
#include <mutex>
#include <string>

#include "parallel.hpp"

namespace cp {

extern const char *const OUTSIDE_SUBGROUP =
    "on the curve but not in the prime-order subgroup (a small-order component)";

namespace {

const char *blst_error_text(BLST_ERROR e) {
    switch (e) {
        case BLST_SUCCESS: return "success";
        case BLST_BAD_ENCODING: return "bad encoding (a coordinate is not reduced modulo p)";
        case BLST_POINT_NOT_ON_CURVE: return "point not on curve";
        case BLST_POINT_NOT_IN_GROUP: return "point not in the prime-order subgroup";
        default: return "invalid point";
    }
}

const char *encoding_g1(const blst_p1_affine &p) {
    // Round trip through the canonical encoding: a coordinate that is not
    // reduced modulo p comes back different.
    uint8_t b[G1_BYTES];
    blst_p1_affine_serialize(b, &p);
    if (b[0] & 0x40) return "point at infinity";
    blst_p1_affine q;
    const BLST_ERROR e = blst_p1_deserialize(&q, b);
    if (e != BLST_SUCCESS) return blst_error_text(e);
    if (std::memcmp(&q, &p, sizeof p) != 0) return "coordinates are not reduced modulo p";
    return nullptr;
}

const char *encoding_g2(const blst_p2_affine &p) {
    uint8_t b[G2_BYTES];
    blst_p2_affine_serialize(b, &p);
    if (b[0] & 0x40) return "point at infinity";
    blst_p2_affine q;
    const BLST_ERROR e = blst_p2_deserialize(&q, b);
    if (e != BLST_SUCCESS) return blst_error_text(e);
    if (std::memcmp(&q, &p, sizeof p) != 0) return "coordinates are not reduced modulo p";
    return nullptr;
}


const char *check_one(const point_span &s, size_t i, point_check c) {
    if (s.g2) {
        const blst_p2_affine &p = static_cast<const blst_p2_affine *>(s.points)[i];
        if (c == point_check::encoding) return encoding_g2(p);
        if (c == point_check::on_curve)
            return blst_p2_affine_on_curve(&p) ? nullptr : blst_error_text(BLST_POINT_NOT_ON_CURVE);
        return blst_p2_affine_in_g2(&p) ? nullptr : OUTSIDE_SUBGROUP;
    }
    const blst_p1_affine &p = static_cast<const blst_p1_affine *>(s.points)[i];
    if (c == point_check::encoding) return encoding_g1(p);
    if (c == point_check::on_curve)
        return blst_p1_affine_on_curve(&p) ? nullptr : blst_error_text(BLST_POINT_NOT_ON_CURVE);
    return blst_p1_affine_in_g1(&p) ? nullptr : OUTSIDE_SUBGROUP;
}

// p, big-endian: a coordinate is canonical when its 48 bytes are below it.
constexpr uint8_t P_BE[48] = {
    0x1a, 0x01, 0x11, 0xea, 0x39, 0x7f, 0xe6, 0x9a, 0x4b, 0x1b, 0xa7, 0xb6, 0x43, 0x4b, 0xac, 0xd7,
    0x64, 0x77, 0x4b, 0x84, 0xf3, 0x85, 0x12, 0xbf, 0x67, 0x30, 0xd2, 0xa0, 0xf6, 0xb0, 0xf6, 0x24,
    0x1e, 0xab, 0xff, 0xfe, 0xb1, 0x53, 0xff, 0xff, 0xb9, 0xfe, 0xff, 0xff, 0xff, 0xff, 0xaa, 0xab};

bool canonical(const uint8_t *be) { return std::memcmp(be, P_BE, 48) < 0; }

bool all_zero(const uint8_t *b, size_t n) {
    uint8_t acc = 0;
    for (size_t i = 0; i < n; i++) acc |= b[i];
    return acc == 0;
}

// The flags decode_g1 / decode_g2 check first.
const char *flags_error(const uint8_t *in) {
    if (in[0] & 0x80) return "compressed encoding where an uncompressed point is expected";
    if (in[0] & 0x40) return "point at infinity";
    // blst ignores this flag on uncompressed points; a canonical encoding
    // has it clear (as zkcrypto's bls12_381 requires).
    if (in[0] & 0x20) return "non-canonical encoding: the sort flag is set on an uncompressed point";
    return nullptr;
}

}  // namespace

const char *decode_g1(blst_p1_affine *out, const uint8_t *in) {
    if (const char *why = flags_error(in)) return why;
    const BLST_ERROR e = blst_p1_deserialize(out, in);
    if (e != BLST_SUCCESS) return blst_error_text(e);
    if (blst_p1_affine_is_inf(out)) return "point at infinity";
    return nullptr;
}

const char *decode_g2(blst_p2_affine *out, const uint8_t *in) {
    if (const char *why = flags_error(in)) return why;
    const BLST_ERROR e = blst_p2_deserialize(out, in);
    if (e != BLST_SUCCESS) return blst_error_text(e);
    if (blst_p2_affine_is_inf(out)) return "point at infinity";
    return nullptr;
}

const char *decode_g1_deferred(blst_p1_affine *out, const uint8_t *in) {
    if (const char *why = flags_error(in)) return why;
    // All zeros (rare, never a key's point): whatever blst says of it.
    if (all_zero(in, G1_BYTES)) return decode_g1(out, in);
    if (!canonical(in) || !canonical(in + 48)) return blst_error_text(BLST_BAD_ENCODING);
    blst_fp_from_bendian(&out->x, in);
    blst_fp_from_bendian(&out->y, in + 48);
    return nullptr;
}

const char *decode_g2_deferred(blst_p2_affine *out, const uint8_t *in) {
    if (const char *why = flags_error(in)) return why;
    if (all_zero(in, G2_BYTES)) return decode_g2(out, in);
    for (int k = 0; k < 4; k++)
        if (!canonical(in + 48 * k)) return blst_error_text(BLST_BAD_ENCODING);
    // x = (c1, c0), y = (c1, c0), as zkcrypto writes them.
    blst_fp_from_bendian(&out->x.fp[1], in);
    blst_fp_from_bendian(&out->x.fp[0], in + 48);
    blst_fp_from_bendian(&out->y.fp[1], in + 96);
    blst_fp_from_bendian(&out->y.fp[0], in + 144);
    return nullptr;
}

std::vector<point_span> key_spans(const proving_key &k, const int64_t *off) {
    auto o = [&](int i) -> int64_t { return off ? off[i] : -1; };
    return {
        {"vk alpha_g1", false, &k.alpha_g1, 1, o(0)},
        {"vk beta_g1", false, &k.beta_g1, 1, o(1)},
        {"vk beta_g2", true, &k.beta_g2, 1, o(2)},
        {"vk gamma_g2", true, &k.gamma_g2, 1, o(3)},
        {"vk delta_g1", false, &k.delta_g1, 1, o(4)},
        {"vk delta_g2", true, &k.delta_g2, 1, o(5)},
        {"ic", false, k.ic.data(), k.ic.size(), o(6)},
        {"h", false, k.h.data(), k.h.size(), o(7)},
        {"l", false, k.l.data(), k.l.size(), o(8)},
        {"a", false, k.a.data(), k.a.size(), o(9)},
        {"b_g1", false, k.b_g1.data(), k.b_g1.size(), o(10)},
        {"b_g2", true, k.b_g2.data(), k.b_g2.size(), o(11)},
    };
}

uint64_t total_points(const std::vector<point_span> &spans) {
    uint64_t n = 0;
    for (const auto &s : spans) n += s.count;
    return n;
}

void check_points(const std::vector<point_span> &spans, point_check check, int threads) {
    // One index space over every span; G2 points cost about as much as G1
    // ones in blst's checks, so plain contiguous chunks balance well.
    std::vector<size_t> start(spans.size() + 1, 0);
    for (size_t i = 0; i < spans.size(); i++) start[i + 1] = start[i] + spans[i].count;
    const size_t n = start.back();
    std::atomic<size_t> first_bad{std::numeric_limits<size_t>::max()};
    std::mutex mu;
    const char *why = nullptr;
    parallel_for(n, threads, 512, [&](size_t b, size_t e, size_t) {
        size_t s = 0;
        while (start[s + 1] <= b) s++;
        for (size_t g = b; g < e; g++) {
            while (start[s + 1] <= g) s++;
            // Stop once a failure before this point is known.
            if ((g & 63) == 0 && first_bad.load(std::memory_order_relaxed) < g) return;
            const char *w = check_one(spans[s], g - start[s], check);
            if (w) {
                std::lock_guard<std::mutex> lk(mu);
                if (g < first_bad.load()) {
                    first_bad.store(g);
                    why = w;
                }
                return;
            }
        }
    });
    const size_t g = first_bad.load();
    if (g == std::numeric_limits<size_t>::max()) return;
    size_t s = 0;
    while (start[s + 1] <= g) s++;
    fail_point(spans[s], g - start[s], why);
}

void fail_point(const point_span &sp, size_t i, const char *why) {
    std::string where = std::string("params: ") +
                        (std::strncmp(sp.name, "vk ", 3) == 0 ? std::string(sp.name)
                                                       : "section " + std::string(sp.name) +
                                                             " point " + std::to_string(i));
    if (sp.file_offset >= 0)
        where += " (offset " +
                 std::to_string(static_cast<uint64_t>(sp.file_offset) +
                                i * (sp.g2 ? G2_BYTES : G1_BYTES)) +
                 ")";
    fail(CP_ERR_PARAMS_FORMAT, where + ": " + why);
}

}  // namespace cp
