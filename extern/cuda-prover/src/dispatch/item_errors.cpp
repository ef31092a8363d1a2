// Owns: an item's errors on their way out of the dispatcher: the item's
// name and device put in front of the message, and a copy another thread
// may change.
#include <exception>
#include <string>

#include "dispatch/parts.hpp"

namespace cp {

[[noreturn]] void rethrow_named(std::exception_ptr e, const dispatch_item &item, int ordinal) {
    try {
        std::rethrow_exception(e);
    } catch (error &err) {
        err.message = item.name + " on device " + std::to_string(ordinal) + ": " + err.message;
        throw;
    }
}

// A copy of e that another thread may change (errors get their name
// prefixed by the thread that rethrows them).
std::exception_ptr own_copy(std::exception_ptr e) {
    if (!e) return e;
    try {
        std::rethrow_exception(e);
    } catch (const error &err) {
        try {
            return std::make_exception_ptr(error(err));
        } catch (...) {
            return e;
        }
    } catch (...) {
        return e;
    }
}

}  // namespace cp
