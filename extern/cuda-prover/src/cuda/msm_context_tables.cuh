// Tables of multiples (part of msm.cu, included by it alone): when a
// table run pays, and the table's build, window width and window count.
#pragma once

#include <algorithm>

#include "msm_context_slots.cuh"

namespace cp_cuda {
namespace {

// A table run pays where Pippenger would run over (nearly) all the points:
// when at least an eighth of the scalars are long (neither 0, 1 nor short:
// msm_classify), or when the split was not asked for. Short scalars do not
// count towards that eighth (most of their digits are 0), but no longer
// weigh against it either: the top digits of many short scalars of similar
// length pile into a few buckets of the one bucket set, and the chunked
// accumulation (msm_accumulate.cuh) spreads any bucket over many threads
// (with sppark's one thread per bucket, 16K 63-bit scalars next to 2^20
// dense ones took the H + L of the `bits` circuit from 15 to 33 ms).
bool table_pays(bool split01, size_t n, const uint32_t *counts, size_t dense = 0) {
    if (!split01)
        return true;
    const size_t rest = counts[1] + dense, shorts = counts[2];
    return rest - shorts >= n / 8;
}

// Points per thread of msm_table_step (one inversion for each).
constexpr uint32_t TABLE_BATCH = 8;

template <class field_t>
void build_table(cudaStream_t s, void *d_table, size_t n, uint32_t wbits) {
    const size_t point = 2 * sizeof(typename field_t::mem_t);  // host: the whole Fp2
    const uint32_t windows = msm_detail::window_count(wbits);
    const size_t per_block = msm_detail::TABLE_THREADS / field_t::degree * TABLE_BATCH;
    const uint32_t blocks = (uint32_t)std::max<size_t>((n + per_block - 1) / per_block, 1);
    char *rows = (char *)d_table;
    for (uint32_t w = 1; w < windows && n; w++) {
        msm_detail::msm_table_step<field_t, TABLE_BATCH>
            <<<blocks, msm_detail::TABLE_THREADS, 0, s>>>(rows + w * n * point,
                                                          rows + (w - 1) * n * point, n, wbits);
        msm_detail::cuda_ok(cudaGetLastError(), "table of multiples");
    }
}

}  // namespace

uint32_t msm_table_window_bits(size_t n) { return msm_detail::table_window_bits(n); }

uint32_t msm_table_windows(uint32_t wbits) { return msm_detail::window_count(wbits); }

void msm_build_table(cudaStream_t stream, msm_group group, void *d_table, size_t n,
                     uint32_t wbits) {
    if (wbits < 10 || wbits > 20)
        throw cuda_error{-(int)cudaErrorInvalidValue,
                         std::string("cuda-prover MSM: table window width out of range")};
    if (group == msm_group::g2)
        build_table<fp2_t>(stream, d_table, n, wbits);
    else
        build_table<fp_t>(stream, d_table, n, wbits);
}

}  // namespace cp_cuda
