// The sums of a resident key's Groth16 pass (groth16_pass_state.hpp) read
// (finish_msms): by the pass, or by the tail an overlapped pass returns,
// which holds its lane until then; and the memory a pass measured, recorded
// when its MSMs are done.
#include "device/groth16_pass_state.hpp"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <utility>

namespace cp {
namespace cuda_dev {

using namespace cp_cuda;

// The sums of a resident key's four MSMs (started on `msm`) into out, and
// their times.
void finish_msms(cp_cuda::msm_context &msm, const msm_job *jobs, device_partials &out,
                 cp_timings &t) {
    uint64_t msm_ns[4] = {};
    msm.finish(jobs + 1, 3, msm_ns + 1);
    msm.finish(jobs, 1, msm_ns);
    g1_proj_raw r1;
    g2_proj_raw r2;
    msm.read(0, r1);
    std::memcpy(&out.h, &r1, sizeof(r1));
    std::memset(&out.l, 0, sizeof(out.l));  // infinity (Z = 0)
    msm.read(1, r1);
    std::memcpy(&out.a, &r1, sizeof(r1));
    msm.read(2, r1);
    std::memcpy(&out.b_g1, &r1, sizeof(r1));
    msm.read(3, r2);
    std::memcpy(&out.b_g2, &r2, sizeof(r2));
    t.msm_h_ns += msm_ns[0];
    t.msm_a_ns += msm_ns[1];
    t.msm_b_g1_ns += msm_ns[2];
    t.msm_b_g2_ns += msm_ns[3];
    t.stream_chunks = 0;
    t.stream_buffer_bytes = 0;
    t.stream_shared = 0;
}

namespace {

// The tail of an overlapped pass: its MSMs run on its lane's streams, the
// lane held until their sums are read.
class lane_tail final : public device_tail {
public:
    lane_tail(std::unique_lock<std::mutex> lane, cp_cuda::msm_context &msm, const msm_job *jobs,
              device_partials &out, cp_timings &t, const peak_probe &probe)
        : lane_(std::move(lane)), msm_(msm), out_(out), t_(t), probe_(probe) {
        std::copy(jobs, jobs + key_arrays, jobs_);
    }
    ~lane_tail() override {
        if (!done_)
            msm_.drain();  // its buffers are reused once the lane is let go
    }
    void finish() override {
        finish_msms(msm_, jobs_, out_, t_);
        done_ = true;
        probe_.record(t_);
        lane_.unlock();
    }

private:
    std::unique_lock<std::mutex> lane_;
    cp_cuda::msm_context &msm_;
    msm_job jobs_[key_arrays];
    device_partials &out_;
    cp_timings &t_;
    peak_probe probe_;
    bool done_ = false;
};

}  // namespace

// The tail of an overlapped pass; it takes the lane's lock from `lane`.
std::unique_ptr<device_tail> lane_tail_of(std::unique_lock<std::mutex> &lane,
                                          cp_cuda::msm_context &msm, const msm_job *jobs,
                                          device_partials &out, cp_timings &t,
                                          const peak_probe &probe) {
    return std::unique_ptr<device_tail>(new lane_tail(std::move(lane), msm, jobs, out, t, probe));
}

// What the device holds with the key's copy (`key_bytes`) and what this
// proof was estimated to need, recorded when its MSMs are done.
peak_probe probe_of(const pass_state &p, uint64_t key_bytes) {
    const device_state &d = p.d;
    peak_probe probe;
    probe.pool = p.pool;
    probe.held = key_bytes + d.caches_bytes() + d.shape.bytes();
    probe.estimated = key_bytes + p.L.total + p.temp + (p.job0.sh ? d.shape.bytes() : 0) +
                      d.library_bytes.load();
    return probe;
}

}  // namespace cuda_dev
}  // namespace cp
