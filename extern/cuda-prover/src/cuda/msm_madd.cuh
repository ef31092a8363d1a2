// The accumulation's mixed addition (an xyzz bucket plus an affine point,
// madd-2008-s: 8M + 2S) with Y3 = R (Q - X3) - Y1 PPP as one dot product:
// both products are summed before a single Montgomery reduction, where
// sppark's xyzz_t::add reduces each. In G1 that saves one reduction of the
// ten (mont_t::dot_product interleaves the two rows). In G2, where an Fp2
// element is spread over two lanes and each lane's product is already a
// two-term dot product, each lane sums four products and reduces once
// (mont_t's wide dot_product) instead of twice; measured, that is no
// faster (msm_engine.cuh), so G2 uses it only when tuned so. The rare
// cases (either point at infinity, equal x: a doubling or a sum of zero)
// go to xyzz_t::add unchanged. Included by msm_accumulate.cuh (sppark's
// field and curve types must be defined first).
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

#include "msm_kernels.cuh"

namespace cp_cuda {
namespace msm_detail {

// a b - c d in the field, with one reduction (per lane).
template<class field_t>
__device__ __forceinline__ field_t dot_sub(const field_t &a, const field_t &b, field_t c,
                                           const field_t &d) {
    c.cneg(true);
    if constexpr (field_t::degree == 1) {
        return field_t::dot_product(a, b, c, d);
    } else {
        static_assert(field_t::degree == 2, "one or two lanes per element");
        // Lane 0 holds the real part, lane 1 the imaginary part (sppark's
        // fp2_t): re(a b) = a0 b0 - a1 b1, im(a b) = a1 b0 + a0 b1.
        using lane_t = decltype(a.shfl(0u, 0u));
        const uint32_t id = threadIdx.x % 32, mask = __activemask();
        const bool real = (id & 1) == 0;
        lane_t a_other = a.shfl(id ^ 1, mask);
        lane_t c_other = c.shfl(id ^ 1, mask);
        a_other.cneg(real);
        c_other.cneg(real);
        const lane_t x[4] = {a, a_other, c, c_other};
        const lane_t y[4] = {b.shfl(id & ~1u, mask), b.shfl(id | 1, mask), d.shfl(id & ~1u, mask),
                             d.shfl(id | 1, mask)};
        return lane_t::dot_product(x, y, 4);
    }
}

// acc += p (or -p with `subtract`); p = (x2, y2), infinity being (0, 0).
template<class bucket_t, class field_t = typename xyzz_field<bucket_t>::type>
__device__ __forceinline__ void madd_dot(bucket_t &acc, const field_t &x2, const field_t &y2,
                                         bool subtract) {
    using affine_t = typename bucket_t::affine_t;
    static_assert(sizeof(xyzz_coords<field_t>) == sizeof(bucket_t), "xyzz layout");
    const affine_t p2(x2, y2);
    if (!p2.is_inf() && !acc.is_inf()) {
        auto &q = reinterpret_cast<xyzz_coords<field_t> &>(acc);
        field_t R = y2 * q.ZZZ;  // S2 = Y2 ZZZ1
        R.cneg(subtract);
        R -= q.Y;                // R = S2 - Y1
        field_t P = x2 * q.ZZ;   // U2 = X2 ZZ1
        P -= q.X;                // P = U2 - X1
        if (!P.is_zero()) {
            field_t PP = P ^ 2;
            field_t PPP = P * PP;
            q.ZZ *= PP;          // ZZ3 = ZZ1 PP
            q.ZZZ *= PPP;        // ZZZ3 = ZZZ1 PPP
            field_t Q = PP * q.X;  // Q = X1 PP
            field_t X3 = R ^ 2;
            X3 -= PPP;
            X3 -= Q;
            X3 -= Q;             // X3 = R^2 - PPP - 2 Q
            Q -= X3;
            q.Y = dot_sub(R, Q, q.Y, PPP);  // Y3 = R (Q - X3) - Y1 PPP
            q.X = X3;
            return;
        }
    }
    // Either point at infinity, or X1 = X2 (a doubling or infinity).
    acc.add(p2, subtract);
}

}  // namespace msm_detail
}  // namespace cp_cuda
