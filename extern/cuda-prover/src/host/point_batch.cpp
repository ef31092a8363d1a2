// Owns: the host backend's batches of curve points (host/point_batch.hpp).
#include "host/point_batch.hpp"

#include <atomic>
#include <cstring>

#include "parallel.hpp"

namespace cp {
namespace host {

void generator_multiples(bool g2, const blst_fr *scalars, size_t n, void *out, int threads) {
    parallel_for(n, threads, 256, [&](size_t b, size_t e, size_t) {
        for (size_t i = b; i < e; i++) {
            blst_scalar s;
            blst_scalar_from_fr(&s, &scalars[i]);
            if (g2) {
                blst_p2 p;
                blst_p2_mult(&p, blst_p2_generator(), s.b, 255);
                blst_p2_to_affine(&static_cast<blst_p2_affine *>(out)[i], &p);
            } else {
                blst_p1 p;
                blst_p1_mult(&p, blst_p1_generator(), s.b, 255);
                blst_p1_to_affine(&static_cast<blst_p1_affine *>(out)[i], &p);
            }
        }
    });
}

size_t first_outside_subgroup(bool g2, const void *points, size_t n, int threads) {
    std::atomic<size_t> first{n};
    parallel_for(n, threads, 512, [&](size_t b, size_t e, size_t) {
        for (size_t i = b; i < e && i < first.load(std::memory_order_relaxed); i++) {
            const bool in = g2 ? blst_p2_affine_in_g2(&static_cast<const blst_p2_affine *>(points)[i])
                               : blst_p1_affine_in_g1(&static_cast<const blst_p1_affine *>(points)[i]);
            if (!in) {
                size_t cur = first.load();
                while (i < cur && !first.compare_exchange_weak(cur, i)) {
                }
                return;
            }
        }
    });
    return first.load();
}

}  // namespace host
}  // namespace cp
