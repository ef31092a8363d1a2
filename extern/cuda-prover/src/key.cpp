// Owns: proving keys (cp_key): loading them from bellperson 0.27's
// Parameters::write format (file or buffer, parsed on every core:
// params_read.hpp) or from in-memory parts, with every point checked, and
// the shape / verifying-key / memory-estimate queries.
//
// Checks: every point is canonically encoded and not the point at infinity
// (always), on its curve (cheap), and in the prime-order subgroup (about
// 30 us per G1 point and 37 us per G2 point on one core; run on every
// hardware thread). A file's curve and subgroup checks are paid once:
// after a full check the file's digest is recorded in `<params>.verified`
// (digest.hpp), and a later load whose digest matches skips them (the
// curve check waits for the digest: it runs only when the digest does not
// match, before the subgroup checks on the host, beside them when a device
// makes them). Only a caller that says
// so (CP_KEY_TRUSTED_UNCHECKED) gets a key whose subgroups were not checked.
#include <fcntl.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <exception>
#include <mutex>
#include <thread>

#include "core.hpp"
#include "dispatch.hpp"
#include "digest.hpp"
#include "field.hpp"
#include "host/estimate.hpp"
#include "parallel.hpp"
#include "params_file.hpp"
#include "params_layout.hpp"
#include "params_read.hpp"
#include "points.hpp"
#include "status.hpp"

namespace cp {
namespace {

using clock_type = std::chrono::steady_clock;

uint64_t ns_since(clock_type::time_point t0) {
    return static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(clock_type::now() - t0).count());
}

constexpr uint32_t KNOWN_FLAGS = CP_KEY_TRUSTED_UNCHECKED | CP_KEY_NO_DIGEST;
// Sections of at most this many points are subgroup-checked on every load.
constexpr size_t SMALL_SECTION_POINTS = 4096;

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

const cp::proving_key &key_of(const cp_key *s) { return s->key; }

}  // namespace
}  // namespace cp

namespace cp {
namespace {

// Runs the subgroup checks of a key's points (after the curve checks when
// `curve` is set), failing on the first point outside; a point off its
// curve is named as such before any subgroup failure.
using subgroup_checker = std::function<void(const std::vector<point_span> &, bool curve)>;

// On every hardware thread of the host: the curve checks, then the subgroups.
void check_on_host(const std::vector<point_span> &spans, bool curve) {
    if (curve) check_points(spans, point_check::on_curve, hardware_threads());
    check_points(spans, point_check::subgroup, hardware_threads());
}

// The large sections' subgroups on device `ordinal` of ctx (under its own
// mutex), the small ones (the verifying key's points, ic) on one host
// thread. The curve checks, when asked, run on the host's threads at the
// same time as the device's checks (they used to run before them: about a
// third of a 47 GiB key's first load); a point off its curve is reported
// first, whatever the device found about it.
void check_on_device(cp_context &ctx, int32_t ordinal, const std::vector<point_span> &spans,
                     bool curve) {
    std::exception_ptr curve_failure;
    std::thread curve_thread;
    if (curve)
        curve_thread = std::thread([&] {
            try {
                check_points(spans, point_check::on_curve, hardware_threads());
            } catch (...) {
                curve_failure = std::current_exception();
            }
        });
    std::exception_ptr subgroup_failure;
    try {
        std::vector<point_span> small;
        for (const point_span &sp : spans)
            if (sp.count <= SMALL_SECTION_POINTS) small.push_back(sp);
        device_slot &slot = ctx.slot(ordinal);
        std::lock_guard<std::mutex> lk(slot.own);
        bind_scope scope(ctx, ordinal);
        for (const point_span &sp : spans) {
            if (sp.count <= SMALL_SECTION_POINTS) continue;
            const size_t i = slot.dev->groth16().first_outside_subgroup(sp.g2, sp.points, sp.count);
            if (i < sp.count) fail_point(sp, i, OUTSIDE_SUBGROUP);
        }
        // The small sections after the large: a curve failure among them is
        // then known before their subgroup check (which assumes the curve).
        if (curve_thread.joinable()) curve_thread.join();
        if (curve_failure) std::rethrow_exception(curve_failure);
        check_points(small, point_check::subgroup, 1);
    } catch (...) {
        subgroup_failure = std::current_exception();
    }
    if (curve_thread.joinable()) curve_thread.join();
    if (curve_failure) std::rethrow_exception(curve_failure);
    if (subgroup_failure) std::rethrow_exception(subgroup_failure);
}

// Where a params file is: a path (links followed, as any path a caller
// gives), or one name in a directory held open (no link followed, the
// record beside it in the same directory).
struct file_ref {
    int dirfd;         // AT_FDCWD for a path
    const char *name;  // the path, or the name in dirfd
    const char *shown; // for messages
    bool confined;     // opened by dirfd and name: no link followed
};

cp_status load_file(const char *where, const file_ref &ref, uint32_t flags,
                    cp_key_load_report *report, cp_key **out, const subgroup_checker &check_subgroups) {
    std::string note;
    cp_status st = guard(where, [&] {
        if (!ref.name || !ref.shown || !out)
            fail(CP_ERR_INVALID_ARGUMENT, std::string(where) + ": NULL argument");
        *out = nullptr;
        check_flags(flags, where);
        if (ref.confined) {
            const std::string n = ref.name;
            if (n.empty() || n == "." || n == ".." || n.find('/') != std::string::npos)
                fail(CP_ERR_INVALID_ARGUMENT, std::string(where) + ": '" + n +
                                                  "' is not one file name (no '/', not . or ..)");
            if (ref.dirfd < 0)
                fail(CP_ERR_INVALID_ARGUMENT, std::string(where) + ": dirfd " +
                                                  std::to_string(ref.dirfd) + " is not open");
        }
        const char *path = ref.shown;
        const auto t0 = clock_type::now();
        params_file f(ref.dirfd, ref.name, ref.shown, ref.confined);
        std::unique_ptr<cp_key> s(new cp_key);
        const bool trusted = flags & CP_KEY_TRUSTED_UNCHECKED;
        const bool use_digest = !trusted && !(flags & CP_KEY_NO_DIGEST);
        try {
            const params_layout L = locate_sections(f.size(), [&](uint64_t off) {
                uint8_t b[4];
                f.read_at(off, b, 4);
                return be32(b);
            });
            // Through the digest the curve checks wait for the digest too:
            // a file its verified record vouches for passed them already.
            const parse_result r = parse_params(params_source{&f, nullptr}, L, s->key, use_digest,
                                                use_digest, hardware_threads());
            f.expect_end();
            const uint64_t read_ns = ns_since(t0);
            const std::vector<point_span> spans = key_spans(s->key, r.offsets);
            int32_t subgroup = trusted ? CP_SUBGROUP_TRUSTED : CP_SUBGROUP_CHECKED;
            bool written = false;
            uint64_t subgroup_ns = 0;
            if (!trusted) {
                const std::string record = verified_record_path(ref.name);
                const std::string digest = use_digest ? file_digest_hex(f.size(), r.leaves) : "";
                if (use_digest && verified_record_matches(ref.dirfd, record, f.size(), digest)) {
                    subgroup = CP_SUBGROUP_DIGEST_MATCHED;
                    // The small sections (the verifying key's points and
                    // ic, a point per public input) are checked on every
                    // load anyway: a few points, whatever the record says.
                    std::vector<point_span> small;
                    for (const point_span &sp : spans)
                        if (sp.count <= SMALL_SECTION_POINTS) small.push_back(sp);
                    check_points(small, point_check::on_curve, 1);
                    check_points(small, point_check::subgroup, 1);
                } else {
                    const auto t1 = clock_type::now();
                    check_subgroups(spans, use_digest);
                    subgroup_ns = ns_since(t1);
                    if (use_digest) {
                        note = write_verified_record(ref.dirfd, record, f.size(), digest);
                        written = note.empty();
                    }
                }
            }
            fill_report(report, subgroup, written, f.size(), total_points(spans), read_ns,
                        subgroup_ns, ns_since(t0));
        } catch (error &e) {
            e.message += std::string(" [file '") + path + "']";
            throw;
        }
        *out = s.release();
    });
    if (st.code == CP_OK && !note.empty()) return make_status(CP_OK, note.c_str());
    return st;
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


cp_status cp_key_load_file(const char *path, uint32_t flags, cp_key_load_report *report,
                           cp_key **out) {
    return load_file("cp_key_load_file", file_ref{AT_FDCWD, path, path, false}, flags, report, out,
                     check_on_host);
}

cp_status cp_key_load_file_on(cp_context *ctx, int32_t ordinal, const char *path, uint32_t flags,
                              cp_key_load_report *report, cp_key **out) {
    cp_status st = guard("cp_key_load_file_on", [&] {
        if (!ctx) fail(CP_ERR_INVALID_ARGUMENT, "cp_key_load_file_on: ctx is NULL");
        check_ordinal(ctx, ordinal, "cp_key_load_file_on");
    });
    if (st.code != CP_OK) {
        if (out) *out = nullptr;
        return st;
    }
    return load_file("cp_key_load_file_on", file_ref{AT_FDCWD, path, path, false}, flags, report,
                     out, [&](const std::vector<point_span> &spans, bool curve) {
                         check_on_device(*ctx, ordinal, spans, curve);
                     });
}

cp_status cp_key_load_file_at(cp_context *ctx, int32_t ordinal, int dirfd, const char *name,
                              const char *shown, uint32_t flags, cp_key_load_report *report,
                              cp_key **out) {
    const file_ref ref{dirfd, name, shown ? shown : name, true};
    if (!ctx) return load_file("cp_key_load_file_at", ref, flags, report, out, check_on_host);
    cp_status st = guard("cp_key_load_file_at", [&] {
        check_ordinal(ctx, ordinal, "cp_key_load_file_at");
    });
    if (st.code != CP_OK) {
        if (out) *out = nullptr;
        return st;
    }
    return load_file("cp_key_load_file_at", ref, flags, report, out,
                     [&](const std::vector<point_span> &spans, bool curve) {
                         check_on_device(*ctx, ordinal, spans, curve);
                     });
}

cp_status cp_key_from_file(const char *path, cp_key **out) {
    return cp_key_load_file(path, 0, nullptr, out);
}

void cp_key_free(cp_key *key) {
    guard_void([&] { delete key; });
}

cp_status cp_key_shape_get(const cp_key *s, cp_key_shape *out) {
    return guard("cp_key_shape_get", [&] {
        if (!s || !out) fail(CP_ERR_INVALID_ARGUMENT, "cp_key_shape_get: NULL argument");
        const proving_key &k = key_of(s);
        out->ic_len = k.ic.size();
        out->h_len = k.h.size();
        out->l_len = k.l.size();
        out->a_len = k.a.size();
        out->b_g1_len = k.b_g1.size();
        out->b_g2_len = k.b_g2.size();
    });
}

cp_status cp_key_vk_get(const cp_key *s, cp_key_parts *vk, cp_g1_affine *ic_out, size_t ic_cap) {
    return guard("cp_key_vk_get", [&] {
        if (!s || !vk) fail(CP_ERR_INVALID_ARGUMENT, "cp_key_vk_get: NULL argument");
        const proving_key &k = key_of(s);
        std::memset(vk, 0, sizeof *vk);
        std::memcpy(&vk->alpha_g1, &k.alpha_g1, sizeof vk->alpha_g1);
        std::memcpy(&vk->beta_g1, &k.beta_g1, sizeof vk->beta_g1);
        std::memcpy(&vk->beta_g2, &k.beta_g2, sizeof vk->beta_g2);
        std::memcpy(&vk->gamma_g2, &k.gamma_g2, sizeof vk->gamma_g2);
        std::memcpy(&vk->delta_g1, &k.delta_g1, sizeof vk->delta_g1);
        std::memcpy(&vk->delta_g2, &k.delta_g2, sizeof vk->delta_g2);
        // Lengths are reported; array pointers are left NULL.
        vk->ic_len = k.ic.size();
        vk->h_len = k.h.size();
        vk->l_len = k.l.size();
        vk->a_len = k.a.size();
        vk->b_g1_len = k.b_g1.size();
        vk->b_g2_len = k.b_g2.size();
        if (ic_out == nullptr && ic_cap == 0) return;  // a query for ic_len
        if (ic_out == nullptr || ic_cap < k.ic.size())
            fail(CP_ERR_INVALID_ARGUMENT, "cp_key_vk_get: ic_out holds " + std::to_string(ic_cap) +
                                              " points, the key has " +
                                              std::to_string(k.ic.size()));
        if (!k.ic.empty()) std::memcpy(ic_out, k.ic.data(), k.ic.size() * sizeof(cp_g1_affine));
        vk->ic = ic_out;
    });
}

cp_status cp_memory_estimate_get(const cp_key *s, uint64_t num_constraints, cp_memory_estimate *out) {
    return guard("cp_memory_estimate_get", [&] {
        if (!s || !out) fail(CP_ERR_INVALID_ARGUMENT, "cp_memory_estimate_get: NULL argument");
        if (num_constraints > (uint64_t(1) << MAX_LG_DOMAIN))
            fail(CP_ERR_INVALID_ARGUMENT,
                 "cp_memory_estimate_get: num_constraints " + std::to_string(num_constraints) +
                     " is more than the largest domain, 2^" + std::to_string(MAX_LG_DOMAIN));
        *out = host::estimate(key_of(s), num_constraints);
    });
}

}  // extern "C"
