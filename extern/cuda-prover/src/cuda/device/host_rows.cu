// The front of a phased pass on the host (host_rows.hpp).
#include "device/host_rows.hpp"

#include <algorithm>
#include <string>
#include <thread>
#include <vector>

#include "device/errors.hpp"
#include "r1cs.hpp"

namespace cp {
namespace cuda_dev {

void stage_host_rows(const gpu_t &gpu, stager &staging, const shape &sh, const blst_fr *inputs,
                     const blst_fr *aux, cp_cuda::fr_raw *d_a, cp_cuda::fr_raw *d_b,
                     cp_cuda::fr_raw *d_c) {
    const size_t n = sh.num_constraints;
    const int threads = (int)std::max(1u, std::thread::hardware_concurrency());
    const size_t range = std::min(n, HOST_ROWS_RANGE);
    std::vector<blst_fr> a(range), b(range), c(range);
    const shape_matrix *mats[3] = {&sh.a, &sh.b, &sh.c};
    blst_fr *outs[3] = {a.data(), b.data(), c.data()};
    cp_cuda::fr_raw *dsts[3] = {d_a, d_b, d_c};
    for (size_t first = 0; first < n; first += range) {
        const size_t last = std::min(n, first + range);
        for (int k = 0; k < 3; k++)
            eval_row_range(sh, *mats[k], inputs, aux, first, last, outs[k], threads);
        const size_t bad = first_unsatisfied(a.data(), b.data(), c.data(), last - first, threads);
        if (bad != SIZE_MAX)
            fail(CP_ERR_UNSATISFIED, "constraint " + std::to_string(first + bad) +
                                         " is not satisfied by the witness (a*b != c)");
        // stage() has copied the range into its pinned ring when it returns:
        // the host buffers are free for the next range.
        for (int k = 0; k < 3; k++)
            staging.stage(gpu, dsts[k] + first, outs[k], (last - first) * sizeof(blst_fr));
    }
}

}  // namespace cuda_dev
}  // namespace cp
