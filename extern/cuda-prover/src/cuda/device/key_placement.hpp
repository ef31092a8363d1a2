// Where a pass finds the proving key on a CUDA device: resident (uploaded
// once: key_residency.hpp) or streamed through two chunk buffers
// (key_streaming.hpp, stream_plan.hpp), by what the device holds and the
// memory it may use; and the shape, the working cache and the MSM context
// put in place for the pass. What sppark keeps on the device (its NTT
// tables) counts as held. Links before key_residency and key_streaming,
// whose functions it calls.
#pragma once

#include <cstddef>
#include <cstdint>

#include "backend.hpp"
#include "device/budget.hpp"
#include "device/key_residency.hpp"
#include "device/state.hpp"
#include "device/working_cache.hpp"
#include "stream_plan.hpp"

namespace cp {
namespace cuda_dev {

// The chunk plan of a streamed key: `avail` bytes for everything, `fixed`
// of them held by what stays resident; *fits says whether it fits.
stream_plan plan_for(const device_state &d, uint64_t avail, uint64_t fixed, const proving_key &key,
                     bool *fits);

// The device bytes of one proof's MSM scalars (H + L's, A's, B's): what
// each proof past the first of a shared pass keeps on the device.
uint64_t shared_set_bytes(const cache_layout &L);

// Makes sppark's NTT tables and measures what they hold on this device
// (device_state::library_bytes): the default pool's bytes in use less the
// lanes' MSM contexts. Nothing else of the core comes from that pool, and
// a pass's own temporaries are freed before it ends. Once per device
// (later calls return at once); the thread is bound.
void know_library_bytes(const device_state &d);

// Where a pass finds the key's bases: resident (dk) or streamed (plan);
// and the working cache's layout for the pass (L.compact: phased, the shape
// left on the host).
struct key_place {
    const key_copy *dk = nullptr;
    stream_plan plan;  // when dk is NULL
    size_t temp = 0;   // sppark's temporaries of the largest MSM
    size_t shared = 1;  // proofs the streamed pass serves (plan_shared)
    cache_layout L{};
};

// Where a key that is not resident on the device goes for a pass on lane
// `ln`: uploaded (it fits next to the working set), or streamed by `plan`
// for `shared` proofs (of up to `share`; plan_shared); when not even that
// fits, streamed in a phased pass (`compact`): with a shape whose rows
// fit the chunk buffers, a, b, c evaluated on the device from the rows
// streamed through them (`shape_rows`: shape_rows_layout_for); otherwise
// sent up from the host (compact_layout_for). Nothing changes on the
// device.
struct stream_choice {
    bool upload = false;
    uint64_t avail = 0;      // what the pass may use in all
    uint64_t fixed = 0;      // the caches and shape held after the pass
    uint64_t fixed_own = 0;  // this pass's own cache, the shape and sppark's tables
    bool fits = false;       // the streamed plan fits
    bool compact = false;    // the plan is a phased pass's
    bool shape_rows = false;  // ... that evaluates the shape's rows on the device
    stream_plan plan;
    size_t shared = 1;
};

stream_choice choose(const device_state &d, const pass_lane &ln, const memory_budget &budget,
                     const proving_key &key, const cache_layout &L, const shape *sh, size_t share);

// Places the key (resident when it fits next to the working set and the
// shape, streamed otherwise, for up to `share` proofs), the shape, lane
// `ln`'s working cache and MSM context, and the pass's streams. A first
// upload of the key falls in key_t. The thread is bound, every lane that
// may change held.
key_place place(device_state &d, pass_lane &ln, const memory_budget &budget, const proving_key &key,
                const cache_layout &L, const shape *sh, cp_timings &key_t, size_t share = 1);

}  // namespace cuda_dev
}  // namespace cp
