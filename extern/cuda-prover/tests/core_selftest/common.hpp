// Shared by the core self-test's files: the check macros and the failure
// count, the random generator (one stream for the whole run, so every test
// sees the values it saw when it was one file), point helpers, the params
// serialization of a key (key_parts), the random circuit (test_circuit),
// a host context, and the tests main() runs. Definitions in common.cpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "blst.h"
#include "cuda_prover.h"

extern int g_failures;
#define CHECK(cond, ...)                                                  \
    do {                                                                  \
        if (!(cond)) {                                                    \
            g_failures++;                                                 \
            std::printf("  FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
            std::printf(__VA_ARGS__);                                     \
            std::printf("\n");                                            \
        }                                                                 \
    } while (0)

// ---------------------------------------------------------------- helpers

uint64_t rnd64();
blst_fr rnd_fr();
blst_p1 g1_mul(const blst_p1 &p, const blst_fr &k);
blst_p2 g2_mul(const blst_p2 &p, const blst_fr &k);
blst_p1_affine g1_aff(const blst_p1 &p);
blst_p2_affine g2_aff(const blst_p2 &p);
blst_p1_affine rnd_g1();
blst_p2_affine rnd_g2();
bool p1_eq(const blst_p1 &a, const blst_p1 &b);
bool p2_eq(const blst_p2 &a, const blst_p2 &b);

std::string take(cp_status st);
#define EXPECT_CODE(call, want)                                                          \
    do {                                                                                 \
        cp_status st_ = (call);                                                          \
        int got_ = st_.code;                                                             \
        std::string msg_ = take(st_);                                                    \
        CHECK(got_ == (want), "expected code %d, got %d (%s)", (int)(want), got_, msg_.c_str()); \
    } while (0)
#define EXPECT_OK(call) EXPECT_CODE(call, CP_OK)

// ---------------------------------------------------------------- params

void put_u32(std::vector<uint8_t> &v, uint32_t x);
void put_g1(std::vector<uint8_t> &v, const blst_p1_affine &p);
void put_g2(std::vector<uint8_t> &v, const blst_p2_affine &p);

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

key_parts random_key(size_t ic, size_t h, size_t l, size_t a, size_t b);

// ---------------------------------------------------------------- circuits

// A random satisfied bellperson-shaped circuit (input constraints last) with
// a matching random key; owns every array.
struct test_circuit {
    std::vector<blst_fr> a, b, c, inputs, aux;
    std::vector<uint64_t> a_aux, b_in, b_aux;
    cp_circuit view(int64_t tag) const {
        cp_circuit v;
        std::memset(&v, 0, sizeof v);
        v.a = reinterpret_cast<const cp_fr *>(a.data());
        v.b = reinterpret_cast<const cp_fr *>(b.data());
        v.c = reinterpret_cast<const cp_fr *>(c.data());
        v.num_constraints = a.size();
        v.inputs = reinterpret_cast<const cp_fr *>(inputs.data());
        v.num_inputs = inputs.size();
        v.aux = reinterpret_cast<const cp_fr *>(aux.data());
        v.num_aux = aux.size();
        v.a_aux_density = a_aux.data();
        v.b_input_density = b_in.data();
        v.b_aux_density = b_aux.data();
        blst_fr r = rnd_fr(), s = rnd_fr();
        std::memcpy(&v.r, &r, sizeof r);
        std::memcpy(&v.s, &s, sizeof s);
        v.tag = tag;
        return v;
    }
};

test_circuit random_circuit(size_t nc, size_t ni, size_t na);
key_parts key_for(size_t nc, size_t ni, size_t na);
cp_context *host_ctx(int devices, int threads);

// ---------------------------------------------------------------- tests

void test_field();                   // field_ntt.cpp
void test_ntt();                     // field_ntt.cpp
void test_h();                       // field_ntt.cpp
void test_msm();                     // msm.cpp
void test_params();                  // params.cpp
void test_routing();                 // routing.cpp
void test_mutex();                   // mutex.cpp
void test_dispatch_after();          // dispatch.cpp
void test_dispatch_share();          // dispatch.cpp
void test_plan_stream_steep_temp();  // stream_plan.cpp
void test_plan_shared();             // stream_plan.cpp
void test_stream_sequence();         // stream_plan.cpp
void test_witness_pool();            // witness_pool.cpp
void test_groth16();                 // groth16.cpp
