// A proof's MSMs as jobs (part of msm.cu, included by it alone): start
// classifies every job, lets table runs join the crowd in flight and
// hands a table run the digits an earlier job sorted; finish waits for
// them and reads their device times; drain forgets what an error left.
#pragma once

#include "msm_context_launch.cuh"
#include "msm_context_slots.cuh"
#include "msm_context_tables.cuh"

namespace cp_cuda {

void msm_context::run(const msm_job *jobs, size_t njobs, cudaEvent_t ready, uint64_t *gpu_ns) {
    start(jobs, njobs, ready);
    finish(jobs, njobs, gpu_ns);
}

void msm_context::start(const msm_job *jobs, size_t njobs, cudaEvent_t ready) {
    using msm_detail::cuda_ok;
    // Each job on its slot's stream: the classifications first, all of them
    // in flight before the first count is read back.
    for (size_t i = 0; i < njobs; i++) {
        auto &sl = p_->at(jobs[i].slot);
        if (ready)
            cuda_ok(cudaStreamWaitEvent(sl.stream, ready, 0), "cudaStreamWaitEvent");
        cuda_ok(cudaEventRecord(sl.start, sl.stream), "cudaEventRecord");
        p_->classify(jobs[i].slot, sl.stream, jobs[i].d_points, jobs[i].d_scalars, jobs[i].n,
                     jobs[i].table_wbits == 0, jobs[i].table_wbits ? 0 : jobs[i].dense);
    }
    // The table runs among the jobs join those still in flight (a proof's
    // pass starts A and B, then H + L beside them): an engine chooses its
    // accumulation by the crowd it runs in (msm_engine::affine).
    for (size_t i = 0; i < njobs; i++) {
        auto &sl = p_->at(jobs[i].slot);
        cuda_ok(cudaStreamSynchronize(sl.stream), "MSM classification");
        if (jobs[i].table_wbits && !sl.in_crowd &&
            table_pays(true, jobs[i].n, p_->pinned[jobs[i].slot].counts)) {
            sl.in_crowd = true;
            p_->tables_in_flight++;
        }
    }
    for (size_t i = 0; i < njobs; i++) {
        auto &sl = p_->at(jobs[i].slot);
        if (sl.e2)
            sl.e2->crowd(p_->tables_in_flight);
        else
            sl.e1->crowd(p_->tables_in_flight);
    }
    // A table run over the same scalars, count and width as an earlier
    // job's table run (B in G1 and in G2) takes that job's sorted digits.
    for (size_t i = 0; i < njobs; i++) {
        auto &sl = p_->at(jobs[i].slot);
        impl::slot_t *donor = nullptr;
        for (size_t k = 0; k < i && jobs[i].table_wbits && !donor; k++) {
            auto &dk = p_->at(jobs[k].slot);
            if (dk.table_run && jobs[k].d_scalars == jobs[i].d_scalars &&
                jobs[k].n == jobs[i].n && jobs[k].table_wbits == jobs[i].table_wbits &&
                jobs[k].slot != jobs[i].slot)
                donor = &dk;
        }
        p_->launch(jobs[i].slot, sl.stream, jobs[i].d_points, jobs[i].d_scalars, jobs[i].n,
                   true, jobs[i].table_wbits, donor, jobs[i].gate);
        cuda_ok(cudaEventRecord(sl.stop, sl.stream), "cudaEventRecord");
    }
}

void msm_context::finish(const msm_job *jobs, size_t njobs, uint64_t *gpu_ns) {
    using msm_detail::cuda_ok;
    for (size_t i = 0; i < njobs; i++) {
        auto &sl = p_->at(jobs[i].slot);
        if (sl.in_crowd) {
            sl.in_crowd = false;
            p_->tables_in_flight--;
        }
        cuda_ok(cudaStreamSynchronize(sl.stream), "MSM");
        if (gpu_ns) {
            float ms = 0;
            cuda_ok(cudaEventElapsedTime(&ms, sl.start, sl.stop), "cudaEventElapsedTime");
            gpu_ns[i] = (uint64_t)(ms * 1e6);
        }
    }
}

void msm_context::drain() noexcept {
    for (auto &sl : p_->slots) {
        (void)cudaStreamSynchronize(sl.stream);
        sl.in_crowd = false;
    }
    p_->tables_in_flight = 0;
    (void)cudaGetLastError();
}

}  // namespace cp_cuda
