// Proving keys resident on a device (key_residency.hpp).
#include "device/key_residency.hpp"

#include <memory>
#include <mutex>

#include "gpu_ops.hpp"

namespace cp {
namespace cuda_dev {

key_sizes key_layout(const proving_key &key) {
    key_sizes s;
    s.h = key.h.size() * sizeof(blst_p1_affine);
    s.l = align256(s.h + key.l.size() * sizeof(blst_p1_affine)) - s.h;
    s.a = align256(key.a.size() * sizeof(blst_p1_affine));
    s.b_g1 = align256(key.b_g1.size() * sizeof(blst_p1_affine));
    s.b_g2 = align256(key.b_g2.size() * sizeof(blst_p2_affine));
    s.total = s.h + s.l + s.a + s.b_g1 + s.b_g2;
    return s;
}

const key_copy *resident_key(const proving_key &key, int cuda_id) {
    std::lock_guard<std::mutex> lock(key.copies_mu);
    if ((size_t)cuda_id < key.copies.size() && key.copies[cuda_id]) {
        auto *c = dynamic_cast<const key_copy *>(key.copies[cuda_id].get());
        if (!c)
            fail(CP_ERR_INTERNAL, "proving key slot " + std::to_string(cuda_id) +
                                      " holds a copy of another backend");
        return c;
    }
    return nullptr;
}

const key_copy &ensure_key(const proving_key &key, int cuda_id, const memory_budget &budget,
                           size_t extra_needed, cudaStream_t stream, cp_timings &t,
                           std::atomic<uint64_t> &uploads) {
    if (const key_copy *c = resident_key(key, cuda_id))
        return *c;
    const key_sizes sz = key_layout(key);
    const size_t free_b = budget.free_bytes();
    if (sz.total + extra_needed > free_b)
        budget.oom(sz.total + extra_needed, free_b);

    const uint64_t t0 = now_ns();
    auto copy = std::make_unique<key_copy>();
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
    copy->n[key_hl] = key.h.size() + key.l.size();
    copy->n[key_a] = key.a.size();
    copy->n[key_b_g1] = key.b_g1.size();
    copy->n[key_b_g2] = key.b_g2.size();
    cuda_check(cudaStreamSynchronize(stream), "upload of the proving key");
    t.upload_ns += now_ns() - t0;

    std::lock_guard<std::mutex> lock(key.copies_mu);
    if (key.copies.size() <= (size_t)cuda_id)
        key.copies.resize(cuda_id + 1);
    if (!key.copies[cuda_id]) {
        key.copies[cuda_id] = std::move(copy);
        uploads++;
    }
    auto *c = dynamic_cast<const key_copy *>(key.copies[cuda_id].get());
    if (!c)
        fail(CP_ERR_INTERNAL, "proving key slot holds a copy of another backend");
    return *c;
}

bool may_build_table(const key_copy &copy, key_array k) {
    const key_table &tab = copy.tables[k];
    return !tab.tried && !tab.wbits && copy.n[k] >= 1024;
}

uint64_t build_key_table(const key_copy &copy, key_array k, int cuda_id, uint64_t room,
                         cudaStream_t stream, cp_timings &t) {
    key_table &tab = copy.tables[k];
    const size_t n = copy.n[k];
    if (!may_build_table(copy, k))
        return 0;
    tab.tried = true;
    const bool g2 = k == key_b_g2;
    const size_t point = g2 ? sizeof(blst_p2_affine) : sizeof(blst_p1_affine);
    const uint32_t wbits = cp_cuda::msm_table_window_bits(n);
    const size_t bytes = cp_cuda::msm_table_windows(wbits) * n * point;
    if (bytes > room)
        return 0;
    const uint64_t t0 = now_ns();
    if (tab.buf.allocate(cuda_id, bytes) != cudaSuccess)
        return 0;  // another allocation took the room the budget saw
    cuda_check(cudaMemcpyAsync(tab.buf.bytes_ptr(), copy.bases(k), n * point,
                               cudaMemcpyDeviceToDevice, stream),
               "copy of the bases into their table");
    // A failure throws sppark's cuda_error, which the device's entry points
    // turn into cp errors.
    cp_cuda::msm_build_table(stream, g2 ? cp_cuda::msm_group::g2 : cp_cuda::msm_group::g1,
                             tab.buf.bytes_ptr(), n, wbits);
    cuda_check(cudaStreamSynchronize(stream), "table of multiples");
    tab.wbits = wbits;
    copy.table_bytes += bytes;
    t.upload_ns += now_ns() - t0;
    return bytes;
}

}  // namespace cuda_dev
}  // namespace cp
