// The setup of a Groth16 pass (groth16_pass_state.hpp): the jobs' shapes
// checked against the key, the lane taken, the key, the shape and the
// lane's working cache placed, the default pool's high-water mark reset,
// and where the cache's parts and each job's MSM scalars lie.
#include "device/groth16_pass_state.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "device/lanes.hpp"

namespace cp {
namespace cuda_dev {

using namespace cp_cuda;

pass_state::pass_state(device_state &d_, const memory_budget &budget_, const proving_key &key_,
                       const circuit_job *const *batch_, size_t n_,
                       device_partials *const *outs_, cp_timings *const *ts_)
    : d(d_), budget(budget_), key(key_), batch(batch_), n(n_), outs(outs_), ts(ts_),
      t_start(now_ns()), job0(*batch_[0]), m(size_t(1) << job0.lg_domain),
      L(layout_for(key_, m)) {}

void check_shapes(const pass_state &p) {
    const cache_layout &L = p.L;
    const proving_key &key = p.key;
    for (size_t i = 0; i < p.n; i++) {
        const circuit_job &job = *p.batch[i];
        if (job.lg_domain != p.job0.lg_domain || job.sh != p.job0.sh || job.num_inputs != L.ni ||
            job.num_aux != L.na || L.ni + job.a_aux_count != L.n_a ||
            job.b_input_count + job.b_aux_count != L.n_b || key.h.size() != p.m - 1 ||
            key.b_g2.size() != L.n_b)
            fail(CP_ERR_INTERNAL, "circuit and proving key shapes disagree");
    }
}

// The lane (state.hpp): in turn with the other when both are ready and
// nothing shared changes (overlap_ready); the pass then returns its
// tail once its MSMs are queued. Otherwise every lane's passes are
// waited for, the pass runs on lane 0 and completes here.
void take_pass_lane(pass_state &p, bool lanes_held) {
    device_state &d = p.d;
    pass_lane *lane = nullptr;
    if (!lanes_held && p.n == 1 && overlap_ready(d, p.budget, p.key, p.L, p.job0.sh))
        lane = &take_lane(d, p.lane_lock);
    p.overlap = lane != nullptr;
    if (!p.overlap) {
        if (!lanes_held)
            p.all_lanes = d.quiesce();
        settle_lanes(d, p.key, p.L);
        lane = &d.lanes[0];
    }
    p.ln = lane;
}

void place_pass(pass_state &p, size_t *served) {
    device_state &d = p.d;
    // A first upload of the key or the shape falls in upload_ns through
    // t_start.
    cp_timings key_t{};
    p.kp = place(d, *p.ln, p.budget, p.key, p.L, p.job0.sh, key_t, p.n);
    const key_place &kp = p.kp;
    p.L = kp.L;
    // A resident key's pass serves one job; a streamed key's those that
    // share it.
    p.count = kp.dk ? 1 : std::min(p.n, kp.shared);
    *served = p.count;
    // CP_TRACE_PASS (diagnostics): where the upload phase's time goes.
    p.trace = std::getenv("CP_TRACE_PASS") != nullptr;
    p.t_placed = now_ns();
    p.dk = kp.dk;
    p.temp = kp.temp;
    trace_memory(d, p.count > 1 ? "placed (shared)" : "placed");
    if (p.trace && !p.dk)
        std::fprintf(stderr,
                     "cp pass trace: streamed plan for %zu: buffer %.1f MiB, temp %.1f MiB, "
                     "total %.1f MiB\n",
                     p.count, kp.plan.buffer_bytes / 1048576.0, kp.plan.temp_bytes / 1048576.0,
                     kp.plan.total_bytes / 1048576.0);
}

// The pool's high-water mark from here on measures sppark's
// temporaries of this device part.
void reset_pool_mark(pass_state &p) {
    cudaMemPool_t pool = nullptr;
    if (cudaDeviceGetDefaultMemPool(&pool, p.d.cuda_id) == cudaSuccess) {
        uint64_t zero = 0;
        if (cudaMemPoolSetAttribute(pool, cudaMemPoolAttrUsedMemHigh, &zero) != cudaSuccess)
            pool = nullptr;
    } else {
        pool = nullptr;
    }
    (void)cudaGetLastError();
    p.pool = pool;
}

void lay_out_cache(pass_state &p) {
    device_state &d = p.d;
    const cache_layout &L = p.L;
    const size_t m = p.m;
    p.gpu = &d.gpu();
    p.copy = d.staging.stream();
    char *base = p.base = p.ln->cache.buf.bytes_ptr();
    p.d_a = (fr_raw *)(base + L.abc);
    p.d_b = p.d_a + m;
    p.d_c = p.d_b + m;
    p.d_hl = (fr_raw *)(base + L.hl);
    p.d_aux = p.d_hl + (m - 1);
    p.d_in = (fr_raw *)(base + L.in);
    p.d_sa = (fr_raw *)(base + L.sa);
    p.d_sb = (fr_raw *)(base + L.sb);
    p.zs = d.stream();

    // Where each job's MSM scalars wait in a shared pass: the last job's
    // stay in the working cache, the others' are copied to the stream's
    // scalar sets (H + L's, A's, B's) before the next job reuses the cache.
    p.scalars.resize(p.count);
    for (size_t i = 0; i < p.count; i++) {
        if (i + 1 < p.count) {
            fr_raw *set = (fr_raw *)d.streamer.sets() + i * (L.n_hl + L.n_a + L.n_b);
            p.scalars[i] = {set, set + L.n_hl, set + L.n_hl + L.n_a};
        } else {
            p.scalars[i] = {p.d_hl, p.d_sa, p.d_sb};
        }
    }
}

}  // namespace cuda_dev
}  // namespace cp
