// Owns: turning cp::error and C++ exceptions into cp_status at the ABI
// boundary. Every exported function runs its body through cp::guard so that
// nothing throws across the C ABI. The handlers build no std::string: a
// status message is one malloc of the joined parts, and when that fails the
// status keeps its code with a NULL message.
#pragma once

#include <exception>
#include <new>
#include <string>

#include "backend.hpp"

namespace cp {

// A status whose message is a heap copy of p0 p1 p2 joined (NULL parts are
// skipped; CP_OK with no text has a NULL message). Never throws.
cp_status make_status(cp_code code, const char *p0, const char *p1 = nullptr,
                      const char *p2 = nullptr) noexcept;
inline cp_status ok_status() noexcept { return cp_status{CP_OK, nullptr}; }

// Runs f() and maps every exception to a cp_status.
template <class F>
cp_status guard(const char *where, F &&f) noexcept {
    try {
        f();
        return ok_status();
    } catch (const error &e) {
        return make_status(e.code, e.message.c_str());
    } catch (const std::bad_alloc &) {
        return make_status(CP_ERR_OUT_OF_MEMORY, where, ": out of host memory");
    } catch (const std::exception &e) {
        return make_status(CP_ERR_INTERNAL, where, ": internal error: ", e.what());
    } catch (...) {
        return make_status(CP_ERR_INTERNAL, where, ": internal error: unknown exception");
    }
}

// For functions that return void: swallow everything.
template <class F>
void guard_void(F &&f) noexcept {
    try {
        f();
    } catch (...) {
    }
}

}  // namespace cp
