// A witness packed for its trip to a device (witness_pack.hpp).
#include "witness_pack.hpp"

#include <algorithm>
#include <cstring>

#include "field.hpp"
#include "parallel.hpp"

namespace cp {

namespace {

size_t round_up(size_t x) { return (x + 255) / 256 * 256; }

}  // namespace

packed_witness_layout packed_layout(size_t num_inputs, size_t num_aux, size_t others) {
    packed_witness_layout L;
    L.num_inputs = num_inputs;
    L.num_aux = num_aux;
    L.words = (num_aux + 63) / 64;
    L.others = others;
    size_t at = 0;
    L.inputs_at = at;
    at = round_up(at + num_inputs * sizeof(blst_fr));
    L.one_bits_at = at;
    at = round_up(at + L.words * sizeof(uint64_t));
    L.other_bits_at = at;
    at = round_up(at + L.words * sizeof(uint64_t));
    L.pre_at = at;
    at = round_up(at + L.words * sizeof(uint32_t));
    L.values_at = at;
    L.bytes = round_up(at + others * sizeof(blst_fr));
    return L;
}

bool packing_pays(const packed_witness_layout &L) {
    // The word prefixes are 32-bit counts.
    if (L.num_aux >= (size_t(1) << 32))
        return false;
    return L.bytes <= (L.num_inputs + L.num_aux) * sizeof(blst_fr) / 2;
}

witness_split split_witness(const blst_fr *aux, size_t num_aux, int threads) {
    const size_t words = (num_aux + 63) / 64;
    witness_split s;
    s.bits.assign(2 * words, 0);
    s.chunk_others.assign(chunk_count(words, threads, PACK_GRAIN_WORDS), 0);
    uint64_t *ones = s.bits.data(), *others = ones + words;
    const blst_fr &one = fr_one();
    parallel_for(words, threads, PACK_GRAIN_WORDS, [&](size_t b, size_t e, size_t chunk) {
        size_t count = 0;
        for (size_t w = b; w < e; w++) {
            uint64_t o = 0, x = 0;
            const size_t first = w * 64, last = std::min(num_aux, first + 64);
            for (size_t i = first; i < last; i++) {
                const blst_fr &v = aux[i];
                if (fr_eq(v, one))
                    o |= uint64_t(1) << (i - first);
                else if (!fr_is_zero(v))
                    x |= uint64_t(1) << (i - first);
            }
            ones[w] = o;
            others[w] = x;
            count += (size_t)__builtin_popcountll(x);
        }
        s.chunk_others[chunk] = count;
    });
    for (size_t c : s.chunk_others)
        s.others += c;
    return s;
}

void pack_witness(const blst_fr *inputs, const blst_fr *aux, const witness_split &s,
                  const packed_witness_layout &L, void *dst, int threads) {
    char *base = static_cast<char *>(dst);
    std::memcpy(base + L.inputs_at, inputs, L.num_inputs * sizeof(blst_fr));
    std::memcpy(base + L.one_bits_at, s.bits.data(), L.words * sizeof(uint64_t));
    std::memcpy(base + L.other_bits_at, s.bits.data() + L.words, L.words * sizeof(uint64_t));
    // Where each chunk's other values start.
    std::vector<size_t> start(s.chunk_others.size(), 0);
    for (size_t c = 1; c < start.size(); c++)
        start[c] = start[c - 1] + s.chunk_others[c - 1];
    const uint64_t *others = s.bits.data() + L.words;
    uint32_t *pre = reinterpret_cast<uint32_t *>(base + L.pre_at);
    blst_fr *values = reinterpret_cast<blst_fr *>(base + L.values_at);
    parallel_for(L.words, threads, PACK_GRAIN_WORDS, [&](size_t b, size_t e, size_t chunk) {
        size_t at = start[chunk];
        for (size_t w = b; w < e; w++) {
            pre[w] = (uint32_t)at;
            for (uint64_t x = others[w]; x; x &= x - 1)
                values[at++] = aux[w * 64 + (size_t)__builtin_ctzll(x)];
        }
    });
}

void unpack_witness(const void *src, const packed_witness_layout &L, blst_fr *inputs,
                    blst_fr *aux) {
    const char *base = static_cast<const char *>(src);
    std::memcpy(inputs, base + L.inputs_at, L.num_inputs * sizeof(blst_fr));
    const uint64_t *ones = reinterpret_cast<const uint64_t *>(base + L.one_bits_at);
    const uint64_t *others = reinterpret_cast<const uint64_t *>(base + L.other_bits_at);
    const uint32_t *pre = reinterpret_cast<const uint32_t *>(base + L.pre_at);
    const blst_fr *values = reinterpret_cast<const blst_fr *>(base + L.values_at);
    for (size_t i = 0; i < L.num_aux; i++) {
        const size_t w = i / 64;
        const unsigned k = (unsigned)(i % 64);
        const uint64_t below = (uint64_t(1) << k) - 1;
        if ((others[w] >> k) & 1)
            aux[i] = values[pre[w] + (size_t)__builtin_popcountll(others[w] & below)];
        else if ((ones[w] >> k) & 1)
            aux[i] = fr_one();
        else
            aux[i] = fr_zero();
    }
}

}  // namespace cp
