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
// Its files: load_report.cpp (the flags a load takes, the report it fills),
// subgroup_checks.cpp (where a load's checks run: host or device),
// load_file.cpp (a params file by path or by name in a directory),
// load_memory.cpp (a key from parts or a buffer, and its release),
// queries.cpp (shape, verifying key, memory estimate). This header is what
// they share inside the core.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "clock.hpp"
#include "core.hpp"
#include "points.hpp"

namespace cp {

// Sections of at most this many points are subgroup-checked on every load.
constexpr size_t SMALL_SECTION_POINTS = 4096;

// The small sections of spans (the verifying key's points, ic), in order.
inline std::vector<point_span> small_sections(const std::vector<point_span> &spans) {
    std::vector<point_span> small;
    for (const point_span &sp : spans)
        if (sp.count <= SMALL_SECTION_POINTS) small.push_back(sp);
    return small;
}

// Fails with CP_ERR_INVALID_ARGUMENT on flags no load knows.
void check_flags(uint32_t flags, const char *where);

// Fills *rep (when not NULL) with a load's outcome and times.
void fill_report(cp_key_load_report *rep, int32_t subgroup, bool written, uint64_t bytes,
                 uint64_t points, uint64_t read_ns, uint64_t subgroup_ns, uint64_t total_ns);

// Runs the subgroup checks of a key's points (after the curve checks when
// `curve` is set), failing on the first point outside; a point off its
// curve is named as such before any subgroup failure.
using subgroup_checker = std::function<void(const std::vector<point_span> &, bool curve)>;

// On every hardware thread of the host: the curve checks, then the subgroups.
void check_on_host(const std::vector<point_span> &spans, bool curve);

// The large sections' subgroups on device `ordinal` of ctx (under its own
// mutex), the small ones (the verifying key's points, ic) on one host
// thread. The curve checks, when asked, run on the host's threads at the
// same time as the device's checks (they used to run before them: about a
// third of a 47 GiB key's first load); a point off its curve is reported
// first, whatever the device found about it.
void check_on_device(cp_context &ctx, int32_t ordinal, const std::vector<point_span> &spans,
                     bool curve);

}  // namespace cp
