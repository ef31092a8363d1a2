// Owns: the flags a key load takes (checked against those it knows) and
// the load report it fills.
#include <cstdio>
#include <string>

#include "key/parts.hpp"
#include "status.hpp"

namespace cp {
namespace {

constexpr uint32_t KNOWN_FLAGS = CP_KEY_TRUSTED_UNCHECKED | CP_KEY_NO_DIGEST;

}  // namespace

void check_flags(uint32_t flags, const char *where) {
    if (flags & ~KNOWN_FLAGS)
        fail(CP_ERR_INVALID_ARGUMENT,
             std::string(where) + ": unknown flags 0x" + [&] {
                 char b[16];
                 std::snprintf(b, sizeof b, "%x", flags & ~KNOWN_FLAGS);
                 return std::string(b);
             }());
}

void fill_report(cp_key_load_report *rep, int32_t subgroup, bool written, uint64_t bytes,
                 uint64_t points, uint64_t read_ns, uint64_t subgroup_ns, uint64_t total_ns) {
    if (!rep) return;
    rep->subgroup = subgroup;
    rep->digest_written = written ? 1 : 0;
    rep->bytes = bytes;
    rep->points = points;
    rep->read_ns = read_ns;
    rep->subgroup_ns = subgroup_ns;
    rep->total_ns = total_ns;
}

}  // namespace cp
