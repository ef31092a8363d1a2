// The device operations of the CUDA backend: H via NTTs and the MSMs, on
// device buffers of one GPU. This header sees neither blst.h nor sppark's
// field types (the two define limb_t differently), so values cross it as raw
// limbs with blst's memory layout (Montgomery form, little-endian limbs).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include <util/gpu_t.cuh>

namespace cp_cuda {

struct fr_raw { uint64_t l[4]; };
struct g1_affine_raw { uint64_t l[12]; };   // blst_p1_affine
struct g2_affine_raw { uint64_t l[24]; };   // blst_p2_affine
struct g1_proj_raw { uint64_t l[18]; };     // blst_p1 (Jacobian X, Y, Z)
struct g2_proj_raw { uint64_t l[36]; };     // blst_p2
struct shape_entry_raw { uint32_t col, coeff; };  // cp_shape_entry

// How one MSM's scalars are split. Scalars equal to 0 are skipped, those
// equal to 1 are summed with a batch addition over `ones_bitmap`, the rest
// (the tail) go through Pippenger over gathered points. When the tail is
// more than a quarter of the points the plan is dense: one MSM over all
// points with the original scalars, no batch addition.
struct msm_plan {
    size_t n = 0;                      // points and scalars
    const fr_raw *scalars = nullptr;   // host, n entries
    bool dense = false;
    size_t ones = 0;
    std::vector<uint32_t> ones_bitmap; // padded to whole 1024-bit chunks
    std::vector<uint32_t> tail_idx;
    std::vector<fr_raw> tail_scalars;
};

// Classifies n host scalars (Montgomery form) into a plan.
void make_plan(msm_plan &plan, const fr_raw *scalars, size_t n);

struct msm_times {
    uint64_t msm_ns = 0;
    uint64_t batch_add_ns = 0;
};

// Device scratch for sparse MSMs, carved by the callee.
struct scratch_t {
    void *base = nullptr;
    size_t bytes = 0;
};

// Bytes of scratch the sparse path needs for up to n_max points.
size_t sparse_scratch_bytes(size_t n_max, int sm_count);
// Upper bound of what sppark's msm_t allocates for itself for n points.
size_t msm_temp_bytes(size_t n, bool g2, int sm_count);

// All of these run on `gpu` (the caller has selected it), synchronize before
// returning and throw cuda_error (sppark's exception type) on failure.

// sum scalars[i] * points[i], both on the device; scalars in Montgomery form.
void msm_g1_device(const gpu_t &gpu, g1_proj_raw &out, const void *d_points,
                   const void *d_scalars, size_t n);

// The same in G2.
void msm_g2_device(const gpu_t &gpu, g2_proj_raw &out, const void *d_points,
                   const void *d_scalars, size_t n);

// sum plan.scalars[i] * points[i], points on the device.
void msm_g1_plan(const gpu_t &gpu, g1_proj_raw &out, const void *d_points,
                 const msm_plan &plan, scratch_t scratch, msm_times &times);
void msm_g2_plan(const gpu_t &gpu, g2_proj_raw &out, const void *d_points,
                 const msm_plan &plan, scratch_t scratch, msm_times &times);

// d_a, d_b, d_c: evaluations over the domain of size 2^lg (device). On return
// d_a holds the coefficients of H = (a*b - c)/Z on the coset g*<omega>, g = 7,
// brought back to the standard basis; d_b and d_c are clobbered.
// Asynchronous on the gpu's default stream; call gpu_sync_default after.
void compute_h_async(const gpu_t &gpu, void *d_a, void *d_b, void *d_c, uint32_t lg,
                     const fr_raw &z_inv);
void gpu_sync_default(const gpu_t &gpu);

// d_out[i] = sum of coeff * w[col] over row i of a CSR matrix, for rows
// [0, rows), where w is d_inputs (columns < num_inputs) followed by d_aux;
// entry coeff 0 is +1, 1 is -1, k >= 2 is d_coeffs[k - 2]. Asynchronous on
// the gpu's default stream.
void eval_rows_async(const gpu_t &gpu, fr_raw *d_out, const uint64_t *d_row_ptr,
                     const shape_entry_raw *d_entries, const fr_raw *d_coeffs,
                     const fr_raw *d_inputs, uint32_t num_inputs, const fr_raw *d_aux,
                     size_t rows);

// *d_bad = the first row i < rows with a[i] * b[i] != c[i], or UINT64_MAX.
// Asynchronous on the gpu's default stream.
void check_rows_async(const gpu_t &gpu, const fr_raw *d_a, const fr_raw *d_b, const fr_raw *d_c,
                      size_t rows, uint64_t *d_bad);

}  // namespace cp_cuda
