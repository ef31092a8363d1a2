// The copies of a job's front in a Groth16 pass (groth16_pass_state.hpp),
// queued on the copy stream: a, b, c sent up from the host, the witness
// (through the staging ring, copied into place when it is on the device
// already, or unpacked there), the density bitmaps and their word
// prefixes.
#include "device/groth16_pass_state.hpp"

#include "device/host_rows.hpp"
#include "device/shape_residency.hpp"
#include "device/witness_lender.hpp"
#include "device/witness_unpack.hpp"

namespace cp {
namespace cuda_dev {

using namespace cp_cuda;

// a, b, c: given, or evaluated from the shape on the host (a phased
// pass), then zero-padded to the domain.
void stage_abc(pass_state &p, pass_job &j) {
    const circuit_job &job = j.job;
    fr_raw *const d_a = p.d_a, *const d_b = p.d_b, *const d_c = p.d_c;
    const size_t m = p.m, nc = j.nc;
    if (job.sh) {
        const uint64_t t_eval = now_ns();
        stage_host_rows(*p.gpu, p.d.staging, *job.sh, job.inputs, job.aux, d_a, d_b, d_c);
        j.t.eval_ns += now_ns() - t_eval;
    } else {
        const blst_fr *src[3] = {job.a, job.b, job.c};
        fr_raw *dst[3] = {d_a, d_b, d_c};
        for (int i = 0; i < 3; i++)
            p.stage(dst[i], src[i], nc * sizeof(fr_raw));
    }
    for (fr_raw *q : {d_a, d_b, d_c})
        if (m > nc)
            cuda_check(cudaMemsetAsync(q + nc, 0, (m - nc) * sizeof(fr_raw), p.copy),
                       "cudaMemsetAsync");
}

// aux and the inputs through the staging ring.
void stage_witness(pass_state &p, const circuit_job &job) {
    p.stage(p.d_aux, job.aux, p.L.na * sizeof(fr_raw));
    p.stage(p.d_in, job.inputs, p.L.ni * sizeof(fr_raw));
}

// The witness of a pass with a resident shape.
void upload_witness(pass_state &p, const circuit_job &job) {
    const cache_layout &L = p.L;
    const cudaStream_t copy = p.copy;
    if (job.early_upload || job.lent) {
        // Already on the device (witness_lender.hpp): copied into place;
        // else pinned (device::lend_witness): one DMA per array.
        const void *aux = job.aux, *inputs = job.inputs;
        cudaMemcpyKind kind = cudaMemcpyHostToDevice;
        if (job.early_upload) {
            const early_upload &up = *static_cast<const early_upload *>(job.early_upload);
            cuda_check(cudaStreamWaitEvent(copy, up.done, 0), "cudaStreamWaitEvent");
            if (up.packed) {
                // Packed (witness_pack.hpp): unpacked into place.
                if (up.packed->num_aux != L.na || up.packed->num_inputs != L.ni)
                    fail(CP_ERR_INTERNAL, "a packed witness of another size than its job's");
                unpack_witness_async(copy, up.d_packed, *up.packed, p.d_in, p.d_aux);
                return;
            }
            aux = up.d_aux;
            inputs = up.d_inputs;
            kind = cudaMemcpyDeviceToDevice;
        }
        cuda_check(cudaMemcpyAsync(p.d_aux, aux, L.na * sizeof(fr_raw), kind, copy),
                   "upload of the witness");
        cuda_check(cudaMemcpyAsync(p.d_in, inputs, L.ni * sizeof(fr_raw), kind, copy),
                   "upload of the witness");
    } else {
        stage_witness(p, job);
    }
}

// The density bitmaps (the job's, or its shape's) and their word
// prefixes into the working cache, for a pass without a resident
// shape.
void stage_densities(pass_state &p, const uint64_t *den_a, const uint64_t *den_bi,
                     const uint64_t *den_ba) {
    const cache_layout &L = p.L;
    pass_lane &ln = *p.ln;
    uint64_t *bits_a = (uint64_t *)(p.base + L.bits);
    uint64_t *bits_bi = bits_a + L.w_aux;
    uint64_t *bits_ba = bits_bi + L.w_in;
    uint32_t *pre = (uint32_t *)(p.base + L.pre);
    p.stage(bits_a, den_a, L.w_aux * sizeof(uint64_t));
    p.stage(bits_bi, den_bi, L.w_in * sizeof(uint64_t));
    p.stage(bits_ba, den_ba, L.w_aux * sizeof(uint64_t));
    ln.pre_host.resize(2 * L.w_aux + L.w_in);
    uint32_t *pre_a = ln.pre_host.data();
    uint32_t *pre_bi = pre_a + L.w_aux;
    uint32_t *pre_ba = pre_bi + L.w_in;
    if (L.na) {
        word_prefix(pre_a, den_a, L.na);
        word_prefix(pre_ba, den_ba, L.na);
    }
    word_prefix(pre_bi, den_bi, L.ni);
    p.stage(pre, ln.pre_host.data(), ln.pre_host.size() * sizeof(uint32_t));
    p.d_bits_a = bits_a;
    p.d_bits_bi = bits_bi;
    p.d_bits_ba = bits_ba;
    p.d_pre = pre;
}

}  // namespace cuda_dev
}  // namespace cp
