// Proving keys resident on a device (key_residency.hpp).
#include "device/key_residency.hpp"

#include <memory>
#include <mutex>

#include "gpu_ops.hpp"

namespace cp {
namespace cuda_dev {

namespace {

// Fewer bases than this get no table: their MSMs are short either way.
constexpr size_t TABLE_MIN_BASES = 1024;

// The width of a table of n bases, 0 for none; rows: its row count.
uint32_t table_wbits(bool tables, size_t n, size_t &rows) {
    rows = 1;
    if (!tables || n < TABLE_MIN_BASES)
        return 0;
    const uint32_t w = cp_cuda::msm_table_window_bits(n);
    rows = cp_cuda::msm_table_windows(w);
    return w;
}

}  // namespace

srs_sizes srs_layout(const srs &key, bool tables) {
    srs_sizes s;
    size_t rows;
    const size_t g1 = sizeof(blst_p1_affine), g2 = sizeof(blst_p2_affine);
    const size_t n_hl = key.h.size() + key.l.size();
    s.hl_wbits = table_wbits(tables, n_hl, rows);
    s.h = key.h.size() * g1;
    s.l = align256(rows * n_hl * g1) - s.h;
    s.a_wbits = table_wbits(tables, key.a.size(), rows);
    s.a = align256(rows * key.a.size() * g1);
    s.b_wbits = table_wbits(tables, key.b_g1.size(), rows);
    s.b_g1 = align256(rows * key.b_g1.size() * g1);
    s.b_g2 = align256(rows * key.b_g2.size() * g2);
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
                           size_t extra_needed, bool tables, size_t extra_tables,
                           cudaStream_t stream, cp_timings &t, std::atomic<uint64_t> &uploads) {
    if (const srs_copy *c = resident_key(key, cuda_id))
        return *c;
    srs_sizes sz = srs_layout(key, tables);
    const size_t free_b = budget.free_bytes();
    if (tables && sz.total + extra_needed + extra_tables > free_b) {
        tables = false;
        sz = srs_layout(key, false);
    }
    if (sz.total + extra_needed > free_b)
        budget.oom(sz.total + extra_needed, free_b);

    const uint64_t t0 = now_ns();
    auto copy = std::make_unique<srs_copy>();
    if (sz.total) {
        cudaError_t e = copy->buf.allocate(cuda_id, sz.total);
        if (e == cudaErrorMemoryAllocation && tables) {
            // Another allocation took the room the budget saw: no tables.
            (void)cudaGetLastError();
            tables = false;
            sz = srs_layout(key, false);
            e = copy->buf.allocate(cuda_id, sz.total);
        }
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
    // The tables' other rows, from their first.
    auto build = [&](const void *at, cp_cuda::msm_group g, size_t n, uint32_t w) {
        if (w)
            cp_cuda::msm_build_table(stream, g, const_cast<void *>(at), n, w);
    };
    using cp_cuda::msm_group;
    // A failure throws sppark's cuda_error, which the device's entry
    // points turn into cp errors.
    build(copy->h, msm_group::g1, key.h.size() + key.l.size(), sz.hl_wbits);
    build(copy->a, msm_group::g1, key.a.size(), sz.a_wbits);
    build(copy->b_g1, msm_group::g1, key.b_g1.size(), sz.b_wbits);
    build(copy->b_g2, msm_group::g2, key.b_g2.size(), sz.b_wbits);
    copy->hl_wbits = sz.hl_wbits;
    copy->a_wbits = sz.a_wbits;
    copy->b_wbits = sz.b_wbits;
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
