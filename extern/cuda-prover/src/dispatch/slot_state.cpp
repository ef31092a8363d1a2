// Owns: what the dispatcher reads and counts on a device slot around an
// item: its injected faults and delays (by tag, for the tests) and its
// statistics (proofs and busy time).
#include <cstdint>
#include <mutex>
#include <string>

#include "dispatch/parts.hpp"

namespace cp {

uint64_t faults_and_delay(cp_context &ctx, device_slot &s, int ordinal, int64_t tag) {
    uint64_t delay = 0;
    {
        std::lock_guard<std::mutex> lk(s.state);
        for (size_t i = 0; i < s.faults.size(); i++) {
            if (s.faults[i] == -1 || s.faults[i] == tag) {
                s.faults.erase(s.faults.begin() + static_cast<long>(i));
                fail(CP_ERR_INJECTED_FAULT, "injected fault on device " + std::to_string(ordinal) +
                                                " at tag " + std::to_string(tag));
            }
        }
        delay = s.delay_ns;
    }
    std::lock_guard<std::mutex> lk(ctx.tag_delay_mu);
    auto it = ctx.tag_delay_ns.find(tag);
    if (it != ctx.tag_delay_ns.end()) delay += it->second;
    return delay;
}

// Whether an item with `tag` may join another item's pass: no fault is
// pending for it and no delay is set for its tag.
bool may_join(cp_context &ctx, device_slot &s, int64_t tag) {
    {
        std::lock_guard<std::mutex> lk(s.state);
        for (int64_t f : s.faults)
            if (f == -1 || f == tag) return false;
    }
    std::lock_guard<std::mutex> lk(ctx.tag_delay_mu);
    return ctx.tag_delay_ns.find(tag) == ctx.tag_delay_ns.end();
}

void count_proofs(device_slot &s, uint64_t proofs, uint64_t busy_ns) {
    std::lock_guard<std::mutex> lk(s.state);
    s.proofs += proofs;
    s.busy_ns += busy_ns;
}

}  // namespace cp
