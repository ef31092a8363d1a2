// The start of a Groth16 pass's NTT phase (groth16_pass_state.hpp): after a
// device evaluation of the shape its row check read, a, b, c zero-padded;
// then H = (a b - c) / Z queued on the compute stream (ntt.cu), its end
// recorded for what waits for it (A's and B's table runs, a phased
// layout's aux).
#include "device/groth16_pass_state.hpp"

#include <cstring>
#include <string>

namespace cp {
namespace cuda_dev {

using namespace cp_cuda;

namespace {

// 1 / (g^m - 1) for g = 7, m = 2^lg.
fr_raw z_inverse(uint32_t lg) {
    blst_fr g, one, z;
    const uint64_t seven[4] = {7, 0, 0, 0}, unit[4] = {1, 0, 0, 0};
    blst_fr_from_uint64(&g, seven);
    blst_fr_from_uint64(&one, unit);
    z = g;
    for (uint32_t i = 0; i < lg; i++)
        blst_fr_sqr(&z, &z);
    blst_fr_sub(&z, &z, &one);
    blst_fr_inverse(&z, &z);
    fr_raw out;
    std::memcpy(&out, &z, sizeof(out));
    return out;
}

}  // namespace

// H's NTTs over a, b, c on the compute stream, their end in ev_ntt.
void queue_h(pass_state &p, pass_job &j) {
    compute_h_async(*p.gpu, p.d_a, p.d_b, p.d_c, j.job.lg_domain, z_inverse(j.job.lg_domain));
    cuda_check(cudaEventRecord(p.ln->ev_ntt.get(), p.zs), "cudaEventRecord");
}

// After a device evaluation of the shape (queued on zs, its row
// check into L.bad): the check read, a, b, c zero-padded to the
// domain and H queued; returns when H was queued (eval_ns from
// t_up).
uint64_t check_rows_then_h(pass_state &p, pass_job &j, uint64_t t_up) {
    const size_t m = p.m, nc = j.nc;
    uint64_t bad = 0;
    cuda_check(cudaMemcpyAsync(&bad, p.base + p.L.bad, sizeof bad, cudaMemcpyDeviceToHost, p.zs),
               "read of the row check");
    cuda_check(cudaStreamSynchronize(p.zs), "evaluation of the shape");
    if (bad != UINT64_MAX)
        fail(CP_ERR_UNSATISFIED, "constraint " + std::to_string(bad) +
                                     " is not satisfied by the witness (a*b != c)");
    for (fr_raw *q : {p.d_a, p.d_b, p.d_c})
        if (m > nc)
            cuda_check(cudaMemsetAsync(q + nc, 0, (m - nc) * sizeof(fr_raw), p.zs),
                       "cudaMemsetAsync");
    const uint64_t at = now_ns();
    j.t.eval_ns += at - t_up;
    queue_h(p, j);
    return at;
}

}  // namespace cuda_dev
}  // namespace cp
