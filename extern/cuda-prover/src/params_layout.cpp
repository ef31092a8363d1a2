// Owns: locating and diagnosing the sections of a params file (see
// params_layout.hpp).
#include "params_layout.hpp"

#include <algorithm>
#include <string>

#include "backend.hpp"
#include "field.hpp"

namespace cp {
namespace {

const char *const NAMES[NUM_SECTIONS] = {"ic", "h", "l", "a", "b_g1", "b_g2"};
const size_t ELEM[NUM_SECTIONS] = {96, 96, 96, 96, 96, 192};

// Candidate counts tried per section when diagnosing.
constexpr uint64_t MAX_CANDIDATES = uint64_t(1) << 16;

// Why count `c` of section `s` cannot be right on its own (or nullptr).
const char *implausible(int s, uint64_t c, uint64_t b_g1) {
    if (s == SEC_H) {
        const uint64_t m = c + 1;
        if ((m & (m - 1)) != 0) return "h must hold 2^k - 1 points (the domain size less one)";
        if (m > (uint64_t(1) << MAX_LG_DOMAIN)) return "h is larger than the largest domain, 2^31";
    }
    if (s == SEC_B_G2 && c != b_g1) return "b_g2 must hold as many points as b_g1";
    return nullptr;
}

// Whether the sections from `s` on, starting at `off`, fit the file exactly
// with plausible counts (b_g1 is the b_g1 count when s > SEC_B_G1).
bool fits_from(uint64_t len, const u32_reader &rd, int s, uint64_t off, uint64_t b_g1) {
    for (; s < NUM_SECTIONS; s++) {
        if (len - off < 4) return false;
        const uint64_t c = rd(off);
        off += 4;
        if (implausible(s, c, b_g1)) return false;
        if (c > (len - off) / ELEM[s]) return false;
        off += c * ELEM[s];
        if (s == SEC_B_G1) b_g1 = c;
    }
    return off == len;
}

}  // namespace

const char *section_name(int s) { return NAMES[s]; }
size_t section_elem_bytes(int s) { return ELEM[s]; }

params_layout locate_sections(uint64_t len, const u32_reader &rd) {
    params_layout L;
    L.len = len;
    if (len < VK_BYTES)
        fail(CP_ERR_PARAMS_FORMAT, "params: truncated: the verifying key needs " +
                                       std::to_string(VK_BYTES) + " bytes, the file has " +
                                       std::to_string(len));
    uint64_t off = VK_BYTES;
    int bad = -1;  // the section whose count broke the layout; NUM_SECTIONS: trailing bytes
    std::string why;
    for (int s = 0; s < NUM_SECTIONS; s++) {
        L.count_offset[s] = off;
        if (len - off < 4) {
            bad = s;
            why = "truncated: the length field of section " + std::string(NAMES[s]) +
                  " at offset " + std::to_string(off) + " is past the end (the file has " +
                  std::to_string(len) + " bytes)";
            break;
        }
        const uint64_t c = rd(off);
        L.count[s] = static_cast<uint32_t>(c);
        off += 4;
        const uint64_t need = c * ELEM[s];  // < 2^32 * 192: no overflow
        if (need > len - off) {
            bad = s;
            why = "truncated: section " + std::string(NAMES[s]) + " (length field at offset " +
                  std::to_string(off - 4) + ") says " + std::to_string(c) + " points, " +
                  std::to_string(need) + " bytes, but only " + std::to_string(len - off) +
                  " bytes are left";
            break;
        }
        if (const char *w = implausible(s, c, L.count[SEC_B_G1])) {
            bad = s;
            why = "section " + std::string(NAMES[s]) + " (length field at offset " +
                  std::to_string(off - 4) + ") says " + std::to_string(c) + " points: " + w;
            break;
        }
        off += need;
    }
    if (bad < 0 && off != len) {
        bad = NUM_SECTIONS;
        why = std::to_string(len - off) + " trailing bytes after the b_g2 section (offset " +
              std::to_string(off) + ", file has " + std::to_string(len) + ")";
    }
    if (bad < 0) return L;

    // Diagnosis: which count, changed alone, makes the rest of the file fit?
    // The earliest such section is blamed: once a count is wrong, every
    // later "count" was read from point bytes, and one of those may happen
    // to fit too. Two candidates in that section leave it undecided.
    int found_s = -1;
    uint64_t found_c = 0;
    int found = 0;
    const int last = bad < NUM_SECTIONS ? bad : NUM_SECTIONS - 1;
    for (int s = 0; s <= last && found == 0; s++) {
        if (s == bad && L.count_offset[s] + 4 > len) break;  // count never read
        const uint64_t data = L.data_offset(s);
        const uint64_t max_c = (len - data) / ELEM[s];
        const uint64_t b_g1 = s > SEC_B_G1 ? L.count[SEC_B_G1] : 0;
        auto try_count = [&](uint64_t c) {
            if (c == L.count[s] || c > max_c || implausible(s, c, b_g1)) return;
            if (fits_from(len, rd, s + 1, data + c * ELEM[s], s == SEC_B_G1 ? c : b_g1)) {
                found++;
                found_s = s;
                found_c = c;
            }
        };
        if (s == SEC_H) {
            for (int k = 0; k <= static_cast<int>(MAX_LG_DOMAIN) && found < 2; k++)
                try_count((uint64_t(1) << k) - 1);
        } else if (s == SEC_B_G2) {
            if ((len - data) % ELEM[s] == 0) try_count((len - data) / ELEM[s]);
        } else {
            const uint64_t top = std::min<uint64_t>(max_c, MAX_CANDIDATES);
            for (uint64_t c = 0; c <= top && found < 2; c++) try_count(c);
        }
    }
    if (found == 1)
        fail(CP_ERR_PARAMS_FORMAT,
             "params: corrupt length field: section " + std::string(NAMES[found_s]) +
                 " (length field at offset " + std::to_string(L.count_offset[found_s]) +
                 ") says " + std::to_string(L.count[found_s]) + " points, but the file's layout fits " +
                 std::to_string(found_c) + " (read as written: " + why + ")");
    fail(CP_ERR_PARAMS_FORMAT, "params: " + why);
}

}  // namespace cp
