// Shared by the core self-test's files: the random generator (one stream
// for the whole run, so every test sees the values it saw when it was one
// file), point helpers, random keys, the random circuit (test_circuit), a
// host context, and the tests main() runs. Definitions in common.cpp. The
// check macros and the failure count, take() and key_parts come from
// tests/support/.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "blst.h"
#include "cuda_prover.h"
#include "../support/check.hpp"
#include "../support/expect.hpp"
#include "../support/key_parts.hpp"

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

// ---------------------------------------------------------------- params

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
void test_witness_pack();            // witness_pack.cpp
void test_groth16();                 // groth16.cpp
