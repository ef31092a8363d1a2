// One MSM on a slot (part of msm.cu, included by it alone): the scalars'
// classification, then the run the engine takes (over a table of
// multiples, with or without the 0/1 split), its window sums copied back.
#pragma once

#include <cstdlib>

#include "msm_context_slots.cuh"
#include "msm_context_tables.cuh"

namespace cp_cuda {

void msm_context::classify(size_t slot, cudaStream_t s, const void *d_points,
                           const void *d_scalars, size_t n) {
    p_->classify(slot, s, d_points, d_scalars, n, true);
}

void msm_context::impl::classify(size_t slot, cudaStream_t s, const void *d_points,
                                 const void *d_scalars, size_t n, bool gather, size_t dense) {
    auto &sl = at(slot);
    uint32_t *counts = pinned[slot].counts;
    sl.gathered = gather;
    // Diagnostics: CP_MSM_NO_DENSE_HEAD set classifies every scalar, as
    // before msm_job::dense (read once).
    static const bool no_head = std::getenv("CP_MSM_NO_DENSE_HEAD") != nullptr;
    const size_t cap = sl.e2 ? sl.e2->tail_cap() : sl.e1->tail_cap();
    sl.dense = !no_head && gather && dense < n && dense > cap ? dense : 0;
    const fr_t *sc = (const fr_t *)d_scalars + sl.dense;
    if (sl.e2)
        sl.e2->classify(s, (const g2_engine::affine_h *)d_points + sl.dense, sc, n - sl.dense,
                        counts, gather);
    else
        sl.e1->classify(s, (const g1_engine::affine_h *)d_points + sl.dense, sc, n - sl.dense,
                        counts, gather);
}

namespace {

// One MSM on engine e: over the table when there is one that e holds and
// it pays (with the digits `from` another slot sorted, if given; else
// recording `sorted` after its own sort, *table_run set), else with or
// without the 0/1 split (gathering the split's rest first when the
// classification only counted: `gathered` false).
template <class engine_t>
uint32_t launch_on(engine_t &e, cudaStream_t s, const void *d_points, const fr_t *sc, size_t n,
                   bool split01, uint32_t table_wbits, pinned_t &pin, bool gathered,
                   const msm_detail::sorted_digits *from, cudaEvent_t sorted, cudaEvent_t gate,
                   bool *table_run, size_t dense) {
    auto *pts = (const typename engine_t::affine_h *)d_points;
    *table_run = false;
    if (table_wbits && e.fits_table(n, table_wbits) && table_pays(split01, n, pin.counts, dense)) {
        *table_run = !from;
        return e.run_table(s, pts, sc, n, table_wbits, from, sorted, gate);
    }
    if (!split01)
        return e.run(s, pts, sc, n);
    if (dense)  // classified past the dense head, and gathered
        return e.run_split_after(s, pts, sc, n, dense, pin.counts[0], pin.counts[1]);
    if (!gathered)
        e.classify(s, pts, sc, n, pin.recounts, true);
    return e.run_split(s, pts, sc, n, pin.counts[0], pin.counts[1]);
}

}  // namespace

void msm_context::launch(size_t slot, cudaStream_t s, const void *d_points,
                         const void *d_scalars, size_t n, bool split01, uint32_t table_wbits) {
    auto &sl = p_->at(slot);
    if (sl.e2)
        sl.e2->crowd(1);
    else
        sl.e1->crowd(1);
    p_->launch(slot, s, d_points, d_scalars, n, split01, table_wbits, nullptr, nullptr);
}

void msm_context::impl::launch(size_t slot, cudaStream_t s, const void *d_points,
                               const void *d_scalars, size_t n, bool split01,
                               uint32_t table_wbits, slot_t *donor, cudaEvent_t gate) {
    auto &sl = at(slot);
    pinned_t &pin = pinned[slot];
    const fr_t *sc = (const fr_t *)d_scalars;
    const void *wsum;
    size_t bytes;
    sl.wants_table = split01 && table_pays(true, n, pin.counts, sl.dense);
    // The donor's sorted digits, once its sort is done; its stream then
    // waits for this MSM before it runs again (its digits stay until then).
    msm_detail::sorted_digits from;
    if (donor) {
        msm_detail::cuda_ok(cudaStreamWaitEvent(s, donor->sorted, 0), "cudaStreamWaitEvent");
        from = donor->e2 ? donor->e2->sorted() : donor->e1->sorted();
    }
    const msm_detail::sorted_digits *fp = donor ? &from : nullptr;
    bool table_run = false;
    if (sl.e2) {
        pin.windows_and_wbits = launch_on(*sl.e2, s, d_points, sc, n, split01, table_wbits, pin,
                                          sl.gathered, fp, sl.sorted, gate, &table_run,
                                          sl.dense);
        wsum = sl.e2->window_sums();
        bytes = sizeof(g2_engine::bucket_h);
    } else {
        pin.windows_and_wbits = launch_on(*sl.e1, s, d_points, sc, n, split01, table_wbits, pin,
                                          sl.gathered, fp, sl.sorted, gate, &table_run,
                                          sl.dense);
        wsum = sl.e1->window_sums();
        bytes = sizeof(g1_engine::bucket_h);
    }
    sl.table_run = table_run;
    if (donor) {
        msm_detail::cuda_ok(cudaEventRecord(sl.released, s), "cudaEventRecord");
        msm_detail::cuda_ok(cudaStreamWaitEvent(donor->stream, sl.released, 0),
                            "cudaStreamWaitEvent");
    }
    // The window sums, packed at the device's stride, into rows of the
    // largest bucket's size.
    msm_detail::cuda_ok(cudaMemcpy2DAsync(pin.wsum, sizeof(pin.wsum[0]), wsum, bytes, bytes,
                                          msm_detail::WSUM_SLOTS, cudaMemcpyDeviceToHost, s),
                        "copy of the window sums");
}

bool msm_context::wants_table(size_t slot) const { return p_->at(slot).wants_table; }

}  // namespace cp_cuda
