// Owns: a witness packed for its trip to a device. The aux values of the
// circuits we prove are mostly 0 and 1 (the bits of hash gadgets: 94 % of
// a 32 GiB C2 partition's 130 million), so a packed witness holds the
// inputs as they are, two bitmaps over aux (which values are 1, which are
// neither 0 nor 1), for every 64-value word the count of "other" values
// before it, and those other values in order: about 290 MB where the
// values take 4.2 GB. A device unpacks it into its working cache
// (cuda/device/witness_unpack.hpp); unpack_witness here is the host's
// reference. Packing reads the witness twice, the second time only the
// bitmaps and the other values, on `threads` threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "blst.h"

namespace cp {

// Where the parts of a packed witness lie in its buffer (byte offsets,
// each at a 256-byte boundary) and its size.
struct packed_witness_layout {
    size_t num_inputs = 0, num_aux = 0;
    size_t words = 0;   // 64-value words of each bitmap
    size_t others = 0;  // aux values that are neither 0 nor 1
    size_t inputs_at = 0, one_bits_at = 0, other_bits_at = 0, pre_at = 0, values_at = 0;
    size_t bytes = 0;
};

packed_witness_layout packed_layout(size_t num_inputs, size_t num_aux, size_t others);

// Whether packing pays: the packed witness takes at most half the bytes
// of the values.
bool packing_pays(const packed_witness_layout &L);

// The first pass over aux: the two bitmaps (ones, then others; `words`
// words each) and the count of others in each chunk of words, as
// parallel_for(words, threads, PACK_GRAIN_WORDS) cuts them.
struct witness_split {
    std::vector<uint64_t> bits;
    std::vector<size_t> chunk_others;
    size_t others = 0;
};
constexpr size_t PACK_GRAIN_WORDS = size_t(1) << 14;

witness_split split_witness(const blst_fr *aux, size_t num_aux, int threads);

// The second pass: inputs, the bitmaps, the word prefixes and the other
// values into dst (L.bytes, laid out as L; L from packed_layout with
// s.others). The same `threads` as split_witness.
void pack_witness(const blst_fr *inputs, const blst_fr *aux, const witness_split &s,
                  const packed_witness_layout &L, void *dst, int threads);

// The host's reference of a device's unpacking: inputs and aux from a
// packed witness.
void unpack_witness(const void *src, const packed_witness_layout &L, blst_fr *inputs,
                    blst_fr *aux);

}  // namespace cp
