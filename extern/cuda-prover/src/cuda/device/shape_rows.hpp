// The front of a phased pass whose shape does not fit next to its working
// set but whose rows fit the key's chunk buffers (idle until the pass's
// MSMs): a, b, c evaluated on the device from the shape's rows streamed
// through the two buffers, the copy of one slice of rows overlapping the
// evaluation of the other, then the a * b = c check. Each buffer holds the
// general coefficients, then a slice's row offsets and its entries.
#pragma once

#include <cstddef>
#include <cstdint>

#include "backend.hpp"
#include "device/staging.hpp"
#include "gpu_ops.hpp"

namespace cp {
namespace cuda_dev {

// Chunk buffers smaller than this evaluate from the host instead (many
// small slices cost more than they save). CP_SHAPE_ROWS_MIN_BUFFER (bytes;
// tests and measurements) sets another.
constexpr size_t SHAPE_ROWS_MIN_BUFFER = size_t(64) << 20;

// The least chunk buffer that streams `sh`'s rows: the coefficients and
// the longest row, and at least SHAPE_ROWS_MIN_BUFFER.
size_t shape_rows_buffer_need(const shape &sh);

// a, b, c (out[0..2], the shape's rows each) of `sh` from the witness on
// the device (d_in, d_aux), its rows staged through `bufs` (two device
// buffers of `buffer_bytes`, at least shape_rows_buffer_need) on
// `staging`'s copy stream, evaluated on the gpu's default stream; then the
// first unsatisfied row into *d_bad (UINT64_MAX when none). Returns once the
// evaluations are done with the buffers.
void evaluate_shape_rows(const gpu_t &gpu, stager &staging, const shape &sh, char *const bufs[2],
                         size_t buffer_bytes, cp_cuda::fr_raw *const out[3],
                         const cp_cuda::fr_raw *d_in, const cp_cuda::fr_raw *d_aux,
                         uint64_t *d_bad);

}  // namespace cuda_dev
}  // namespace cp
