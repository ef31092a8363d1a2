// End-to-end Groth16: a random R1CS with a witness, a proving key from
// known toxic waste (loaded through the params format), proofs from the
// core checked with the pairing equation.
#include <utility>

#include "common.hpp"
#include "field.hpp"

using namespace cp;

// ---------------------------------------------------------------- Groth16

// An R1CS (rows over variables [inputs..., aux...]) with a witness, turned
// into a bellperson-shaped circuit and a proving key from known toxic waste,
// then proved with the core and checked with the pairing equation.
struct sparse_row {
    std::vector<std::pair<size_t, blst_fr>> terms;
    blst_fr eval(const std::vector<blst_fr> &w) const {
        blst_fr acc = fr_zero();
        for (auto &t : terms) acc = fr_add(acc, fr_mul(t.second, w[t.first]));
        return acc;
    }
};

static bool groth16_roundtrip(size_t ni, size_t n_gates, int threads, int devices) {
    // Variables: inputs 0..ni-1 (0 is ONE), then aux.
    std::vector<blst_fr> w;
    w.push_back(fr_one());
    for (size_t i = 1; i < ni; i++) w.push_back(rnd_fr());
    std::vector<sparse_row> A, B, C;
    // Some aux "bits" first (boolean: v*v = v), with values 0/1.
    size_t nbits = 6;
    for (size_t i = 0; i < nbits; i++) {
        size_t v = w.size();
        w.push_back(i % 2 ? fr_one() : fr_zero());
        A.push_back({{{v, fr_one()}}});
        B.push_back({{{v, fr_one()}}});
        C.push_back({{{v, fr_one()}}});
    }
    for (size_t g = 0; g < n_gates; g++) {
        sparse_row a, b;
        size_t nv = w.size();
        for (int t = 0; t < 3; t++) a.terms.push_back({rnd64() % nv, rnd_fr()});
        // b uses inputs only sometimes, never the last variable (so some aux
        // have B density 0).
        for (int t = 0; t < 2; t++) b.terms.push_back({rnd64() % (nv > 2 ? nv - 1 : nv), rnd_fr()});
        size_t v = w.size();
        w.push_back(fr_mul(a.eval(w), b.eval(w)));
        A.push_back(a), B.push_back(b), C.push_back({{{v, fr_one()}}});
    }
    // One aux that appears only in C (A and B densities 0).
    {
        size_t v = w.size();
        w.push_back(fr_mul(w[1 % ni], w[nbits]));
        A.push_back({{{1 % ni, fr_one()}}});
        B.push_back({{{nbits, fr_one()}}});
        C.push_back({{{v, fr_one()}}});
    }
    const size_t nvars = w.size(), na = nvars - ni;
    // bellperson: input constraints input_i * 0 = 0 come last.
    for (size_t i = 0; i < ni; i++) {
        A.push_back({{{i, fr_one()}}});
        B.push_back({});
        C.push_back({});
    }
    const size_t nc = A.size();
    uint32_t lg = 0;
    while ((size_t(1) << lg) < nc) lg++;
    const size_t m = size_t(1) << lg;

    // Toxic waste and per-variable polynomial values at tau.
    blst_fr tau = rnd_fr(), alpha = rnd_fr(), beta = rnd_fr(), gamma = rnd_fr(), delta = rnd_fr();
    blst_fr omega = fr_root_of_unity(lg);
    blst_fr zt = fr_sub(fr_pow(tau, m), fr_one());
    blst_fr minv = fr_inv(fr_from_u64(m));
    std::vector<blst_fr> lag(m);
    for (size_t i = 0; i < m; i++) {
        blst_fr wi = fr_pow(omega, i);
        lag[i] = fr_mul(fr_mul(fr_mul(zt, minv), wi), fr_inv(fr_sub(tau, wi)));
    }
    std::vector<blst_fr> at(nvars, fr_zero()), bt(nvars, fr_zero()), ct(nvars, fr_zero());
    for (size_t i = 0; i < nc; i++) {
        for (auto &t : A[i].terms) at[t.first] = fr_add(at[t.first], fr_mul(t.second, lag[i]));
        for (auto &t : B[i].terms) bt[t.first] = fr_add(bt[t.first], fr_mul(t.second, lag[i]));
        for (auto &t : C[i].terms) ct[t.first] = fr_add(ct[t.first], fr_mul(t.second, lag[i]));
    }
    const blst_p1 &G1 = *blst_p1_generator();
    const blst_p2 &G2 = *blst_p2_generator();
    key_parts k;
    k.alpha_g1 = g1_aff(g1_mul(G1, alpha));
    k.beta_g1 = g1_aff(g1_mul(G1, beta));
    k.beta_g2 = g2_aff(g2_mul(G2, beta));
    k.gamma_g2 = g2_aff(g2_mul(G2, gamma));
    k.delta_g1 = g1_aff(g1_mul(G1, delta));
    k.delta_g2 = g2_aff(g2_mul(G2, delta));
    blst_fr ginv = fr_inv(gamma), dinv = fr_inv(delta);
    test_circuit tc;
    tc.a_aux.assign(na / 64 + 1, 0);
    tc.b_aux.assign(na / 64 + 1, 0);
    tc.b_in.assign(ni / 64 + 1, 0);
    for (size_t j = 0; j < nvars; j++) {
        blst_fr q = fr_add(fr_add(fr_mul(beta, at[j]), fr_mul(alpha, bt[j])), ct[j]);
        if (j < ni)
            k.ic.push_back(g1_aff(g1_mul(G1, fr_mul(q, ginv))));
        else
            k.l.push_back(g1_aff(g1_mul(G1, fr_mul(q, dinv))));
        if (!fr_is_zero(at[j])) {
            k.a.push_back(g1_aff(g1_mul(G1, at[j])));
            if (j >= ni) tc.a_aux[(j - ni) / 64] |= uint64_t(1) << ((j - ni) % 64);
        } else {
            CHECK(j >= ni, "input with zero A polynomial");
        }
        if (!fr_is_zero(bt[j])) {
            k.b_g1.push_back(g1_aff(g1_mul(G1, bt[j])));
            k.b_g2.push_back(g2_aff(g2_mul(G2, bt[j])));
            if (j >= ni)
                tc.b_aux[(j - ni) / 64] |= uint64_t(1) << ((j - ni) % 64);
            else
                tc.b_in[j / 64] |= uint64_t(1) << (j % 64);
        }
    }
    // bellperson orders b points: inputs first, then aux (as above, j ascending).
    blst_fr tp = fr_one();
    for (size_t i = 0; i + 1 < m; i++) {
        k.h.push_back(g1_aff(g1_mul(G1, fr_mul(fr_mul(tp, zt), dinv))));
        tp = fr_mul(tp, tau);
    }
    for (size_t i = 0; i < nc; i++) {
        tc.a.push_back(A[i].eval(w));
        tc.b.push_back(B[i].eval(w));
        tc.c.push_back(C[i].eval(w));
    }
    tc.inputs.assign(w.begin(), w.begin() + long(ni));
    tc.aux.assign(w.begin() + long(ni), w.end());

    // Load the key through the params format to cover the parser as well.
    std::vector<uint8_t> bytes = k.bytes();
    cp_key *key = nullptr;
    EXPECT_OK(cp_key_from_bytes(bytes.data(), bytes.size(), &key));
    cp_context *ctx = host_ctx(devices, threads);
    if (!key || !ctx) return false;
    const size_t nproofs = 3;
    std::vector<cp_circuit> cs;
    for (size_t i = 0; i < nproofs; i++) cs.push_back(tc.view(int64_t(i)));
    cs[1].r = cp_fr{{0, 0, 0, 0}};  // r = 0 is allowed
    std::vector<cp_proof> proofs(nproofs);
    EXPECT_OK(cp_prove(ctx, key, cs.data(), nproofs, CP_GPU_AUTO, nullptr, proofs.data()));
    bool all = true;
    for (size_t i = 0; i < nproofs; i++) {
        // e(A, B) == e(alpha, beta) e(sum x_i ic_i, gamma) e(C, delta)
        blst_p1 acc;
        std::memset(&acc, 0, sizeof acc);
        for (size_t j = 0; j < ni; j++) {
            blst_p1 icj;
            blst_p1_from_affine(&icj, &k.ic[j]);
            blst_p1 t = g1_mul(icj, w[j]);
            blst_p1_add_or_double(&acc, &acc, &t);
        }
        blst_p1_affine acc_a = g1_aff(acc);
        const blst_p1_affine *pa = reinterpret_cast<const blst_p1_affine *>(&proofs[i].a);
        const blst_p2_affine *pb = reinterpret_cast<const blst_p2_affine *>(&proofs[i].b);
        const blst_p1_affine *pc = reinterpret_cast<const blst_p1_affine *>(&proofs[i].c);
        blst_fp12 l1, l2, r1, r2, r3, lhs, rhs;
        blst_miller_loop(&l1, pb, pa);
        blst_final_exp(&lhs, &l1);
        blst_miller_loop(&r1, &k.beta_g2, &k.alpha_g1);
        blst_miller_loop(&r2, &k.gamma_g2, &acc_a);
        blst_miller_loop(&r3, &k.delta_g2, pc);
        blst_fp12_mul(&l2, &r1, &r2);
        blst_fp12_mul(&l2, &l2, &r3);
        blst_final_exp(&rhs, &l2);
        bool ok = blst_fp12_is_equal(&lhs, &rhs) && blst_p1_affine_in_g1(pa) && blst_p2_affine_in_g2(pb);
        CHECK(ok, "groth16 proof %zu (ni=%zu gates=%zu) does not verify", i, ni, n_gates);
        all &= ok;
    }
    // A wrong public input must not verify (sanity of the check itself).
    cp_key_free(key);
    cp_context_free(ctx);
    return all;
}

void test_groth16() {
    std::printf("groth16 end to end (pairing check)\n");
    groth16_roundtrip(1, 3, 1, 1);
    groth16_roundtrip(2, 20, 2, 2);
    groth16_roundtrip(3, 120, 2, 3);
    groth16_roundtrip(5, 3000, 2, 1);
}
