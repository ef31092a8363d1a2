// Owns: the dispatcher every proof system's entry points share: gpu_index
// routing, binding worker threads to their devices, the caller's and the
// device's own mutex around each item's device work, fault injection and
// delays by tag, per-device statistics, and the first error by item order.
// It runs a per-item callable and knows nothing about what the item proves;
// items may share one device pass (dispatch_share, share_queue.hpp).
//
// Locking: each item runs with the caller's cp_mutex (when given) and then
// the device's own mutex held, always in that order. Taking the own mutex too
// keeps cp_device_trim (which takes only the own mutex) from freeing a
// working cache in use, and serializes two contexts' callers that share a
// cp_mutex.
#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <string>
#include <vector>

#include "core.hpp"

namespace cp {

// Where the items of one call run: the open devices `ordinals` (one, or
// several for CP_GPU_AUTO).
struct route {
    std::vector<int> ordinals;
};

// Resolves gpu_index (an ordinal, CP_GPU_AUTO or CP_GPU_BOUND) for n items;
// `where` names the entry point in errors.
route resolve_route(const cp_context &ctx, int32_t gpu_index, size_t n, const cp_mutex *mutex,
                    const char *where);

// Binds the calling thread to `ordinal` for its lifetime, then restores the
// previous binding.
struct bind_scope {
    cp_context &ctx;
    int prev;
    bind_scope(cp_context &c, int ordinal);
    ~bind_scope();
    bind_scope(const bind_scope &) = delete;
    bind_scope &operator=(const bind_scope &) = delete;
};

// What the dispatcher measured around one item.
struct item_times {
    uint64_t wait_ns = 0;    // waiting for the mutexes
    uint64_t device_ns = 0;  // the item's device work: mutexes held, then `after`
};

struct dispatch_item {
    int64_t tag = -1;   // the caller's label: faults and delays match it
    std::string name;   // for errors, e.g. "circuit 3 (tag 7)"
};

// Items whose device work may run as one pass (dispatch's `share`): a
// streamed proving key's chunks go up once for several proofs. An item
// with a key (key(k).kind set) waits in its device's share_queue; the head
// of the queue takes the mutexes and leads: it asks limit() how many items
// the pass serves, claims that many (its own call's next items first, then
// other callers' waiting items with an equal key, in arrival order) and
// runs them with run(). Items with a pending fault or a tag delay are never
// claimed. A claimed item's times are the pass's; its `after` runs on its
// own thread once the pass is done. payload(k) is the work's record of item
// k: a leader from another call reads it, so the work must be the same
// for equal keys (share_key::kind says which work it is).
struct dispatch_share {
    std::function<share_key(size_t k)> key;
    std::function<void *(size_t k)> payload;
    // How many of `n` candidate items (payloads[0] the leader's) one pass
    // of `dev` serves, at least 1; mutexes held.
    std::function<size_t(void *const *payloads, size_t n, device &dev)> limit;
    // The payloads' device work as one pass, mutexes held; errs[i] receives
    // item i's own failure (the others still proved). A throw fails every
    // item of the pass.
    std::function<void(void *const *payloads, size_t n, int ordinal, device &dev,
                       std::exception_ptr *errs)>
        run;
};

// Runs work(k, ordinal, device) for every item k in [0, n) on its routed
// device: one device runs them in order on the calling thread; several run
// contiguous ranges (earlier ranges take the extra item) on one thread each,
// and a failure stops the others at their next item. The error of the
// lowest failing item is rethrown, its message prefixed with the item's
// name and device. times[k] receives item k's times. `before`, when set,
// runs for item k on the same thread just before it waits for the mutexes
// (work that needs the device's thread binding but not its mutex, such as
// copying a witness into a buffer the device lent). `after`, when set, runs
// for item k on the same thread once `work` returned and the mutexes are
// released (waiting for what `work` left queued on the device, so that the
// next item's work can start beside it); its errors count as item k's.
void dispatch(cp_context &ctx, const route &r, const std::vector<dispatch_item> &items,
              cp_mutex *mutex, const std::function<void(size_t, int, device &)> &work,
              std::vector<item_times> &times,
              const std::function<void(size_t, int, device &)> &before = nullptr,
              const std::function<void(size_t, int, device &)> &after = nullptr,
              const dispatch_share *share = nullptr);

}  // namespace cp
