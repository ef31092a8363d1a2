// Owns key_parts, a proving key held as arrays: parts() gives it as a
// cp_key_parts, bytes() as its bellperson params serialization. Also the
// serialization that needs: put_u32 (a big-endian length) and put_g1 /
// put_g2 (a point, uncompressed, 96 and 192 bytes).
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "blst.h"
#include "cuda_prover.h"

inline void put_u32(std::vector<uint8_t> &v, uint32_t x) {
    v.push_back(uint8_t(x >> 24));
    v.push_back(uint8_t(x >> 16));
    v.push_back(uint8_t(x >> 8));
    v.push_back(uint8_t(x));
}
inline void put_g1(std::vector<uint8_t> &v, const blst_p1_affine &p) {
    uint8_t b[96];
    blst_p1_affine_serialize(b, &p);
    v.insert(v.end(), b, b + 96);
}
inline void put_g2(std::vector<uint8_t> &v, const blst_p2_affine &p) {
    uint8_t b[192];
    blst_p2_affine_serialize(b, &p);
    v.insert(v.end(), b, b + 192);
}

// A proving key, as arrays, plus its bellperson serialization.
struct key_parts {
    blst_p1_affine alpha_g1, beta_g1, delta_g1;
    blst_p2_affine beta_g2, gamma_g2, delta_g2;
    std::vector<blst_p1_affine> ic, h, l, a, b_g1;
    std::vector<blst_p2_affine> b_g2;

    cp_key_parts parts() const {
        cp_key_parts p;
        std::memset(&p, 0, sizeof p);
        std::memcpy(&p.alpha_g1, &alpha_g1, sizeof alpha_g1);
        std::memcpy(&p.beta_g1, &beta_g1, sizeof beta_g1);
        std::memcpy(&p.beta_g2, &beta_g2, sizeof beta_g2);
        std::memcpy(&p.gamma_g2, &gamma_g2, sizeof gamma_g2);
        std::memcpy(&p.delta_g1, &delta_g1, sizeof delta_g1);
        std::memcpy(&p.delta_g2, &delta_g2, sizeof delta_g2);
        p.ic = reinterpret_cast<const cp_g1_affine *>(ic.data()), p.ic_len = ic.size();
        p.h = reinterpret_cast<const cp_g1_affine *>(h.data()), p.h_len = h.size();
        p.l = reinterpret_cast<const cp_g1_affine *>(l.data()), p.l_len = l.size();
        p.a = reinterpret_cast<const cp_g1_affine *>(a.data()), p.a_len = a.size();
        p.b_g1 = reinterpret_cast<const cp_g1_affine *>(b_g1.data()), p.b_g1_len = b_g1.size();
        p.b_g2 = reinterpret_cast<const cp_g2_affine *>(b_g2.data()), p.b_g2_len = b_g2.size();
        return p;
    }
    std::vector<uint8_t> bytes() const {
        std::vector<uint8_t> v;
        put_g1(v, alpha_g1);
        put_g1(v, beta_g1);
        put_g2(v, beta_g2);
        put_g2(v, gamma_g2);
        put_g1(v, delta_g1);
        put_g2(v, delta_g2);
        put_u32(v, uint32_t(ic.size()));
        for (auto &p : ic) put_g1(v, p);
        for (auto *sec : {&h, &l, &a, &b_g1}) {
            put_u32(v, uint32_t(sec->size()));
            for (auto &p : *sec) put_g1(v, p);
        }
        put_u32(v, uint32_t(b_g2.size()));
        for (auto &p : b_g2) put_g2(v, p);
        return v;
    }
};
