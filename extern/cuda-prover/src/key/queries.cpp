// Owns: what a caller may ask a loaded key: its sections' lengths (shape),
// its verifying key (points, and ic into the caller's buffer) and the
// device memory a proof of a given size would need with it.
#include <cstring>
#include <string>

#include "field.hpp"
#include "host/estimate.hpp"
#include "key/parts.hpp"
#include "status.hpp"

namespace cp {
namespace {

const cp::proving_key &key_of(const cp_key *s) { return s->key; }

// The six sections' lengths of k into a cp_key_shape or a cp_key_parts.
template <class T>
void set_lengths(T *out, const proving_key &k) {
    out->ic_len = k.ic.size();
    out->h_len = k.h.size();
    out->l_len = k.l.size();
    out->a_len = k.a.size();
    out->b_g1_len = k.b_g1.size();
    out->b_g2_len = k.b_g2.size();
}

}  // namespace
}  // namespace cp

using namespace cp;

extern "C" {

cp_status cp_key_shape_get(const cp_key *s, cp_key_shape *out) {
    return guard("cp_key_shape_get", [&] {
        if (!s || !out) fail(CP_ERR_INVALID_ARGUMENT, "cp_key_shape_get: NULL argument");
        set_lengths(out, key_of(s));
    });
}

cp_status cp_key_vk_get(const cp_key *s, cp_key_parts *vk, cp_g1_affine *ic_out, size_t ic_cap) {
    return guard("cp_key_vk_get", [&] {
        if (!s || !vk) fail(CP_ERR_INVALID_ARGUMENT, "cp_key_vk_get: NULL argument");
        const proving_key &k = key_of(s);
        std::memset(vk, 0, sizeof *vk);
        std::memcpy(&vk->alpha_g1, &k.alpha_g1, sizeof vk->alpha_g1);
        std::memcpy(&vk->beta_g1, &k.beta_g1, sizeof vk->beta_g1);
        std::memcpy(&vk->beta_g2, &k.beta_g2, sizeof vk->beta_g2);
        std::memcpy(&vk->gamma_g2, &k.gamma_g2, sizeof vk->gamma_g2);
        std::memcpy(&vk->delta_g1, &k.delta_g1, sizeof vk->delta_g1);
        std::memcpy(&vk->delta_g2, &k.delta_g2, sizeof vk->delta_g2);
        // Lengths are reported; array pointers are left NULL.
        set_lengths(vk, k);
        if (ic_out == nullptr && ic_cap == 0) return;  // a query for ic_len
        if (ic_out == nullptr || ic_cap < k.ic.size())
            fail(CP_ERR_INVALID_ARGUMENT, "cp_key_vk_get: ic_out holds " + std::to_string(ic_cap) +
                                              " points, the key has " +
                                              std::to_string(k.ic.size()));
        if (!k.ic.empty()) std::memcpy(ic_out, k.ic.data(), k.ic.size() * sizeof(cp_g1_affine));
        vk->ic = ic_out;
    });
}

cp_status cp_memory_estimate_get(const cp_key *s, uint64_t num_constraints, cp_memory_estimate *out) {
    return guard("cp_memory_estimate_get", [&] {
        if (!s || !out) fail(CP_ERR_INVALID_ARGUMENT, "cp_memory_estimate_get: NULL argument");
        if (num_constraints > (uint64_t(1) << MAX_LG_DOMAIN))
            fail(CP_ERR_INVALID_ARGUMENT,
                 "cp_memory_estimate_get: num_constraints " + std::to_string(num_constraints) +
                     " is more than the largest domain, 2^" + std::to_string(MAX_LG_DOMAIN));
        *out = host::estimate(key_of(s), num_constraints);
    });
}

}  // extern "C"
