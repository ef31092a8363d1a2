// Proving keys resident on a device (key_residency.hpp).
#include "device/key_residency.hpp"

#include <memory>
#include <mutex>

namespace cp {
namespace cuda_dev {

srs_sizes srs_layout(const srs &key) {
    srs_sizes s;
    s.h = key.h.size() * sizeof(blst_p1_affine);
    s.l = align256(s.h + key.l.size() * sizeof(blst_p1_affine)) - s.h;
    s.a = align256(key.a.size() * sizeof(blst_p1_affine));
    s.b_g1 = align256(key.b_g1.size() * sizeof(blst_p1_affine));
    s.b_g2 = align256(key.b_g2.size() * sizeof(blst_p2_affine));
    s.total = s.h + s.l + s.a + s.b_g1 + s.b_g2;
    return s;
}

const srs_copy *resident_key(const srs &key, int cuda_id) {
    std::lock_guard<std::mutex> lock(key.copies_mu);
    if ((size_t)cuda_id < key.copies.size() && key.copies[cuda_id]) {
        auto *c = dynamic_cast<const srs_copy *>(key.copies[cuda_id].get());
        if (!c)
            fail(CP_ERR_INTERNAL, "proving key slot " + std::to_string(cuda_id) +
                                      " holds a copy of another backend");
        return c;
    }
    return nullptr;
}

const srs_copy &ensure_key(const srs &key, int cuda_id, const memory_budget &budget,
                           size_t extra_needed, cudaStream_t stream, cp_timings &t,
                           std::atomic<uint64_t> &uploads) {
    if (const srs_copy *c = resident_key(key, cuda_id))
        return *c;
    const srs_sizes sz = srs_layout(key);
    const size_t free_b = budget.free_bytes();
    if (sz.total + extra_needed > free_b)
        budget.oom(sz.total + extra_needed, free_b);

    const uint64_t t0 = now_ns();
    auto copy = std::make_unique<srs_copy>();
    if (sz.total) {
        const cudaError_t e = copy->buf.allocate(cuda_id, sz.total);
        if (e == cudaErrorMemoryAllocation)
            budget.oom(sz.total + extra_needed, budget.free_bytes());
        cuda_check(e, "cudaMalloc(proving key)");
    }
    char *at = copy->buf.bytes_ptr();
    auto put = [&](const void *src, size_t bytes, size_t slot) -> const void * {
        const void *dst = at;
        if (bytes)
            cuda_check(cudaMemcpyAsync(at, src, bytes, cudaMemcpyHostToDevice, stream),
                       "upload of the proving key");
        at += slot;
        return dst;
    };
    copy->h = put(key.h.data(), key.h.size() * sizeof(blst_p1_affine), sz.h);
    copy->l = put(key.l.data(), key.l.size() * sizeof(blst_p1_affine), sz.l);
    copy->a = put(key.a.data(), key.a.size() * sizeof(blst_p1_affine), sz.a);
    copy->b_g1 = put(key.b_g1.data(), key.b_g1.size() * sizeof(blst_p1_affine), sz.b_g1);
    copy->b_g2 = put(key.b_g2.data(), key.b_g2.size() * sizeof(blst_p2_affine), sz.b_g2);
    cuda_check(cudaStreamSynchronize(stream), "upload of the proving key");
    t.upload_ns += now_ns() - t0;

    std::lock_guard<std::mutex> lock(key.copies_mu);
    if (key.copies.size() <= (size_t)cuda_id)
        key.copies.resize(cuda_id + 1);
    if (!key.copies[cuda_id]) {
        key.copies[cuda_id] = std::move(copy);
        uploads++;
    }
    auto *c = dynamic_cast<const srs_copy *>(key.copies[cuda_id].get());
    if (!c)
        fail(CP_ERR_INTERNAL, "proving key slot holds a copy of another backend");
    return *c;
}

}  // namespace cuda_dev
}  // namespace cp
