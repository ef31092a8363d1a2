// The host backend's memory estimate (estimate.hpp).
#include "host/estimate.hpp"

#include <algorithm>

#include "stream_plan.hpp"

namespace cp {
namespace host {

namespace {

// The host's working memory for one proof: polynomials and twiddles (the
// working cache), plus the largest MSM's gathered pointer/scalar lists.
// The domain is the smallest power of two >= num_constraints, computed
// without a loop (a doubling loop never ends above 2^63) and in 128 bits so
// that the byte counts saturate instead of wrapping.
using u128 = unsigned __int128;
uint64_t sat(u128 v) { return v > UINT64_MAX ? UINT64_MAX : static_cast<uint64_t>(v); }

u128 working_of(const proving_key &key, uint64_t num_constraints) {
    const u128 m = num_constraints <= 1 ? u128(1) : u128(1) << (64 - __builtin_clzll(num_constraints - 1));
    const u128 fr = sizeof(blst_fr);
    const u128 biggest = std::max<uint64_t>(
        {static_cast<uint64_t>(key.h.size()), static_cast<uint64_t>(key.l.size()),
         static_cast<uint64_t>(key.a.size()), static_cast<uint64_t>(key.b_g1.size())});
    return 4 * m * fr + biggest * (sizeof(void *) + sizeof(blst_scalar));
}

}  // namespace

uint64_t streamed_fixed_bytes(const proving_key &key, uint64_t num_constraints) {
    const u128 scalars = (u128(key.a.size()) + key.b_g1.size()) * sizeof(blst_fr);
    return sat(working_of(key, num_constraints) + scalars);
}

cp_memory_estimate estimate(const proving_key &key, uint64_t num_constraints) {
    const u128 g1 = u128(key.ic.size()) + key.h.size() + key.l.size() + key.a.size() + key.b_g1.size();
    cp_memory_estimate e;
    e.working_bytes = sat(working_of(key, num_constraints));
    e.key_bytes = sat(g1 * sizeof(blst_p1_affine) + u128(key.b_g2.size()) * sizeof(blst_p2_affine));
    e.streamed_bytes = min_stream_bytes(streamed_fixed_bytes(key, num_constraints),
                                        msm_sizes_of(key), no_temp);
    // The shape stays in host memory here: its streamed pass is already
    // the least one.
    e.compact_bytes = e.streamed_bytes;
    return e;
}

}  // namespace host
}  // namespace cp
