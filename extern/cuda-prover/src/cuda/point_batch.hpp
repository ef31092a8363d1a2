// Batches of curve points on one GPU, for keys: the generator of G1 or G2
// times many scalars (how the points of a key made from its scalars are
// computed) and the prime-order subgroup test of many points (how a loaded
// key is checked). Like gpu_ops.hpp this header sees neither blst.h nor
// sppark's field types: values cross it as raw limbs in blst's layout.
//
// A point_batch owns the tables of generator multiples (built on the GPU
// the first time a group is used: 16 rows of 2^15 points, 48 MiB for G1 and
// 96 MiB for G2) and works on host memory in chunks it uploads, computes
// and reads back on its stream. Errors throw cuda_error (sppark's exception
// type). Called with the thread bound to the GPU.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime.h>

#include "gpu_ops.hpp"

namespace cp_cuda {

class point_batch {
public:
    // `g1_windows[k]` and `g2_windows[k]` are the generators times 2^(16 k)
    // for k < 16 (curve_constants.hpp: WINDOWS), affine.
    point_batch(cudaStream_t stream, const g1_affine_raw *g1_windows,
                const g2_affine_raw *g2_windows);
    ~point_batch();
    point_batch(const point_batch &) = delete;
    point_batch &operator=(const point_batch &) = delete;

    // out[i] = scalars[i] * G (scalars in Montgomery form, as blst_fr;
    // out affine, g1_affine_raw or g2_affine_raw by group; the point at
    // infinity, all zeros, for a zero scalar), in host memory.
    void generator_multiples(msm_group group, const fr_raw *scalars, size_t n, void *out);

    // The index of the first of n points (affine, on the curve, not the
    // point at infinity: what a key's decoding checks) outside its
    // prime-order subgroup, or n when every one is inside.
    size_t first_outside_subgroup(msm_group group, const void *points, size_t n);

    // Device bytes held (the tables built so far).
    size_t bytes() const;

private:
    void ensure_table(msm_group group);

    cudaStream_t stream_;
    g1_affine_raw g1_windows_[16];
    g2_affine_raw g2_windows_[16];
    void *table_[2] = {nullptr, nullptr};
    size_t table_bytes_[2] = {0, 0};
};

}  // namespace cp_cuda
