// Streamed proving keys (key_streaming.hpp).
#include "device/key_streaming.hpp"

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
    for (cuda_event &e : up_) e.create();
}

void key_stream::release() {
    for (cuda_event &e : up_) e.reset();
    for (device_buffer &b : buf_) b.reset();
}

template <class Proj, class Msm, class Add>
void key_stream::run(const gpu_t &gpu, int cuda_id, stager &staging, const host_bases &bases,
                     const fr_raw *d_scalars, size_t per, Proj &out, uint64_t &chunks, Msm msm,
                     Add add) {
    const size_t total = bases.total();
    std::memset(&out, 0, sizeof out);  // the identity (Z = 0)
    if (total == 0) {
        msm(out, buf_[0].get(), d_scalars, 0);
        chunks += 1;
        return;
    }
    const size_t nchunks = (total + per - 1) / per;
    auto count = [&](size_t k) { return std::min(per, total - k * per); };
    // Queues the copy of chunk k into buffer k % 2 on the copy stream.
    auto upload = [&](size_t k) {
        size_t first = k * per, left = count(k), at = 0;
        char *dst = buf_[k % 2].bytes_ptr();
        for (int r = 0; r < 2 && left; r++) {
            if (first >= at + bases.n[r]) {
                at += bases.n[r];
                continue;
            }
            const size_t from = first - at, len = std::min(left, bases.n[r] - from);
            staging.stage(gpu, dst, (const char *)bases.run[r] + from * bases.point_bytes,
                          len * bases.point_bytes);
            dst += len * bases.point_bytes;
            first += len;
            left -= len;
            at += bases.n[r];
        }
        cuda_check(cudaEventRecord(up_[k % 2].get(), staging.stream()), "cudaEventRecord");
    };
    upload(0);
    for (size_t k = 0; k < nchunks; k++) {
        // Chunk k + 1 goes up from a helper thread while chunk k is summed;
        // buffer (k + 1) % 2 is free: the MSM of chunk k - 1 returned.
        std::exception_ptr failed;
        std::thread next;
        if (k + 1 < nchunks) {
            next = std::thread([&, k] {
                try {
                    cp_cuda::set_device(cuda_id);
                    upload(k + 1);
                } catch (...) {
                    failed = std::current_exception();
                }
            });
        }
        try {
            cuda_check(cudaEventSynchronize(up_[k % 2].get()), "upload of a key chunk");
            Proj part;
            msm(part, buf_[k % 2].get(), d_scalars + k * per, count(k));
            add(out, part);
        } catch (...) {
            if (next.joinable())
                next.join();
            throw;
        }
        if (next.joinable())
            next.join();
        if (failed)
            std::rethrow_exception(failed);
    }
    chunks += nchunks;
}

namespace {

// One chunk's MSM through `slot` of `msm`, as the chunk loop calls it.
template <class Raw, class Proj>
auto slot_msm(msm_context &msm, size_t slot) {
    return [&msm, slot](Proj &r, const void *pts, const fr_raw *sc, size_t n) {
        const msm_job job{slot, pts, sc, n};
        msm.run(&job, 1, nullptr, nullptr);
        Raw raw;
        msm.read(slot, raw);
        std::memcpy(&r, &raw, sizeof r);
    };
}

}  // namespace

void key_stream::msm_g1(msm_context &msm, size_t slot, int cuda_id, stager &staging,
                        const host_bases &bases, const fr_raw *d_scalars, size_t per_chunk,
                        blst_p1 &out, uint64_t &chunks) {
    run(gpu_of(cuda_id), cuda_id, staging, bases, d_scalars, per_chunk, out, chunks,
        slot_msm<g1_proj_raw, blst_p1>(msm, slot),
        [](blst_p1 &acc, const blst_p1 &x) { blst_p1_add_or_double(&acc, &acc, &x); });
}

void key_stream::msm_g2(msm_context &msm, size_t slot, int cuda_id, stager &staging,
                        const host_bases &bases, const fr_raw *d_scalars, size_t per_chunk,
                        blst_p2 &out, uint64_t &chunks) {
    run(gpu_of(cuda_id), cuda_id, staging, bases, d_scalars, per_chunk, out, chunks,
        slot_msm<g2_proj_raw, blst_p2>(msm, slot),
        [](blst_p2 &acc, const blst_p2 &x) { blst_p2_add_or_double(&acc, &acc, &x); });
}

}  // namespace cuda_dev
}  // namespace cp
