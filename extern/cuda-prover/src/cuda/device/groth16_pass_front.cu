// A job's front in a Groth16 pass (groth16_pass_state.hpp), one of three:
// a phased pass that evaluates a, b, c on the device from the shape's rows
// streamed through the key's chunk buffers, a pass with a resident shape,
// or a, b, c sent up (given, or evaluated on the host in a phased pass).
// Each ends with H's NTTs queued; then H's coefficients go before aux and
// the MSMs' scalars are gathered.
#include "device/groth16_pass_state.hpp"

#include <cstdio>

#include "device/shape_rows.hpp"

namespace cp {
namespace cuda_dev {

using namespace cp_cuda;

namespace {

// A phased pass that evaluates on the device: the witness
// goes up, then the shape's rows through the key's chunk
// buffers (shape_rows.hpp); a, b, c are checked before H.
void front_shape_rows(pass_state &p, pass_job &j) {
    device_state &d = p.d;
    pass_lane &ln = *p.ln;
    const circuit_job &job = j.job;
    stage_witness(p, job);
    stage_densities(p, job.sh->a_aux_density.data(), job.sh->b_input_density.data(),
                    job.sh->b_aux_density.data());
    cuda_check(cudaEventRecord(ln.ev_rest.get(), p.copy), "cudaEventRecord");
    cuda_check(cudaStreamWaitEvent(p.zs, ln.ev_rest.get(), 0), "cudaStreamWaitEvent");
    const uint64_t t_up = now_ns();
    j.t.upload_ns += t_up - p.t_start;
    char *const bufs[2] = {d.streamer.buffer(0), d.streamer.buffer(1)};
    fr_raw *const abc[3] = {p.d_a, p.d_b, p.d_c};
    evaluate_shape_rows(*p.gpu, d.staging, *job.sh, bufs, d.streamer.buffer_bytes(), abc,
                        p.d_in, p.d_aux, (uint64_t *)(p.base + p.L.bad));
    j.t_h = check_rows_then_h(p, j, t_up);
    // The buffers are free again: the key's first chunk goes up
    // while the NTTs run.
    if (p.count == 1)
        start_stream(p, {0});
}

// Only the witness goes up; a, b, c are evaluated from the
// resident shape and checked before H.
void front_resident_shape(pass_state &p, pass_job &j) {
    device_state &d = p.d;
    pass_lane &ln = *p.ln;
    const cache_layout &L = p.L;
    const circuit_job &job = j.job;
    const uint64_t t_pool = now_ns();
    upload_witness(p, job);
    const uint64_t t_staged = now_ns();
    cuda_check(cudaEventRecord(ln.ev_rest.get(), p.copy), "cudaEventRecord");
    cuda_check(cudaStreamSynchronize(p.copy), "upload of the witness");
    const uint64_t t_up = now_ns();
    if (p.count == 1)
        start_stream(p, {0});
    if (p.trace)
        std::fprintf(stderr,
                     "cp pass trace: place %.2f ms, pool mark %.2f ms, staging %.2f ms "
                     "(%zu bytes), copy stream drained %.2f ms later\n",
                     (p.t_placed - p.t_start) / 1e6, (t_pool - p.t_placed) / 1e6,
                     (t_staged - t_pool) / 1e6, (L.na + L.ni) * sizeof(fr_raw),
                     (t_up - t_staged) / 1e6);
    j.t.upload_ns += t_up - p.t_start;
    cuda_check(cudaStreamWaitEvent(p.zs, ln.ev_rest.get(), 0), "cudaStreamWaitEvent");
    p.d_bits_a = d.shape.bits;
    p.d_bits_bi = p.d_bits_a + L.w_aux;
    p.d_bits_ba = p.d_bits_bi + L.w_in;
    p.d_pre = d.shape.pre;
    d.shape.evaluate(*p.gpu, *job.sh, p.base, L);
    j.t_h = check_rows_then_h(p, j, t_up);
    start_ab(p, j);
}

// a, b, c (given, or evaluated from the shape on the host in
// a phased pass), zero-padded to the domain, then H on the
// compute stream while the rest of the witness is copied.
void front_host(pass_state &p, pass_job &j) {
    pass_lane &ln = *p.ln;
    const circuit_job &job = j.job;
    stage_abc(p, j);
    cuda_check(cudaEventRecord(ln.ev_abc.get(), p.copy), "cudaEventRecord");
    cuda_check(cudaStreamWaitEvent(p.zs, ln.ev_abc.get(), 0), "cudaStreamWaitEvent");
    queue_h(p, j);
    // In a phased layout aux lies over b and c: its copy waits
    // for H.
    if (p.L.compact)
        cuda_check(cudaStreamWaitEvent(p.copy, ln.ev_ntt.get(), 0), "cudaStreamWaitEvent");

    stage_witness(p, job);
    // The densities: the job's, or its shape's.
    if (job.sh)
        stage_densities(p, job.sh->a_aux_density.data(), job.sh->b_input_density.data(),
                        job.sh->b_aux_density.data());
    else
        stage_densities(p, job.a_aux_density, job.b_input_density, job.b_aux_density);
    cuda_check(cudaEventRecord(ln.ev_rest.get(), p.copy), "cudaEventRecord");
    start_ab(p, j);
    if (p.count == 1)
        start_stream(p, {0});
    cuda_check(cudaEventSynchronize(ln.ev_rest.get()), "upload of the witness");
    j.t_h = now_ns();
    j.t.upload_ns += j.t_h - p.t_start;
    cuda_check(cudaStreamWaitEvent(p.zs, ln.ev_rest.get(), 0), "cudaStreamWaitEvent");
}

}  // namespace

void front(pass_state &p, pass_job &j) {
    if (j.job.sh && p.L.shape_rows)
        front_shape_rows(p, j);
    else if (j.job.sh && !p.L.compact)
        front_resident_shape(p, j);
    else
        front_host(p, j);

    // H's coefficients before aux, and (unless their MSMs already run) the
    // scalars of A and B gathered by their densities.
    cuda_check(cudaStreamWaitEvent(p.zs, p.ln->ev_rest.get(), 0), "cudaStreamWaitEvent");
    if (p.m > 1 && p.d_hl != p.d_a)
        cuda_check(cudaMemcpyAsync(p.d_hl, p.d_a, (p.m - 1) * sizeof(fr_raw),
                                   cudaMemcpyDeviceToDevice, p.zs),
                   "copy of H");
    if (!j.ab_started)
        gather_ab(p, j, p.zs);
}

}  // namespace cuda_dev
}  // namespace cp
