// The per-device working cache (working_cache.hpp).
#include "device/working_cache.hpp"

#include <algorithm>
#include <cstdlib>

namespace cp {
namespace cuda_dev {

namespace {

// Parts laid out one after another from `off`, each 256-byte aligned.
struct layout_cursor {
    size_t off;
    size_t take(size_t bytes) {
        const size_t at = off;
        off += align256(bytes);
        return at;
    }
};

// What every layout ends with, from the cursor: the densities' bits and
// prefix counts, the unsatisfied-row flag; then the total.
void lay_out_index(cache_layout &L, layout_cursor &c) {
    L.bits = c.take((2 * L.w_aux + L.w_in) * sizeof(uint64_t));
    L.pre = c.take((2 * L.w_aux + L.w_in) * sizeof(uint32_t));
    L.bad = c.take(sizeof(uint64_t));
    L.total = std::max<size_t>(c.off, 256);
}

}  // namespace

cache_layout layout_for(const proving_key &key, size_t m) {
    cache_layout L;
    L.m = m;
    L.ni = key.ic.size();
    L.na = key.l.size();
    L.n_hl = (m - 1) + L.na;
    L.n_a = key.a.size();
    L.n_b = key.b_g1.size();
    L.w_in = (L.ni + 63) / 64;
    L.w_aux = (L.na + 63) / 64;
    layout_cursor c{0};
    L.abc = c.take(3 * m * sizeof(cp_cuda::fr_raw));
    L.hl = c.take(L.n_hl * sizeof(cp_cuda::fr_raw));
    L.in = c.take(L.ni * sizeof(cp_cuda::fr_raw));
    L.sa = c.take(L.n_a * sizeof(cp_cuda::fr_raw));
    L.sb = c.take(L.n_b * sizeof(cp_cuda::fr_raw));
    lay_out_index(L, c);
    return L;
}

cache_layout compact_layout_for(const proving_key &key, size_t m) {
    cache_layout L = layout_for(key, m);
    const size_t fr = sizeof(cp_cuda::fr_raw);
    L.abc = 0;
    L.hl = 0;
    L.sa = align256(L.n_hl * fr);
    L.sb = L.sa + align256(L.n_a * fr);
    layout_cursor c{std::max(align256(3 * m * fr), L.sb + align256(L.n_b * fr))};
    L.in = c.take(L.ni * fr);
    lay_out_index(L, c);
    L.compact = true;
    return L;
}

cache_layout shape_rows_layout_for(const proving_key &key, size_t m) {
    cache_layout L = layout_for(key, m);
    const size_t fr = sizeof(cp_cuda::fr_raw);
    L.abc = 0;
    L.hl = (2 * m + 1) * fr;  // aux at 3 m
    L.sa = 0;
    L.sb = align256(L.n_a * fr);
    L.compact = true;
    L.shape_rows = true;
    if (L.sb + L.n_b * fr > L.hl) {
        L.total = 0;
        return L;
    }
    layout_cursor c{align256(3 * m * fr + L.na * fr)};
    L.in = c.take(L.ni * fr);
    lay_out_index(L, c);
    return L;
}

std::vector<cp_cuda::msm_slot_spec> msm_slots(const cache_layout &L, bool tables, bool wide) {
    using cp_cuda::msm_group;
    std::vector<cp_cuda::msm_slot_spec> s = {{msm_group::g1, L.n_hl, tables},
                                             {msm_group::g1, L.n_a, tables},
                                             {msm_group::g1, L.n_b, tables},
                                             {msm_group::g2, L.n_b, tables}};
    static const bool overlap = std::getenv("CP_MSM_OVERLAP_SORT") != nullptr;
    if (wide && !tables && L.n_hl >= WIDE_HL_MIN) {
        s[0].batch_max = WIDE_HL_BATCH;
        s[0].overlap_sort = overlap;
    }
    return s;
}

size_t temp_bytes(const cache_layout &L, int sm_count, bool tables) {
    return cp_cuda::msm_context_bytes(msm_slots(L, tables), sm_count);
}

size_t domain_for(uint64_t n) {
    uint32_t lg = 0;
    while (lg < 62 && (uint64_t(1) << lg) < n) lg++;
    return size_t(1) << lg;
}

void working_cache::ensure(int cuda_id, const memory_budget &budget, size_t working,
                           size_t temp) {
    const size_t held = bytes.load();
    if (held >= working) {
        // Nothing to allocate: the card's free memory (a driver call,
        // cudaMemGetInfo) only matters when something else needs room.
        if (temp) {
            const size_t free_b = budget.free_bytes();
            if (temp > free_b)
                budget.oom(working + temp, free_b + held);
        }
        return;
    }
    const size_t free_b = budget.free_bytes();
    if (working + temp > free_b + held)
        budget.oom(working + temp, free_b + held);
    buf.reset();
    bytes = 0;
    const cudaError_t e = buf.allocate(cuda_id, working);
    if (e == cudaErrorMemoryAllocation)
        budget.oom(working + temp, budget.free_bytes());
    cuda_check(e, "cudaMalloc(working cache)");
    bytes = working;
    // Keep sppark's per-MSM temporaries mapped in the default pool
    // between MSMs instead of returning them at every synchronization.
    cudaMemPool_t pool;
    if (cudaDeviceGetDefaultMemPool(&pool, cuda_id) == cudaSuccess) {
        uint64_t thr = temp;
        (void)cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &thr);
    }
    allocations++;
}

uint64_t working_cache::release() {
    if (!buf)
        return 0;
    buf.reset();
    return bytes.exchange(0);
}

}  // namespace cuda_dev
}  // namespace cp
