// Which pass lane (pass_lane.hpp) a Groth16 pass takes, and when a
// device opens its second one. Header-only: the pass (groth16_pass.cu and
// its phases, groth16_pass_*.cu) is its one user.
#pragma once

#include <cstdlib>
#include <mutex>
#include <vector>

#include "device/budget.hpp"
#include "device/key_residency.hpp"
#include "device/state.hpp"
#include "device/working_cache.hpp"

namespace cp {
namespace cuda_dev {

// Lane 1 serves a pass only when it and lane 0 are ready for it and nothing
// the lanes share changes: the key resident (its tables too), the shape
// resident, no memory limit (under a limit the device runs one pass at a
// time, in the memory the limit was planned for). The key's copy then.
inline const key_copy *overlap_ready(const device_state &d, const memory_budget &budget,
                                     const proving_key &key, const cache_layout &L,
                                     const shape *sh) {
    if (budget.limit != UINT64_MAX || (sh && d.shape.id != sh->id))
        return nullptr;
    const key_copy *dk = resident_key(key, d.cuda_id);
    if (!dk)
        return nullptr;
    const std::vector<cp_cuda::msm_slot_spec> slots = msm_slots(L, dk->has_tables());
    for (const auto &l : d.lanes)
        if (!l.ready_for(L.total, slots))
            return nullptr;
    return dk;
}

// The lane of an overlapped pass: a free one, the oldest first, else the
// oldest once its tail is done (the device's mutex held).
inline pass_lane &take_lane(device_state &d, std::unique_lock<std::mutex> &lock) {
    for (unsigned i = 0; i < device_state::LANES; i++) {
        const unsigned k = (d.next_lane + i) % device_state::LANES;
        std::unique_lock<std::mutex> l(d.lanes[k].mu, std::try_to_lock);
        if (l.owns_lock()) {
            lock = std::move(l);
            d.next_lane = (k + 1) % device_state::LANES;
            return d.lanes[k];
        }
    }
    const unsigned k = d.next_lane;
    lock = std::unique_lock<std::mutex>(d.lanes[k].mu);
    d.next_lane = (k + 1) % device_state::LANES;
    return d.lanes[k];
}

// Before a pass on lane 0 with every lane held: lane 1's buffers are given
// back unless they serve this key and layout as they are, so that placing
// the key, the shape and lane 0 sees the memory as with one lane.
inline void settle_lanes(device_state &d, const proving_key &key, const cache_layout &L) {
    pass_lane &l1 = d.lanes[1];
    if (!l1.holds_anything())
        return;
    const key_copy *dk = resident_key(key, d.cuda_id);
    if (!dk) {
        l1.release();
        return;
    }
    l1.drop_msm_unless(msm_slots(L, dk->has_tables()));
    if (l1.cache.bytes.load() < L.total)
        l1.cache.release();
}

// After a pass on lane 0 with every lane held: lane 1 for this key and
// layout when there is no memory limit and it fits in the room the
// device's workers leave it (cp_set_device_workers): with one worker at
// most half of what the device may still use (the other half stays for
// other keys and work, as with the tables), with two or more whatever
// fits with a thirty-second of what is left to spare, since the second
// worker's proof uses the lane while the first's MSMs run. With H + L in
// wide batches on lane 0, lane 1 takes them too where they fit, else the
// default's. Lane 1 only speeds proofs up: failing to make it gives its
// memory back and is not an error. At the 32 GiB C2 with its key resident
// on an H200 (88 of 139 GiB used) lane 1 takes 38 GiB: only two workers
// open it (filecoin/benches/results/h200-c2-32gib-2026-12-06-wide/: one
// worker finishes each pass's tail before its next partition, so a lane 1
// opened beside it served no pass).
inline void open_second_lane(device_state &d, const memory_budget &budget, const key_copy &dk,
                             const cache_layout &L) {
    pass_lane &l1 = d.lanes[1];
    if (budget.limit != UINT64_MAX || std::getenv("CP_ONE_LANE") != nullptr)
        return;
    const std::vector<cp_cuda::msm_slot_spec> wide = msm_slots(L, false, true);
    const bool lane0_wide = !dk.has_tables() && wide[0].batch_max != 0 && d.lanes[0].msm &&
                            d.lanes[0].msm->fits(wide);
    const std::vector<cp_cuda::msm_slot_spec> narrow = msm_slots(L, dk.has_tables());
    if (l1.ready_for(L.total, lane0_wide ? wide : narrow))
        return;
    const int sm = d.props.multiProcessorCount;
    const uint64_t held = dk.bytes() + d.lanes_bytes() + d.shape.bytes() + d.streamer.held();
    const uint64_t usable = budget.usable(held);
    const bool whole = budget.workers > 1;
    const uint64_t room =
        usable <= held ? 0 : whole ? usable - held - (usable - held) / 32 : (usable - held) / 2;
    auto need = [&](const std::vector<cp_cuda::msm_slot_spec> &s) {
        return l1.cache.need(L.total) + l1.msm_need(s, sm);
    };
    const bool take_wide = lane0_wide && need(wide) <= room;
    const std::vector<cp_cuda::msm_slot_spec> &slots = take_wide ? wide : narrow;
    if (need(slots) > room)
        return;
    try {
        l1.cache.ensure(d.cuda_id, budget, L.total, l1.msm_need(slots, sm));
        l1.ensure_msm(d.gpu(), slots);
        d.ensure_streams(l1);
    } catch (...) {
        l1.release();
    }
}

}  // namespace cuda_dev
}  // namespace cp
