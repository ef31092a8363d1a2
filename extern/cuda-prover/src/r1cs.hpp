// Owns: R1CS on the host: a shape's rows evaluated against a witness
// (a = A*w, b = B*w, c = C*w) and the a*b = c check. The host backend and
// the orchestration's check of given a, b, c use them.
#pragma once

#include <cstddef>
#include <cstdint>

#include "backend.hpp"

namespace cp {

// out[i] = sum of coeff * w[col] over row i of `m`, for rows [0, rows), where
// w is inputs (columns < num_inputs) followed by aux.
void eval_rows(const shape &sh, const shape_matrix &m, const blst_fr *inputs, const blst_fr *aux,
               blst_fr *out, int threads);

// The first row i < n with a[i] * b[i] != c[i], or SIZE_MAX.
size_t first_unsatisfied(const blst_fr *a, const blst_fr *b, const blst_fr *c, size_t n,
                         int threads);

}  // namespace cp
