// A slot's result (part of msm.cu, included by it alone): the window sums
// copied back to the slot's pinned buffer, combined on the host into one
// point in blst's layout.
#pragma once

#include <chrono>
#include <cstring>

#include "msm_context_slots.cuh"

namespace cp_cuda {
namespace {

// sum_w 2^(w * wbits) wsum[w] + wsum[ONES_SLOT] by Horner's rule, in
// sppark's host-side Jacobian arithmetic, into out (blst's layout, which
// Point shares); its time is added to prof's combine phase when profiled.
template <class Bucket, class Point, class Raw>
void combine_windows(const pinned_t &pin, msm_profile *prof, Raw &out) {
    const auto t0 = std::chrono::steady_clock::now();
    const uint32_t nwins = pin.windows_and_wbits & 0xffff, wbits = pin.windows_and_wbits >> 16;
    auto window = [&](uint32_t w) {
        Bucket b;
        std::memcpy((void *)&b, pin.wsum[w], sizeof(b));
        return Point(b);
    };
    Point acc;
    acc.inf();
    for (uint32_t w = nwins; w-- > 0;) {
        if (w + 1 < nwins)
            for (uint32_t i = 0; i < wbits; i++)
                acc.dbl();
        acc.add(window(w));
    }
    acc.add(window(msm_detail::ONES_SLOT));
    std::memcpy(&out, &acc, sizeof(out));
    if (prof)
        prof->ms[msm_phase_combine] += std::chrono::duration<double, std::milli>(
                                           std::chrono::steady_clock::now() - t0)
                                           .count();
}

}  // namespace

void msm_context::read(size_t slot, g1_proj_raw &out) const {
    auto &sl = p_->at(slot);
    if (!sl.e1)
        throw cuda_error{-(int)cudaErrorInvalidValue,
                         std::string("cuda-prover MSM: slot is not G1")};
    combine_windows<g1_bucket, g1_point>(p_->pinned[slot], sl.profile, out);
}

void msm_context::read(size_t slot, g2_proj_raw &out) const {
    auto &sl = p_->at(slot);
    if (!sl.e2)
        throw cuda_error{-(int)cudaErrorInvalidValue,
                         std::string("cuda-prover MSM: slot is not G2")};
    combine_windows<g2_bucket, g2_point>(p_->pinned[slot], sl.profile, out);
}

}  // namespace cp_cuda
