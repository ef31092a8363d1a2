// The epilogue of epilogue.hpp.
#include "groth16/epilogue.hpp"

#include <cstring>

#include "clock.hpp"
#include "status.hpp"

namespace cp {
namespace {

blst_p1 p1_mul(const blst_p1 &p, const blst_fr &k) {
    blst_scalar s;
    blst_scalar_from_fr(&s, &k);
    blst_p1 r;
    blst_p1_mult(&r, &p, s.b, 255);
    return r;
}
blst_p1 p1_mul(const blst_p1_affine &p, const blst_fr &k) {
    blst_p1 pp;
    blst_p1_from_affine(&pp, &p);
    return p1_mul(pp, k);
}
blst_p2 p2_mul(const blst_p2_affine &p, const blst_fr &k) {
    blst_p2 pp;
    blst_p2_from_affine(&pp, &p);
    blst_scalar s;
    blst_scalar_from_fr(&s, &k);
    blst_p2 r;
    blst_p2_mult(&r, &pp, s.b, 255);
    return r;
}

}  // namespace

void finish_one(const cp_pending &p, const cp_pending::entry &e, cp_proof &out) {
    const auto t0 = clock_type::now();
    const device_partials &d = e.parts;
    // A = alpha_g1 + a + r*delta_g1
    blst_p1 A = p1_mul(p.delta_g1, e.r);
    blst_p1_add_or_double_affine(&A, &A, &p.alpha_g1);
    blst_p1_add_or_double(&A, &A, &d.a);
    // B = beta_g2 + b_g2 + s*delta_g2
    blst_p2 B = p2_mul(p.delta_g2, e.s);
    blst_p2_add_or_double_affine(&B, &B, &p.beta_g2);
    blst_p2_add_or_double(&B, &B, &d.b_g2);
    // C = s*a + r*b_g1 + r*s*delta_g1 + s*alpha_g1 + r*beta_g1 + h + l
    blst_fr rs;
    blst_fr_mul(&rs, &e.r, &e.s);
    blst_p1 C = p1_mul(p.delta_g1, rs);
    blst_p1 t = p1_mul(p.alpha_g1, e.s);
    blst_p1_add_or_double(&C, &C, &t);
    t = p1_mul(p.beta_g1, e.r);
    blst_p1_add_or_double(&C, &C, &t);
    t = p1_mul(d.a, e.s);
    blst_p1_add_or_double(&C, &C, &t);
    t = p1_mul(d.b_g1, e.r);
    blst_p1_add_or_double(&C, &C, &t);
    blst_p1_add_or_double(&C, &C, &d.h);
    blst_p1_add_or_double(&C, &C, &d.l);

    // Nothing leaves the core outside the prime-order groups: a key point
    // outside its subgroup would show here.
    if (!blst_p1_in_g1(&A) || !blst_p2_in_g2(&B) || !blst_p1_in_g1(&C))
        fail(CP_ERR_PARAMS_FORMAT,
             "the proof has a point outside the prime-order subgroup (A or C not in G1, or B not "
             "in G2): the proving key holds points outside their subgroups");

    std::memset(&out, 0, sizeof out);
    blst_p1_to_affine(reinterpret_cast<blst_p1_affine *>(&out.a), &A);
    blst_p2_to_affine(reinterpret_cast<blst_p2_affine *>(&out.b), &B);
    blst_p1_to_affine(reinterpret_cast<blst_p1_affine *>(&out.c), &C);
    out.device = e.device;
    out.timings = e.timings;
    out.timings.epilogue_ns = ns_between(t0, clock_type::now());
}

}  // namespace cp
