// Owns: validating curve points of a proving key. Decoding from bellperson's
// uncompressed encoding (canonical coordinates, on the curve, not the point
// at infinity), the same checks for points handed over in memory, and the
// prime-order subgroup checks, run in parallel over every point of a key.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "backend.hpp"

namespace cp {

constexpr size_t G1_BYTES = 96;
constexpr size_t G2_BYTES = 192;

// Decode one uncompressed point; nullptr, or why it is invalid.
const char *decode_g1(blst_p1_affine *out, const uint8_t *in);
const char *decode_g2(blst_p2_affine *out, const uint8_t *in);

// The same decoding without the on-curve check (point_check::on_curve
// makes it later, with the same message): the flags, canonical
// coordinates and the point at infinity only. For a file whose digest may
// match its verified record, which vouches for the curve too.
const char *decode_g1_deferred(blst_p1_affine *out, const uint8_t *in);
const char *decode_g2_deferred(blst_p2_affine *out, const uint8_t *in);

// A run of points of one key section, named for error messages.
struct point_span {
    const char *name;
    bool g2;
    const void *points;      // blst_p1_affine or blst_p2_affine
    size_t count;
    int64_t file_offset;     // of the first point; -1 when not from a file
};

// The key's points as spans: the six verifying-key points, then ic, h, l,
// a, b_g1, b_g2. `section_offsets` (may be NULL) gives each section's file
// offset in that order, vk points first.
std::vector<point_span> key_spans(const proving_key &key, const int64_t *section_offsets);

enum class point_check {
    // Canonical coordinates, on the curve, not infinity: for points that
    // did not come through decode_g1/decode_g2.
    encoding,
    // On the curve, for points decoded with decode_g1_deferred /
    // decode_g2_deferred (the message decode_g1 / decode_g2 give).
    on_curve,
    // Membership of the prime-order subgroup (blst's in_g1 / in_g2).
    subgroup,
};

// Runs `check` on every point of `spans` on `threads` threads; the first
// failing point (lowest position) is reported as CP_ERR_PARAMS_FORMAT,
// naming its section, index and file offset.
void check_points(const std::vector<point_span> &spans, point_check check, int threads);

// Fails with CP_ERR_PARAMS_FORMAT for point i of `span`, as check_points
// reports its first failing point.
[[noreturn]] void fail_point(const point_span &span, size_t i, const char *why);

// What a point outside its subgroup is called in that message.
extern const char *const OUTSIDE_SUBGROUP;

uint64_t total_points(const std::vector<point_span> &spans);

}  // namespace cp
