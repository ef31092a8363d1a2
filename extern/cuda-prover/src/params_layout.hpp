// Owns: the layout of bellperson 0.27's Parameters::write format: the six
// verifying-key points, then six sections (ic, h, l, a, b_g1, b_g2), each a
// big-endian u32 count followed by that many uncompressed points. Locating
// the sections reads only the six counts; a layout that does not fit the
// file is diagnosed: when changing one count alone makes every later count
// fit the file exactly, that count is named as the corrupt one (a bad ic
// count is not blamed on the section after it).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

namespace cp {

enum section : int { SEC_IC = 0, SEC_H, SEC_L, SEC_A, SEC_B_G1, SEC_B_G2, NUM_SECTIONS };

constexpr size_t VK_BYTES = 3 * 96 + 3 * 192;

const char *section_name(int s);
size_t section_elem_bytes(int s);

struct params_layout {
    uint64_t len = 0;
    uint32_t count[NUM_SECTIONS] = {};
    uint64_t count_offset[NUM_SECTIONS] = {};  // offset of each length field
    uint64_t data_offset(int s) const { return count_offset[s] + 4; }
};

// A length field's value: the big-endian u32 at p.
inline uint32_t be32(const uint8_t *p) {
    return (uint32_t(p[0]) << 24) | (uint32_t(p[1]) << 16) | (uint32_t(p[2]) << 8) | p[3];
}

// Reads the big-endian u32 at `offset` (offset + 4 <= len is guaranteed).
using u32_reader = std::function<uint32_t(uint64_t offset)>;

// Locates the sections of a `len`-byte buffer or file, or fails with
// CP_ERR_PARAMS_FORMAT saying which length field is wrong. Besides fitting
// the file, counts must describe a usable key: h holds 2^k - 1 points
// (k <= 31) and b_g1 and b_g2 have the same length.
params_layout locate_sections(uint64_t len, const u32_reader &read_u32);

}  // namespace cp
