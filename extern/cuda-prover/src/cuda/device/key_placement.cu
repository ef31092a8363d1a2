// Where a pass finds the proving key (key_placement.hpp).
#include "device/key_placement.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

#include "device/key_streaming.hpp"
#include "device/shape_residency.hpp"
#include "device/shape_rows.hpp"

namespace cp {
namespace cuda_dev {

using namespace cp_cuda;

// The MSM slots of a streamed key: one G1 and one G2 chunk.
static std::vector<msm_slot_spec> chunk_slots(uint64_t g1_per_chunk, uint64_t g2_per_chunk) {
    return {{msm_group::g1, (size_t)g1_per_chunk}, {msm_group::g2, (size_t)g2_per_chunk}};
}

// The MSM context of one chunk's sums, as plan_stream counts it.
static auto chunk_temp(const device_state &d) {
    const int sm = d.props.multiProcessorCount;
    return [sm](uint64_t g1, uint64_t g2) {
        return (uint64_t)msm_context_bytes(chunk_slots(g1, g2), sm);
    };
}

stream_plan plan_for(const device_state &d, uint64_t avail, uint64_t fixed, const proving_key &key,
                     bool *fits) {
    stream_plan plan;
    *fits = plan_stream(plan, avail, fixed, msm_sizes_of(key), chunk_temp(d));
    return plan;
}

uint64_t shared_set_bytes(const cache_layout &L) {
    return (uint64_t(L.n_hl) + L.n_a + L.n_b) * sizeof(fr_raw);
}

void know_library_bytes(const device_state &d) {
    std::call_once(d.library_once, [&d] {
        ntt_tables_ready();
        cudaMemPool_t pool = nullptr;
        uint64_t used = 0;
        if (cudaDeviceGetDefaultMemPool(&pool, d.cuda_id) == cudaSuccess &&
            cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used) ==
                cudaSuccess) {
            uint64_t msm = 0;
            for (const auto &l : d.lanes)
                msm += l.msm_held.load();
            d.library_bytes = used > msm ? used - msm : 0;
        }
        (void)cudaGetLastError();
    });
}

// The chunk buffers the device holds, kept when they differ from the new
// plan's by the allocations' rounding only: where the card bounds the
// plan, the memory it may use is its free memory plus what it holds, a few
// MiB less once the buffers, the cache and the MSM context are allocated
// (each rounds up), so every plan after the first came out a few grains
// smaller and gave back and allocated again two buffers of GiBs and the
// MSM context. Kept while within 1/64 of the new plan's buffers and, where
// the card bounds the plan, within half of its slack (CARD_SLACK is there
// for that rounding); within a memory limit, only inside the limit.
static void keep_held_buffers(const device_state &d, const memory_budget &budget,
                              const proving_key &key, stream_choice &c) {
    const uint64_t held = d.streamer.buffer_bytes();
    const uint64_t fresh = c.plan.buffer_bytes;
    if (!held || held == fresh || (held > fresh ? held - fresh : fresh - held) > fresh / 64)
        return;
    stream_plan q;
    plan_fill(q, held, c.fixed_own, msm_sizes_of(key), chunk_temp(d));
    const uint64_t tolerance = c.avail < budget.limit ? memory_budget::CARD_SLACK / 2 : 0;
    if (q.total_bytes <= c.avail + tolerance)
        c.plan = q;
}

stream_choice choose(const device_state &d, const pass_lane &ln, const memory_budget &budget,
                     const proving_key &key, const cache_layout &L, const shape *sh, size_t share) {
    // The decision counts what the device holds: the memory it may use in
    // all (the limit) against the cache and shape it will hold plus the key,
    // or plus the chunk buffers (given back for a resident key).
    stream_choice c;
    const int sm = d.props.multiProcessorCount;
    const size_t shape_need = d.shape.need(sh);
    // The other lane's cache and MSM context, and sppark's tables.
    const uint64_t other = d.lanes_bytes(&ln) + d.library_bytes.load();
    const uint64_t held = ln.cache.bytes.load() + d.shape.bytes() + d.streamer.held() +
                          ln.msm_bytes() + other;
    c.avail = budget.usable(held);
    const uint64_t cache_after = std::max<uint64_t>(ln.cache.bytes.load(), L.total) + other;
    const uint64_t shape_after = sh ? (shape_need ? shape_need : d.shape.bytes()) : d.shape.bytes();
    c.fixed = cache_after + shape_after;
    const uint64_t need = key_layout(key).total + temp_bytes(L, sm) + c.fixed;
    if (need <= c.avail) {
        c.upload = true;
        return c;
    }
    // Streaming is for tight memory: the plan counts this proof's own
    // cache (a larger one held from an earlier proof is given back when it
    // would not fit next to the plan).
    c.fixed_own = L.total + shape_after + d.library_bytes.load();
    c.plan = plan_for(d, c.avail, c.fixed_own, key, &c.fits);
    if (!c.fits && sh) {
        // A phased pass with the shape's rows streamed through the chunk
        // buffers (no shape on the device; one held is given back).
        const cache_layout Ls = shape_rows_layout_for(key, L.m);
        if (Ls.total) {
            bool fits = false;
            const uint64_t own = Ls.total + d.library_bytes.load();
            const stream_plan p = plan_for(d, c.avail, own, key, &fits);
            if (fits && p.buffer_bytes >= shape_rows_buffer_need(*sh)) {
                c.compact = c.shape_rows = c.fits = true;
                c.fixed_own = own;
                c.fixed = std::max<uint64_t>(ln.cache.bytes.load(), Ls.total) + other;
                c.plan = p;
            }
        }
    }
    if (!c.fits) {
        // A phased pass with a, b, c from the host: no shape on the device
        // (one held is given back), the MSM scalars over a, b, c. Its plan
        // is the one reported when even it does not fit: the least memory
        // that works.
        const cache_layout Lc = compact_layout_for(key, L.m);
        c.compact = true;
        c.fixed_own = Lc.total + d.library_bytes.load();
        c.fixed = std::max<uint64_t>(ln.cache.bytes.load(), Lc.total) + other;
        c.plan = plan_for(d, c.avail, c.fixed_own, key, &c.fits);
    }
    if (c.fits && share > 1) {
        const stream_plan single = c.plan;
        c.shared = plan_shared(c.plan, single, share, c.avail, c.fixed_own, shared_set_bytes(L),
                               msm_sizes_of(key), chunk_temp(d));
    }
    if (c.fits && c.shared == 1)
        keep_held_buffers(d, budget, key, c);
    return c;
}

// Whether a pass over a resident key (without tables) runs H + L in wide
// batches (working_cache.hpp): on a lane that holds them already, or on
// lane 0 with no memory limit where the device has room for the wide slots
// and, beside them, for a second lane of the same kind (lanes.hpp), so
// that they never cost the overlap of two passes. Lane 1 takes them only
// when it opens (open_second_lane), never in a pass: an overlapped pass
// must not reallocate its lane. CP_MSM_NARROW_HL (diagnostics): never.
static bool wide_hl(const device_state &d, const pass_lane &ln, const memory_budget &budget,
                    const key_copy &dk, const cache_layout &L, size_t cache_need,
                    size_t shape_need) {
    static const bool narrow = std::getenv("CP_MSM_NARROW_HL") != nullptr;
    const std::vector<msm_slot_spec> wide = msm_slots(L, false, true);
    if (narrow || budget.limit != UINT64_MAX || wide[0].batch_max == 0)
        return false;
    if (ln.msm && ln.msm->fits(wide))
        return true;
    if (&ln != &d.lanes[0])
        return false;
    const int sm = d.props.multiProcessorCount;
    const uint64_t held = dk.bytes() + d.lanes_bytes() + d.shape.bytes() + d.streamer.held();
    const uint64_t usable = budget.usable(held);
    const uint64_t wide_bytes = msm_context_bytes(wide, sm);
    const uint64_t need = cache_need + shape_need + wide_bytes + L.total + wide_bytes;
    return usable > held && usable - held >= need;
}

key_place place(device_state &d, pass_lane &ln, const memory_budget &budget, const proving_key &key,
                const cache_layout &L, const shape *sh, cp_timings &key_t, size_t share) {
    key_place kp;
    kp.L = L;
    // What the shape and the chunk buffers hold once placed, or once a
    // failed placement gave them back.
    struct noted {
        device_state &d;
        ~noted() { d.note_placed(); }
    } note_on_exit{d};
    know_library_bytes(d);
    const int sm = d.props.multiProcessorCount;
    std::vector<msm_slot_spec> slots = msm_slots(L);
    const size_t cache_need = ln.cache.need(L.total);
    const size_t shape_need = d.shape.need(sh);
    kp.dk = resident_key(key, d.cuda_id);
    if (!kp.dk) {
        const stream_choice c = choose(d, ln, budget, key, L, sh, share);
        if (c.upload) {
            d.streamer.release();
            ln.drop_msm_unless(slots);
            kp.dk = &ensure_key(key, d.cuda_id, budget,
                                ln.msm_need(slots, sm) + cache_need + shape_need, d.stream(),
                                key_t, d.key_uploads);
        } else {
            kp.plan = c.plan;
            kp.shared = c.shared;
            if (c.compact)
                kp.L = c.shape_rows ? shape_rows_layout_for(key, L.m)
                                    : compact_layout_for(key, L.m);
            if (c.fits && ln.cache.bytes.load() > kp.L.total &&
                kp.plan.total_bytes - c.fixed_own + c.fixed > c.avail)
                ln.cache.release();
            if (!c.fits)
                fail(CP_ERR_OUT_OF_MEMORY,
                     "needs " + mib(kp.plan.total_bytes) + " on device " +
                         std::to_string(d.ordinal) + ", " + mib(c.avail) +
                         " free: the proving key (" + mib(key_layout(key).total) +
                         ") does not fit next to the working set (" + mib(L.total) +
                         ") and streaming it in chunks, a, b, c sent up from the host, needs "
                         "at least " +
                         mib(kp.plan.total_bytes));
            // The phased pass keeps no shape on the device.
            if (c.compact)
                d.shape.clear();
            if (std::getenv("CP_TRACE_PASS"))
                std::fprintf(stderr,
                             "cp pass trace: place (streamed key): may use %s (free %s, of "
                             "it idle in the pool %s), own %s (cache %s, library %s), plan %s: buffers "
                             "2 x %s (held %s), MSM context %s (held %s)%s%s\n",
                             mib(c.avail).c_str(), mib(memory_budget::card_free()).c_str(),
                             mib(memory_budget::pool_idle()).c_str(), mib(c.fixed_own).c_str(),
                             mib(kp.L.total).c_str(), mib(d.library_bytes.load()).c_str(),
                             mib(kp.plan.total_bytes).c_str(), mib(kp.plan.buffer_bytes).c_str(),
                             mib(d.streamer.buffer_bytes()).c_str(),
                             mib(kp.plan.temp_bytes).c_str(), mib(ln.msm_bytes()).c_str(),
                             c.compact ? ", phased" : "", c.shape_rows ? " (shape rows)" : "");
        }
    }
    if (kp.dk) {
        const bool trace = std::getenv("CP_TRACE_PASS") != nullptr;
        const uint64_t t0 = now_ns();
        const bool tables = kp.dk->has_tables();
        if (tables)
            slots = msm_slots(L, true);
        else if (wide_hl(d, ln, budget, *kp.dk, L, cache_need, shape_need))
            slots = msm_slots(L, false, true);
        kp.temp = msm_context_bytes(slots, sm);
        ln.drop_msm_unless(slots);
        const size_t msm_need = ln.msm_need(slots, sm);
        const uint64_t t1 = now_ns();
        if (sh)
            d.shape.ensure(*sh, d.cuda_id, budget, msm_need + cache_need, d.stream());
        const uint64_t t2 = now_ns();
        ln.cache.ensure(d.cuda_id, budget, L.total, msm_need);
        const uint64_t t3 = now_ns();
        ln.ensure_msm(d.gpu(), slots);
        if (trace)
            std::fprintf(stderr,
                         "cp pass trace: place (resident key): sizes %.2f ms, shape %.2f ms, "
                         "cache %.2f ms, MSM context %.2f ms (%s%s)\n",
                         (t1 - t0) / 1e6, (t2 - t1) / 1e6, (t3 - t2) / 1e6,
                         (now_ns() - t3) / 1e6, mib(ln.msm_bytes()).c_str(),
                         slots[0].batch_max ? ", H + L in wide batches" : "");
    } else {
        kp.temp = kp.plan.temp_bytes;
        // The MSM buffers of the plan's chunks, not more.
        const std::vector<msm_slot_spec> cs =
            chunk_slots(kp.plan.g1_per_chunk, kp.plan.g2_per_chunk);
        if (ln.msm && (!ln.msm->fits(cs) || ln.msm_bytes() > kp.plan.temp_bytes))
            ln.drop_msm();
        // What the MSM context still allocates: nothing when the one held
        // (from an earlier pass, the readying pass say) fits the chunks. It
        // is in `held` above; counted again as needed, the warm-up pass
        // after readying failed by its size (the 32 GiB C2 on an 80 GB
        // H100: "needs 30553 MiB on device 0, 25880 MiB free", the cache's
        // 25374 and the 5179 of a context held already).
        const size_t msm_need = ln.msm_need(cs, sm);
        if (d.streamer.buffer_bytes() != kp.plan.buffer_bytes)
            d.streamer.release();
        // The scalars of the proofs past the first of a shared pass.
        const size_t sets = (kp.shared - 1) * shared_set_bytes(L);
        if (d.streamer.sets_bytes() != sets)
            d.streamer.ensure_sets(d.cuda_id, budget, 0, 0);
        const size_t buffers = 2 * kp.plan.buffer_bytes;
        const size_t stream_need =
            (d.streamer.buffer_bytes() == kp.plan.buffer_bytes ? 0 : buffers) +
            (d.streamer.sets_bytes() == sets ? 0 : sets);
        if (sh && !kp.L.compact)
            d.shape.ensure(*sh, d.cuda_id, budget,
                           msm_need + ln.cache.need(kp.L.total) + stream_need, d.stream());
        ln.cache.ensure(d.cuda_id, budget, kp.L.total, msm_need + stream_need);
        d.streamer.ensure(d.cuda_id, budget, kp.plan.buffer_bytes, msm_need + sets);
        d.streamer.ensure_sets(d.cuda_id, budget, sets, msm_need);
        ln.ensure_msm(d.gpu(), cs);
    }
    d.ensure_streams(ln);
    return kp;
}

}  // namespace cuda_dev
}  // namespace cp
