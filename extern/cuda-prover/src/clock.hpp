// Owns: the core's clock for measured times (steady, never set back) and
// the nanoseconds between two of its points, for reports and traces.
#pragma once

#include <chrono>
#include <cstdint>

namespace cp {

using clock_type = std::chrono::steady_clock;

inline uint64_t ns_between(clock_type::time_point a, clock_type::time_point b) {
    return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(b - a).count());
}

inline uint64_t ns_since(clock_type::time_point t0) { return ns_between(t0, clock_type::now()); }

}  // namespace cp
