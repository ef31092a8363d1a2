// The warm-up's synthetic witness (warm_up.hpp).
#include "device/warm_up.hpp"

#include <algorithm>

#include "parallel.hpp"

namespace cp {
namespace cuda_dev {

bool make_synthetic_witness(synthetic_witness &w, const proving_key &key, size_t m) {
    const size_t ni = key.ic.size(), na = key.l.size();
    if (ni == 0 || key.a.size() < ni || key.h.size() != m - 1)
        return false;
    const size_t a_aux = key.a.size() - ni;
    const size_t b_in = std::min(ni, key.b_g1.size());
    const size_t b_aux = key.b_g1.size() - b_in;
    if (a_aux > na || b_aux > na || key.b_g2.size() != key.b_g1.size())
        return false;
    // Distinct pseudo-random general scalars: equal ones would all land
    // in one Pippenger bucket and make the warm-up slow. Each a mix of its
    // vector's salt and its index (splitmix64), so that the chunks of a
    // vector fill on separate threads.
    auto mix = [](uint64_t z) {
        z += 0x9e3779b97f4a7c15ULL;
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        return z ^ (z >> 31);
    };
    blst_fr zero, one;
    const uint64_t lz[4] = {0, 0, 0, 0}, lo[4] = {1, 0, 0, 0};
    blst_fr_from_uint64(&zero, lz);
    blst_fr_from_uint64(&one, lo);
    auto fill = [&](std::unique_ptr<blst_fr[]> &v, size_t n, uint64_t salt) {
        v.reset(new blst_fr[n ? n : 1]);
        blst_fr *p = v.get();
        parallel_for(n, hardware_threads(), size_t(1) << 16,
                     [&](size_t begin, size_t end, size_t) {
                         for (size_t i = begin; i < end; i++) {
                             if (i % 3 == 0) {
                                 p[i] = zero;
                             } else if (i % 3 == 1) {
                                 p[i] = one;
                             } else {
                                 const uint64_t at = (salt << 40) ^ (uint64_t(i) << 2);
                                 const uint64_t l[4] = {mix(at), mix(at + 1), mix(at + 2),
                                                        mix(at + 3) >> 4};
                                 blst_fr_from_uint64(&p[i], l);
                             }
                         }
                     });
    };
    auto first_bits = [](std::vector<uint64_t> &bits, size_t len, size_t set) {
        bits.assign((len + 63) / 64 + 1, 0);
        for (size_t i = 0; i < set; i++) bits[i / 64] |= uint64_t(1) << (i % 64);
    };
    fill(w.abc, 3 * m, 1);
    fill(w.in, ni, 2);
    fill(w.aux, na, 3);
    w.in[0] = one;
    first_bits(w.da, na, a_aux);
    first_bits(w.dbi, ni, b_in);
    first_bits(w.dba, na, b_aux);
    uint32_t lg = 0;
    while ((size_t(1) << lg) < m) lg++;
    circuit_job &job = w.job;
    job = circuit_job{};
    job.a = w.abc.get();
    job.b = job.a + m;
    job.c = job.b + m;
    job.num_constraints = m;
    job.inputs = w.in.get();
    job.num_inputs = ni;
    job.aux = w.aux.get();
    job.num_aux = na;
    job.a_aux_density = w.da.data();
    job.b_input_density = w.dbi.data();
    job.b_aux_density = w.dba.data();
    job.lg_domain = lg;
    job.a_aux_count = a_aux;
    job.b_input_count = b_in;
    job.b_aux_count = b_aux;
    return true;
}

}  // namespace cuda_dev
}  // namespace cp
