// Owns: parsing bellperson's params format (params_layout.hpp) into a key on
// every core. A section's points are cut into runs of leaves (digest.hpp);
// threads take the runs in file order, read each into a buffer of their own
// (a file: pread, so reads go on at once; a buffer: in place), hash its
// leaves and decode its points straight into the section, whose memory
// nothing zeroes first (point_vector). A file's section is allocated for
// the points the file holds data for: past a hole (a sparse file, found
// with SEEK_HOLE) it grows only as its points are read, so a file that
// claims more points than it holds fails at its first missing point having
// allocated little.
#pragma once

#include <cstdint>
#include <vector>

#include "backend.hpp"
#include "digest.hpp"
#include "params_layout.hpp"

namespace cp {

class params_file;

// Where a key's bytes are: a file, or a buffer of the layout's length.
struct params_source {
    const params_file *file = nullptr;
    const uint8_t *buffer = nullptr;
};

struct parse_result {
    std::vector<leaf_hash> leaves;  // the file's leaves in order; empty unless hashing
    int64_t offsets[12];            // vk points, then sections' first points
};

// Parses the key laid out as `L` in `src` into `key` on `threads` threads,
// with the encoding and on-curve checks of every point: the failing point
// that comes first in the file is the error (CP_ERR_PARAMS_FORMAT, naming
// its section, index and offset), as a reading from the start would find
// it. Hashes the leaves when `hash`. With `defer_curve` the on-curve check
// is left out (decode_g1_deferred): the caller runs point_check::on_curve
// unless the file's digest matches its verified record; a point that fails
// its decoding is still reported only after the points before it passed
// the curve check.
parse_result parse_params(const params_source &src, const params_layout &L, proving_key &key,
                          bool hash, bool defer_curve, int threads);

}  // namespace cp
