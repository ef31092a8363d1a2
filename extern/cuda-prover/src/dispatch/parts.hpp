// Owns: what the dispatcher's files share inside the core: what every item
// of one dispatch call shares (run_env), and the helpers run_item calls (the
// item's errors, the device slot's faults, delays and statistics). Not an interface of the core: dispatch.hpp is.
#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <vector>

#include "clock.hpp"
#include "core.hpp"
#include "dispatch.hpp"

namespace cp {

// What every item of one dispatch call shares.
struct run_env {
    cp_context &ctx;
    const std::vector<dispatch_item> &items;
    cp_mutex *caller_mu;
    const std::function<void(size_t, int, device &)> &work;
    const std::function<void(size_t, int, device &)> &before;
    const std::function<void(size_t, int, device &)> &after;
    const dispatch_share *share;
    std::vector<item_times> &times;
};

// Items [k, k + returned) on device `ordinal` (hi: the end of this thread's
// items), the thread already bound: item k alone, or item k leading a
// shared pass with the next items of this call it claims. On a failure,
// *failed is the failing item. (item.cpp)
size_t run_item(const run_env &env, size_t k, size_t hi, int ordinal, size_t *failed);

// Rethrows e with the item's name and device in front of its message.
// (item_errors.cpp)
[[noreturn]] void rethrow_named(std::exception_ptr e, const dispatch_item &item, int ordinal);

// A copy of e that another thread may change (errors get their name
// prefixed by the thread that rethrows them). (item_errors.cpp)
std::exception_ptr own_copy(std::exception_ptr e);

// The pending one-shot fault for `tag`, consumed and thrown; the slot's
// device delay plus the tag's delay otherwise. (slot_state.cpp)
uint64_t faults_and_delay(cp_context &ctx, device_slot &s, int ordinal, int64_t tag);

// Whether an item with `tag` may join another item's pass: no fault is
// pending for it and no delay is set for its tag. (slot_state.cpp)
bool may_join(cp_context &ctx, device_slot &s, int64_t tag);

// Adds `proofs` proved and `busy_ns` of device work to the slot's
// statistics. (slot_state.cpp)
void count_proofs(device_slot &s, uint64_t proofs, uint64_t busy_ns);

}  // namespace cp
