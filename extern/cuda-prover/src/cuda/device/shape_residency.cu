// Resident circuit shapes (shape_residency.hpp).
#include "device/shape_residency.hpp"

#include <vector>

namespace cp {
namespace cuda_dev {

using cp_cuda::fr_raw;
using cp_cuda::shape_entry_raw;

namespace {

shape_sizes shape_layout(const shape &sh) {
    shape_sizes z;
    z.row_ptr = align256((sh.num_constraints + 1) * sizeof(uint64_t));
    const shape_matrix *ms[3] = {&sh.a, &sh.b, &sh.c};
    z.total = 3 * z.row_ptr;
    for (int i = 0; i < 3; i++) {
        z.entries[i] = align256(ms[i]->entries.size() * sizeof(shape_entry_raw));
        z.total += z.entries[i];
    }
    const size_t words = 2 * ((sh.num_aux + 63) / 64) + (sh.num_inputs + 63) / 64;
    z.coeffs = align256(sh.coeffs.size() * sizeof(fr_raw));
    z.bits = align256(words * sizeof(uint64_t));
    z.pre = align256(words * sizeof(uint32_t));
    z.total += z.coeffs + z.bits + z.pre;
    return z;
}

}  // namespace

void word_prefix(uint32_t *pre, const uint64_t *bits, size_t n) {
    const size_t words = (n + 63) / 64;
    uint64_t acc = 0;
    for (size_t w = 0; w < words; w++) {
        pre[w] = (uint32_t)acc;
        acc += (uint64_t)__builtin_popcountll(bits[w]);
    }
}

void shape_copy::clear() {
    buf.reset();
    id = 0;
    for (int i = 0; i < 3; i++) {
        row_ptr[i] = nullptr;
        entries[i] = nullptr;
    }
    coeffs = nullptr;
    bits = nullptr;
    pre = nullptr;
}

size_t shape_copy::need(const shape *sh) const {
    return sh && id != sh->id ? shape_layout(*sh).total : 0;
}

void shape_copy::ensure(const shape &sh, int cuda_id, const memory_budget &budget,
                        size_t extra_needed, cudaStream_t zs) {
    if (id == sh.id)
        return;
    clear();
    const shape_sizes z = shape_layout(sh);
    const size_t free_b = budget.free_bytes();
    if (z.total + extra_needed > free_b)
        budget.oom(z.total + extra_needed, free_b);
    device_buffer b;
    const cudaError_t e = b.allocate(cuda_id, z.total);
    if (e == cudaErrorMemoryAllocation)
        budget.oom(z.total + extra_needed, budget.free_bytes());
    cuda_check(e, "cudaMalloc(shape)");
    try {
        place(sh, b, z, zs);
    } catch (...) {
        clear();
        throw;
    }
    buf = std::move(b);
    id = sh.id;
}

void shape_copy::place(const shape &sh, device_buffer &b, const shape_sizes &z,
                       cudaStream_t zs) {
    char *at = b.bytes_ptr();
    const shape_matrix *ms[3] = {&sh.a, &sh.b, &sh.c};
    auto put = [&](const void *src, size_t bytes, size_t slot) {
        char *dst = at;
        if (bytes)
            cuda_check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, zs),
                       "upload of the shape");
        at += slot;
        return dst;
    };
    for (int i = 0; i < 3; i++)
        row_ptr[i] = (const uint64_t *)put(ms[i]->row_ptr.data(),
                                           ms[i]->row_ptr.size() * sizeof(uint64_t), z.row_ptr);
    for (int i = 0; i < 3; i++)
        entries[i] = (const shape_entry_raw *)put(
            ms[i]->entries.data(), ms[i]->entries.size() * sizeof(shape_entry_raw), z.entries[i]);
    coeffs = (const fr_raw *)put(sh.coeffs.data(), sh.coeffs.size() * sizeof(fr_raw), z.coeffs);
    const size_t w_in = (sh.num_inputs + 63) / 64, w_aux = (sh.num_aux + 63) / 64;
    std::vector<uint64_t> host_bits;
    host_bits.reserve(2 * w_aux + w_in);
    host_bits.insert(host_bits.end(), sh.a_aux_density.begin(), sh.a_aux_density.end());
    host_bits.insert(host_bits.end(), sh.b_input_density.begin(), sh.b_input_density.end());
    host_bits.insert(host_bits.end(), sh.b_aux_density.begin(), sh.b_aux_density.end());
    std::vector<uint32_t> host_pre(host_bits.size());
    word_prefix(host_pre.data(), sh.a_aux_density.data(), sh.num_aux);
    word_prefix(host_pre.data() + w_aux, sh.b_input_density.data(), sh.num_inputs);
    word_prefix(host_pre.data() + w_aux + w_in, sh.b_aux_density.data(), sh.num_aux);
    bits = (const uint64_t *)put(host_bits.data(), host_bits.size() * sizeof(uint64_t), z.bits);
    pre = (const uint32_t *)put(host_pre.data(), host_pre.size() * sizeof(uint32_t), z.pre);
    cuda_check(cudaStreamSynchronize(zs), "upload of the shape");
}

void shape_copy::evaluate(const gpu_t &gpu, const shape &sh, char *base,
                          const cache_layout &L) const {
    fr_raw *d_a = (fr_raw *)(base + L.abc);
    fr_raw *d_in = (fr_raw *)(base + L.in);
    fr_raw *d_aux = (fr_raw *)(base + L.hl) + (L.m - 1);
    const size_t rows = sh.num_constraints;
    for (int i = 0; i < 3; i++)
        cp_cuda::eval_rows_async(gpu, d_a + i * L.m, row_ptr[i], entries[i], coeffs, d_in,
                                 (uint32_t)sh.num_inputs, d_aux, rows);
    cp_cuda::check_rows_async(gpu, d_a, d_a + L.m, d_a + 2 * L.m, rows,
                              (uint64_t *)(base + L.bad));
}

}  // namespace cuda_dev
}  // namespace cp
