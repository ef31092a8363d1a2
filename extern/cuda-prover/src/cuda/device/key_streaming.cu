// Streamed proving keys (key_streaming.hpp).
#include "device/key_streaming.hpp"

#include "device/errors.hpp"
#include "registry.hpp"

#include <algorithm>
#include <cstring>
#include <exception>
#include <thread>

namespace cp {
namespace cuda_dev {

using namespace cp_cuda;

void key_stream::ensure(int cuda_id, const memory_budget &budget, size_t bytes,
                        size_t extra_needed) {
    if (buf_[0].size() != bytes || !buf_[0] || !buf_[1]) {
        const size_t held_now = held();
        release();
        const size_t free_b = budget.free_bytes();
        if (2 * bytes + extra_needed > free_b)
            budget.oom(2 * bytes + extra_needed, free_b + held_now);
        for (device_buffer &b : buf_) {
            const cudaError_t e = b.allocate(cuda_id, bytes);
            if (e == cudaErrorMemoryAllocation) {
                release();
                budget.oom(2 * bytes + extra_needed, budget.free_bytes());
            }
            cuda_check(e, "cudaMalloc(key chunk buffer)");
        }
    }
    for (cuda_event &e : up_) e.create_timed();
    for (cuda_event &e : from_) e.create_timed();
}

void key_stream::ensure_sets(int cuda_id, const memory_budget &budget, size_t bytes,
                             size_t extra_needed) {
    if (sets_.size() == bytes && (bytes == 0 || sets_))
        return;
    const size_t held_now = sets_.size();
    sets_.reset();
    if (bytes == 0)
        return;
    const size_t free_b = budget.free_bytes();
    if (bytes + extra_needed > free_b)
        budget.oom(bytes + extra_needed, free_b + held_now);
    const cudaError_t e = sets_.allocate(cuda_id, bytes);
    if (e == cudaErrorMemoryAllocation)
        budget.oom(bytes + extra_needed, budget.free_bytes());
    cuda_check(e, "cudaMalloc(scalars of a shared pass)");
}

void key_stream::release() {
    for (cuda_event &e : up_) e.reset();
    for (cuda_event &e : from_) e.reset();
    for (device_buffer &b : buf_) b.reset();
    sets_.reset();
}

streamed_msms::streamed_msms(key_stream &ks, int cuda_id, stager &staging,
                             std::vector<stream_msm> msms, size_t g1_per, size_t g2_per)
    : ks_(ks), cuda_id_(cuda_id), staging_(staging), msms_(std::move(msms)) {
    std::vector<stream_extent> extents;
    for (stream_msm &s : msms_) {
        const bool g2 = s.group == msm_group::g2;
        for (const stream_sum &sum : s.sums)
            std::memset(sum.out, 0, g2 ? sizeof(blst_p2) : sizeof(blst_p1));  // Z = 0
        extents.push_back({s.bases.total(), g2 ? g2_per : g1_per});
    }
    seq_ = stream_sequence(extents);
    if (!seq_.empty())
        start_upload(0);
}

streamed_msms::~streamed_msms() {
    if (next_.joinable())
        next_.join();
}

void streamed_msms::upload(size_t k) {
    const stream_chunk &c = seq_[k];
    const host_bases &bases = msms_[c.msm].bases;
    const gpu_t &gpu = gpu_of(cuda_id_);
    size_t first = c.first, left = c.count, at = 0;
    char *dst = ks_.buf_[k % 2].bytes_ptr();
    cuda_check(cudaEventRecord(ks_.from_[k % 2].get(), staging_.stream()), "cudaEventRecord");
    for (int r = 0; r < 2 && left; r++) {
        if (first >= at + bases.n[r]) {
            at += bases.n[r];
            continue;
        }
        const size_t from = first - at, len = std::min(left, bases.n[r] - from);
        staging_.stage(gpu, dst, (const char *)bases.run[r] + from * bases.point_bytes,
                       len * bases.point_bytes);
        dst += len * bases.point_bytes;
        first += len;
        left -= len;
        at += bases.n[r];
    }
    cuda_check(cudaEventRecord(ks_.up_[k % 2].get(), staging_.stream()), "cudaEventRecord");
}

void streamed_msms::start_upload(size_t k) {
    next_ = std::thread([this, k] {
        try {
            cp_cuda::set_device(cuda_id_);
            upload(k);
        } catch (...) {
            failed_ = std::current_exception();
        }
    });
}

void streamed_msms::join_upload() {
    if (next_.joinable())
        next_.join();
    if (failed_) {
        std::exception_ptr e = failed_;
        failed_ = nullptr;
        std::rethrow_exception(e);
    }
}

namespace {

void add_to(blst_p1 &acc, const blst_p1 &x) { blst_p1_add_or_double(&acc, &acc, &x); }
void add_to(blst_p2 &acc, const blst_p2 &x) { blst_p2_add_or_double(&acc, &acc, &x); }

// One chunk's sum through `slot` of `msm`, added to acc.
template <class Raw, class Proj>
void sum_chunk(msm_context &msm, size_t slot, const void *pts, const fr_raw *sc, size_t n,
               Proj &acc) {
    const msm_job job{slot, pts, sc, n};
    msm.run(&job, 1, nullptr, nullptr);
    Raw raw;
    msm.read(slot, raw);
    Proj part;
    std::memcpy(&part, &raw, sizeof part);
    add_to(acc, part);
}

}  // namespace

void streamed_msms::run(msm_context &msm, uint64_t &chunks, stream_cost &cost) {
    uint64_t t = now_ns();
    uint64_t copy_ns = 0, sum_ns = 0;
    for (size_t k = 0; k < seq_.size(); k++) {
        // Chunk k was staged by the helper; chunk k + 1 goes up into the
        // other buffer (free: the sum of chunk k - 1 was read) while chunk
        // k's copy ends and its sum runs.
        join_upload();
        if (k + 1 < seq_.size())
            start_upload(k + 1);
        cuda_check(cudaEventSynchronize(ks_.up_[k % 2].get()), "upload of a key chunk");
        float copy_ms = 0;
        if (cudaEventElapsedTime(&copy_ms, ks_.from_[k % 2].get(), ks_.up_[k % 2].get()) ==
            cudaSuccess)
            copy_ns += (uint64_t)(copy_ms * 1e6);
        (void)cudaGetLastError();
        const uint64_t t_sum = now_ns();
        const stream_chunk &c = seq_[k];
        const stream_msm &s = msms_[c.msm];
        const void *pts = ks_.buf_[k % 2].get();
        for (const stream_sum &sum : s.sums) {
            const fr_raw *sc = sum.scalars + c.first;
            if (s.group == msm_group::g2)
                sum_chunk<g2_proj_raw>(msm, s.slot, pts, sc, c.count,
                                       *static_cast<blst_p2 *>(sum.out));
            else
                sum_chunk<g1_proj_raw>(msm, s.slot, pts, sc, c.count,
                                       *static_cast<blst_p1 *>(sum.out));
        }
        sum_ns += (now_ns() - t_sum) / std::max<size_t>(1, s.sums.size());
        if (k + 1 == seq_.size() || seq_[k + 1].msm != c.msm) {
            const uint64_t now = now_ns();
            for (const stream_sum &sum : s.sums)
                if (sum.ns)
                    *sum.ns += (now - t) / s.sums.size();
            t = now;
        }
    }
    join_upload();
    chunks += seq_.size();
    cost.copy_ns = copy_ns;
    cost.sum_ns = sum_ns;
}

}  // namespace cuda_dev
}  // namespace cp
