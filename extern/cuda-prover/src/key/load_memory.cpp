// Owns: a key made from memory: from its parts (cp_key_parts, each array
// copied and checked) or from a buffer in the params format, and a key's
// release.
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "field.hpp"
#include "key/parts.hpp"
#include "parallel.hpp"
#include "params_layout.hpp"
#include "params_read.hpp"
#include "status.hpp"

namespace cp {
namespace {

// Largest section a key may have: the format's u32 length fields.
constexpr size_t MAX_SECTION_POINTS = std::numeric_limits<uint32_t>::max();

template <class T>
void copy_array(point_vector<T> &dst, const void *src, size_t n, const char *name) {
    if (n > MAX_SECTION_POINTS)
        fail(CP_ERR_INVALID_ARGUMENT, std::string("cp_key_from_parts: ") + name + "_len " +
                                          std::to_string(n) +
                                          " is larger than any proving key (at most 2^32 - 1 "
                                          "points per section, as in the params format)");
    if (n && !src)
        fail(CP_ERR_INVALID_ARGUMENT, std::string("cp_key_from_parts: ") + name +
                                          " is NULL with length " + std::to_string(n));
    dst.resize(n);
    if (n) std::memcpy(dst.data(), src, n * sizeof(T));
}

}  // namespace
}  // namespace cp

using namespace cp;

extern "C" {

cp_status cp_key_load_parts(const cp_key_parts *parts, uint32_t flags, cp_key_load_report *report,
                            cp_key **out) {
    return guard("cp_key_load_parts", [&] {
        if (!parts || !out) fail(CP_ERR_INVALID_ARGUMENT, "cp_key_load_parts: NULL argument");
        *out = nullptr;
        check_flags(flags, "cp_key_load_parts");
        const auto t0 = clock_type::now();
        std::unique_ptr<cp_key> s(new cp_key);
        proving_key &k = s->key;
        k.set_vk_points(*parts);
        copy_array(k.ic, parts->ic, parts->ic_len, "ic");
        copy_array(k.h, parts->h, parts->h_len, "h");
        copy_array(k.l, parts->l, parts->l_len, "l");
        copy_array(k.a, parts->a, parts->a_len, "a");
        copy_array(k.b_g1, parts->b_g1, parts->b_g1_len, "b_g1");
        copy_array(k.b_g2, parts->b_g2, parts->b_g2_len, "b_g2");
        const int threads = hardware_threads();
        const std::vector<point_span> spans = key_spans(k, nullptr);
        check_points(spans, point_check::encoding, threads);
        const uint64_t read_ns = ns_since(t0);
        const auto t1 = clock_type::now();
        const bool trusted = flags & CP_KEY_TRUSTED_UNCHECKED;
        if (!trusted) check_points(spans, point_check::subgroup, threads);
        fill_report(report, trusted ? CP_SUBGROUP_TRUSTED : CP_SUBGROUP_CHECKED, false, 0,
                    total_points(spans), read_ns, trusted ? 0 : ns_since(t1), ns_since(t0));
        *out = s.release();
    });
}

cp_status cp_key_from_parts(const cp_key_parts *parts, cp_key **out) {
    return cp_key_load_parts(parts, 0, nullptr, out);
}

cp_status cp_key_load_bytes(const uint8_t *data, size_t len, uint32_t flags,
                            cp_key_load_report *report, cp_key **out) {
    return guard("cp_key_load_bytes", [&] {
        if (!out) fail(CP_ERR_INVALID_ARGUMENT, "cp_key_load_bytes: out is NULL");
        *out = nullptr;
        if (!data && len) fail(CP_ERR_INVALID_ARGUMENT, "cp_key_load_bytes: data is NULL");
        check_flags(flags, "cp_key_load_bytes");
        const auto t0 = clock_type::now();
        const params_layout L = locate_sections(len, [&](uint64_t off) { return be32(data + off); });
        std::unique_ptr<cp_key> s(new cp_key);
        const parse_result r = parse_params(params_source{nullptr, data}, L, s->key, false, false,
                                            hardware_threads());
        const uint64_t read_ns = ns_since(t0);
        const auto t1 = clock_type::now();
        const std::vector<point_span> spans = key_spans(s->key, r.offsets);
        const bool trusted = flags & CP_KEY_TRUSTED_UNCHECKED;
        if (!trusted) check_points(spans, point_check::subgroup, hardware_threads());
        fill_report(report, trusted ? CP_SUBGROUP_TRUSTED : CP_SUBGROUP_CHECKED, false, len,
                    total_points(spans), read_ns, trusted ? 0 : ns_since(t1), ns_since(t0));
        *out = s.release();
    });
}

cp_status cp_key_from_bytes(const uint8_t *data, size_t len, cp_key **out) {
    return cp_key_load_bytes(data, len, 0, nullptr, out);
}

void cp_key_free(cp_key *key) {
    guard_void([&] { delete key; });
}

}  // extern "C"
