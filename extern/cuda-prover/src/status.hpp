// Owns: turning cp::error and C++ exceptions into cp_status at the ABI
// boundary. Every exported function runs its body through cp::guard so that
// nothing throws across the C ABI.
#pragma once

#include <exception>
#include <new>
#include <string>

#include "backend.hpp"

namespace cp {

// A status with a heap copy of `message` (NULL message for CP_OK).
cp_status make_status(cp_code code, const std::string &message);
inline cp_status ok_status() { return cp_status{CP_OK, nullptr}; }

// Runs f() and maps every exception to a cp_status.
template <class F>
cp_status guard(const char *where, F &&f) noexcept {
    try {
        f();
        return ok_status();
    } catch (const error &e) {
        return make_status(e.code, e.message);
    } catch (const std::bad_alloc &) {
        return make_status(CP_ERR_OUT_OF_MEMORY, std::string(where) + ": out of host memory");
    } catch (const std::exception &e) {
        return make_status(CP_ERR_INTERNAL, std::string(where) + ": internal error: " + e.what());
    } catch (...) {
        return make_status(CP_ERR_INTERNAL, std::string(where) + ": internal error: unknown exception");
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
