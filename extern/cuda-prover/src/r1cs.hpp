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

// out[i - first] for the rows i in [first, last) of `m`, as eval_rows: a
// range of rows at a time, for a caller that sends them on in pieces.
void eval_row_range(const shape &sh, const shape_matrix &m, const blst_fr *inputs,
                    const blst_fr *aux, size_t first, size_t last, blst_fr *out, int threads);

// The first row i < n with a[i] * b[i] != c[i], or SIZE_MAX.
size_t first_unsatisfied(const blst_fr *a, const blst_fr *b, const blst_fr *c, size_t n,
                         int threads);

}  // namespace cp
