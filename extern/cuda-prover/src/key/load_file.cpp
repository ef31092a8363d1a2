// Owns: a key loaded from a params file, by path or by one name in a
// directory held open: the sections located and parsed on every core, the
// file's digest matched against its verified record (or the checks run and
// the record written), and the ABI's file entry points (on the host, or
// with the subgroup checks on a device).
#include <fcntl.h>

#include <memory>
#include <string>
#include <vector>

#include "digest.hpp"
#include "field.hpp"
#include "key/parts.hpp"
#include "parallel.hpp"
#include "params_file.hpp"
#include "params_layout.hpp"
#include "params_read.hpp"
#include "status.hpp"

namespace cp {
namespace {

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
                    const std::vector<point_span> small = small_sections(spans);
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

}  // extern "C"
