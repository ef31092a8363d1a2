// The reusable buffers of one host device (working_cache.hpp).
#include "host/working_cache.hpp"

#include "host/ntt.hpp"

namespace cp {
namespace host {

void working_cache::ensure(uint32_t lg, int threads) {
    size_t m = size_t(1) << lg;
    bool allocated = false;
    if (cap < m) {
        a.reset();
        b.reset();
        c.reset();
        cap = 0;
        update_bytes();
        a.reset(new blst_fr[m]);
        b.reset(new blst_fr[m]);
        c.reset(new blst_fr[m]);
        cap = m;
        allocated = true;
        update_bytes();
    }
    if (tw_lg != static_cast<int>(lg)) {
        size_t n = twiddle_count(lg);
        if (tw_cap < n) {
            fwd.reset();
            inv.reset();
            tw_cap = 0;
            tw_lg = -1;
            update_bytes();
            fwd.reset(new blst_fr[n]);
            inv.reset(new blst_fr[n]);
            tw_cap = n;
            allocated = true;
            update_bytes();
        }
        domain_twiddles(lg, fwd.get(), inv.get(), threads);
        tw_lg = static_cast<int>(lg);
    }
    if (allocated) allocations++;
}

uint64_t working_cache::release() {
    uint64_t freed = bytes;
    a.reset();
    b.reset();
    c.reset();
    fwd.reset();
    inv.reset();
    cap = tw_cap = 0;
    tw_lg = -1;
    bytes = 0;
    return freed;
}

}  // namespace host
}  // namespace cp
