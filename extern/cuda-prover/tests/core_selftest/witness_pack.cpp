// The packed witness (witness_pack.hpp): the split counts, the layout, when
// packing pays, and pack then unpack giving the witness back, the same
// bytes on any number of threads.
#include <cstring>
#include <vector>

#include "common.hpp"
#include "field.hpp"
#include "witness_pack.hpp"

using namespace cp;

namespace {

// n aux values: zero_pct % 0s, one_pct % 1s, the rest random (the same
// sequence for the same seed).
std::vector<blst_fr> aux_mix(size_t n, unsigned zero_pct, unsigned one_pct, uint64_t seed) {
    std::vector<blst_fr> v(n);
    uint64_t s = seed * 0x9e3779b97f4a7c15ULL + 1;
    for (auto &x : v) {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        const unsigned r = (unsigned)(s % 100);
        x = r < zero_pct ? fr_zero() : r < zero_pct + one_pct ? fr_one() : rnd_fr();
    }
    return v;
}

void check_case(size_t n, unsigned zero_pct, unsigned one_pct) {
    const std::vector<blst_fr> aux = aux_mix(n, zero_pct, one_pct, n + zero_pct);
    const std::vector<blst_fr> inputs = {fr_one(), rnd_fr(), rnd_fr()};
    size_t want_others = 0;
    for (const auto &x : aux)
        want_others += !fr_is_zero(x) && !fr_is_one(x);
    std::vector<unsigned char> first;
    for (int threads : {1, 3, 8}) {
        const witness_split s = split_witness(aux.data(), n, threads);
        CHECK(s.others == want_others, "n %zu (%u%% 0, %u%% 1), %d threads: %zu others, want %zu",
              n, zero_pct, one_pct, threads, s.others, want_others);
        const packed_witness_layout L = packed_layout(inputs.size(), n, s.others);
        CHECK(L.words == (n + 63) / 64, "words of %zu values", n);
        for (size_t at : {L.inputs_at, L.one_bits_at, L.other_bits_at, L.pre_at, L.values_at,
                          L.bytes})
            CHECK(at % 256 == 0, "n %zu: offset %zu at a 256-byte boundary", n, at);
        CHECK(L.values_at + s.others * sizeof(blst_fr) <= L.bytes, "n %zu: values fit", n);
        std::vector<unsigned char> buf(L.bytes, 0xa5);
        pack_witness(inputs.data(), aux.data(), s, L, buf.data(), threads);
        // Each word's prefix counts the others before it.
        const uint32_t *pre = reinterpret_cast<const uint32_t *>(buf.data() + L.pre_at);
        const uint64_t *others = reinterpret_cast<const uint64_t *>(buf.data() + L.other_bits_at);
        size_t before = 0;
        bool prefixes = true;
        for (size_t w = 0; w < L.words; w++) {
            prefixes = prefixes && pre[w] == before;
            before += (size_t)__builtin_popcountll(others[w]);
        }
        CHECK(prefixes && before == s.others, "n %zu, %d threads: word prefixes", n, threads);
        std::vector<blst_fr> in_back(inputs.size()), aux_back(n);
        unpack_witness(buf.data(), L, in_back.data(), aux_back.data());
        CHECK(std::memcmp(in_back.data(), inputs.data(), inputs.size() * sizeof(blst_fr)) == 0 &&
                  std::memcmp(aux_back.data(), aux.data(), n * sizeof(blst_fr)) == 0,
              "n %zu (%u%% 0, %u%% 1), %d threads: unpacked == the witness", n, zero_pct, one_pct,
              threads);
        if (first.empty())
            first = buf;
        else
            CHECK(buf == first, "n %zu: %d threads pack the same bytes as 1", n, threads);
    }
}

}  // namespace

void test_witness_pack() {
    std::printf("packed witness (split, layout, pays, pack and unpack)\n");
    for (size_t n : {size_t(0), size_t(1), size_t(63), size_t(64), size_t(65), size_t(1000),
                     size_t(200003)}) {
        check_case(n, 47, 47);
        check_case(n, 100, 0);
        check_case(n, 0, 100);
        check_case(n, 0, 0);
    }
    // Many words per chunk (PACK_GRAIN_WORDS), the chunks' starts carried.
    check_case((PACK_GRAIN_WORDS * 64) * 3 + 77, 40, 40);

    // Pays: a 32 GiB C2 partition's mix does, a dense witness does not.
    const size_t n = size_t(130) << 20;
    CHECK(packing_pays(packed_layout(20, n, n * 6 / 100)), "6%% others pay");
    CHECK(!packing_pays(packed_layout(20, n, n)), "all others do not pay");
    CHECK(packing_pays(packed_layout(20, n, 0)), "no others pay");
    const packed_witness_layout L = packed_layout(20, n, n * 6 / 100);
    CHECK(L.bytes < (n * sizeof(blst_fr)) / 12, "6%% others: %zu bytes of %zu", L.bytes,
          n * sizeof(blst_fr));
}
