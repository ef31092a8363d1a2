// R1CS on one GPU: a = A*w, b = B*w, c = C*w from a shape's CSR matrices and
// the witness, and the a*b = c check that finds the first failing row.
#define TAKE_RESPONSIBILITY_FOR_ERROR_MESSAGE

#include <cuda_runtime.h>

#include <ff/bls12-381.hpp>

#include "gpu_ops.hpp"

#include <algorithm>

namespace cp_cuda {
namespace {

// One thread per row. Rows of R1CS circuits are short (a few terms), so the
// imbalance of a row-per-thread split is small against its simplicity.
__global__ void spmv_rows(fr_t *out, const uint64_t *row_ptr, const shape_entry_raw *entries,
                          uint64_t first_entry, const fr_t *coeffs, const fr_t *inputs,
                          uint32_t num_inputs, const fr_t *aux, size_t rows) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < rows;
         i += (size_t)gridDim.x * blockDim.x) {
        fr_t acc;
        acc.zero();
        const uint64_t end = row_ptr[i + 1];
        for (uint64_t j = row_ptr[i]; j < end; j++) {
            const shape_entry_raw e = entries[j - first_entry];
            const fr_t v = e.col < num_inputs ? inputs[e.col] : aux[e.col - num_inputs];
            if (e.coeff == 0)
                acc += v;
            else if (e.coeff == 1)
                acc -= v;
            else
                acc += v * coeffs[e.coeff - 2];
        }
        out[i] = acc;
    }
}

__global__ void first_bad_row(const fr_t *a, const fr_t *b, const fr_t *c, size_t rows,
                              unsigned long long *bad) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < rows;
         i += (size_t)gridDim.x * blockDim.x) {
        fr_t t = a[i] * b[i];
        t -= c[i];
        if (!t.is_zero())
            atomicMin(bad, (unsigned long long)i);
    }
}

unsigned blocks_for(size_t n) { return (unsigned)std::min<size_t>((n + 255) / 256, 8192); }

}  // namespace

void eval_rows_async(const gpu_t &gpu, fr_raw *d_out, const uint64_t *d_row_ptr,
                     const shape_entry_raw *d_entries, const fr_raw *d_coeffs,
                     const fr_raw *d_inputs, uint32_t num_inputs, const fr_raw *d_aux,
                     size_t rows, uint64_t first_entry) {
    if (rows == 0)
        return;
    const cudaStream_t s = gpu;
    spmv_rows<<<blocks_for(rows), 256, 0, s>>>((fr_t *)d_out, d_row_ptr, d_entries, first_entry,
                                               (const fr_t *)d_coeffs, (const fr_t *)d_inputs,
                                               num_inputs, (const fr_t *)d_aux, rows);
    CUDA_OK(cudaGetLastError());
}

void check_rows_async(const gpu_t &gpu, const fr_raw *d_a, const fr_raw *d_b, const fr_raw *d_c,
                      size_t rows, uint64_t *d_bad) {
    const cudaStream_t s = gpu;
    CUDA_OK(cudaMemsetAsync(d_bad, 0xff, sizeof(uint64_t), s));
    if (rows == 0)
        return;
    first_bad_row<<<blocks_for(rows), 256, 0, s>>>((const fr_t *)d_a, (const fr_t *)d_b,
                                                   (const fr_t *)d_c, rows,
                                                   (unsigned long long *)d_bad);
    CUDA_OK(cudaGetLastError());
}

}  // namespace cp_cuda
