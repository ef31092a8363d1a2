// The end of a Groth16 pass (groth16_pass_state.hpp) once a job's front is
// done. With a resident key: H + L started, the sums read here or by the
// tail an overlapped pass returns, the tables its MSMs asked for built and
// lane 1 opened. With a streamed key: each job's scalars kept out of the
// cache the next one reuses, then every job's MSMs summed chunk by chunk.
#include "device/groth16_pass_state.hpp"

#include <cstring>
#include <mutex>
#include <utility>
#include <vector>

#include "device/lanes.hpp"

namespace cp {
namespace cuda_dev {

using namespace cp_cuda;

// A resident key's job (the pass's only one) once its front is done: H + L
// started; its tail returned when the pass overlaps the next one and no
// table is to be built, else its sums read here, the tables built and,
// with every lane held, lane 1 opened.
std::unique_ptr<device_tail> finish_resident(pass_state &p, pass_job &j) {
    device_state &d = p.d;
    pass_lane &ln = *p.ln;
    const cache_layout &L = p.L;
    const key_copy *dk = p.dk;
    cp_timings &t = j.t;
    // h + l (one MSM over the adjacent H and L points) once H is
    // ready, next to a, b_g1 and b_g2; the times are each MSM's own on
    // its stream, so they overlap.
    cuda_check(cudaEventRecord(ln.ev_h.get(), p.zs), "cudaEventRecord");
    ln.msm->start(j.jobs, 1, ln.ev_h.get());
    const uint64_t t0 = now_ns();
    t.ntt_ns += t0 - j.t_h;
    // Tables for the arrays whose scalars would have used one, for the
    // next proofs (below): known once the MSMs started.
    bool to_build = false;
    for (int k = 0; k < key_arrays; k++)
        to_build = to_build ||
                   (ln.msm->wants_table((size_t)k) && may_build_table(*dk, key_array(k)));
    if (p.overlap && !to_build) {
        std::unique_ptr<device_tail> tail =
            lane_tail_of(p.lane_lock, *ln.msm, j.jobs, j.out, t, probe_of(p, dk->bytes()));
        j.guard.m = nullptr;  // the tail drains the lane if it is not finished
        return tail;
    }
    finish_msms(*ln.msm, j.jobs, j.out, t);
    j.guard.m = nullptr;
    // The tables are built in half of what the device may still use
    // (under the limit and on the card) less the MSM slots' room for
    // table runs: tables stay until the key is freed, and other keys
    // and work need the rest. The other lane's pass, if any, is waited
    // for first. The card's free memory (a driver call, cudaMemGetInfo)
    // is asked only when a table may be built.
    if (to_build) {
        std::vector<std::unique_lock<std::mutex>> others;
        if (p.overlap)
            for (auto &l : d.lanes)
                if (&l != &ln)
                    others.emplace_back(l.mu);
        const uint64_t held = dk->bytes() + d.lanes_bytes() + d.shape.bytes();
        const uint64_t usable = p.budget.usable(held);
        const uint64_t half = usable > held ? (usable - held) / 2 : 0;
        const uint64_t slots_room = temp_bytes(L, d.props.multiProcessorCount, true);
        uint64_t room = half > slots_room ? half - slots_room : 0;
        uint64_t built = 0;
        for (int k = 0; k < key_arrays; k++)
            if (ln.msm->wants_table((size_t)k)) {
                const uint64_t b =
                    build_key_table(*dk, key_array(k), d.cuda_id, room, d.stream(), t);
                room -= b;
                built += b;
            }
        // The MSM buffers for table runs (counted in slots_room), now,
        // so the next proof does not pay for them (5-7 ms at C2's size).
        // This proof is done: if they cannot be made here, the next
        // pass's place makes them (or fails with its own error).
        if (built) {
            try {
                ln.ensure_msm(d.gpu(), msm_slots(L, true));
            } catch (...) {
            }
        }
    }
    if (!p.overlap)
        open_second_lane(d, p.budget, *dk, L);
    probe_of(p, dk->bytes()).record(t);
    return nullptr;
}

// A streamed key's job once its front is done: its scalars kept for the
// sums of sum_streamed, the front waited for.
void keep_scalars(pass_state &p, pass_job &j) {
    const cache_layout &L = p.L;
    // The scalars out of the cache the next job reuses.
    const job_scalars &sc = p.scalars[j.i];
    if (sc.hl != p.d_hl) {
        const std::pair<fr_raw *, const fr_raw *> parts[3] = {
            {sc.hl, p.d_hl}, {sc.sa, p.d_sa}, {sc.sb, p.d_sb}};
        const size_t lens[3] = {L.n_hl, L.n_a, L.n_b};
        for (int k = 0; k < 3; k++)
            if (lens[k])
                cuda_check(cudaMemcpyAsync(parts[k].first, parts[k].second,
                                           lens[k] * sizeof(fr_raw), cudaMemcpyDeviceToDevice,
                                           p.zs),
                           "copy of a shared pass's scalars");
    }
    gpu_sync_default(*p.gpu);
    const uint64_t t0 = now_ns();
    j.t.ntt_ns += t0 - j.t_h;
    p.live.push_back(j.i);
    trace_memory(p.d, "front done");
}

// The MSMs with the bases streamed from the host key, each chunk summed
// for every job; each MSM's time includes the uploads it waited for,
// split evenly among the jobs.
void sum_streamed(pass_state &p) {
    device_state &d = p.d;
    if (p.live.empty())
        return;
    if (!p.streamed)
        start_stream(p, p.live);
    uint64_t chunks = 0;
    p.streamed->run(*p.ln->msm, chunks, d.streamer.cost);
    d.streamer.cost.key = &p.key;
    trace_memory(d, "summed");
    for (size_t i : p.live) {
        cp_timings &t = *p.ts[i];
        std::memset(&p.outs[i]->l, 0, sizeof(p.outs[i]->l));  // infinity (Z = 0): L is in H's MSM
        t.stream_chunks = chunks;
        t.stream_buffer_bytes = p.kp.plan.buffer_bytes;
        t.stream_shared = p.live.size();
        t.phased = p.L.shape_rows ? 2 : p.L.compact ? 1 : 0;
        probe_of(p, d.streamer.held()).record(t);
    }
}

}  // namespace cuda_dev
}  // namespace cp
