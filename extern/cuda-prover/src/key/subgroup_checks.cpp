// Owns: where a key load's curve and subgroup checks run: on every
// hardware thread of the host, or the large sections on a device of a
// context with the curve checks beside them on the host.
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "dispatch.hpp"
#include "key/parts.hpp"
#include "parallel.hpp"
#include "status.hpp"

namespace cp {

void check_on_host(const std::vector<point_span> &spans, bool curve) {
    if (curve) check_points(spans, point_check::on_curve, hardware_threads());
    check_points(spans, point_check::subgroup, hardware_threads());
}

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
        const std::vector<point_span> small = small_sections(spans);
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

}  // namespace cp
