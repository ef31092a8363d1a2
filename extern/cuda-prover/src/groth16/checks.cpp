// The checks of checks.hpp.
#include "groth16/checks.hpp"

#include "field.hpp"
#include "parallel.hpp"
#include "status.hpp"

namespace cp {
namespace {

const blst_fr *as_fr(const cp_fr *p) { return reinterpret_cast<const blst_fr *>(p); }

uint32_t domain_lg(const std::string &who, uint64_t num_constraints) {
    const uint32_t lg = domain_lg_of(num_constraints);
    if (lg > MAX_LG_DOMAIN)
        fail(CP_ERR_SHAPE_MISMATCH, who + ": num_constraints " + std::to_string(num_constraints) +
                                        " needs a domain of 2^" + std::to_string(lg) +
                                        ", more than the largest, 2^" + std::to_string(MAX_LG_DOMAIN));
    return lg;
}

}  // namespace

std::string circuit_name(size_t k, int64_t tag) {
    return "circuit " + std::to_string(k) + " (tag " + std::to_string(tag) + ")";
}

// The key's query lengths against what the job needs.
void check_key(const std::string &who, const circuit_job &job, const proving_key &key) {
    auto mismatch = [&](const std::string &what, uint64_t expected, uint64_t actual) {
        fail(CP_ERR_SHAPE_MISMATCH, who + ": " + what + ": the proving key has " +
                                        std::to_string(expected) + ", the circuit needs " +
                                        std::to_string(actual));
    };
    const uint64_t m = uint64_t(1) << job.lg_domain;
    if (key.ic.size() != job.num_inputs) mismatch("ic points (num_inputs)", key.ic.size(), job.num_inputs);
    if (key.h.size() != m - 1)
        mismatch("h points (domain size - 1, domain 2^" + std::to_string(job.lg_domain) + ")",
                 key.h.size(), m - 1);
    if (key.l.size() != job.num_aux) mismatch("l points (num_aux)", key.l.size(), job.num_aux);
    if (key.a.size() != job.num_inputs + job.a_aux_count)
        mismatch("a points (num_inputs + set bits of a_aux_density)", key.a.size(),
                 job.num_inputs + job.a_aux_count);
    const uint64_t nb = job.b_input_count + job.b_aux_count;
    if (key.b_g1.size() != nb)
        mismatch("b_g1 points (set bits of b_input_density + b_aux_density)", key.b_g1.size(), nb);
    if (key.b_g2.size() != nb)
        mismatch("b_g2 points (set bits of b_input_density + b_aux_density)", key.b_g2.size(), nb);
}

// Cheap checks of a circuit given as a, b, c (pointers, sizes, shape
// against the key); fills the job.
circuit_job check_circuit(size_t k, const cp_circuit &c, const proving_key &key) {
    const std::string who = circuit_name(k, c.tag);
    auto bad = [&](const std::string &why) { fail(CP_ERR_INVALID_ARGUMENT, who + ": " + why); };
    if (c.num_inputs < 1) bad("num_inputs is 0 (input 0 must be ONE)");
    if (c.num_constraints < c.num_inputs)
        bad("num_constraints " + std::to_string(c.num_constraints) + " is less than num_inputs " +
            std::to_string(c.num_inputs));
    if (!c.a || !c.b || !c.c) bad("a, b or c is NULL");
    if (!c.inputs) bad("inputs is NULL");
    if (c.num_aux > 0 && !c.aux) bad("aux is NULL with num_aux " + std::to_string(c.num_aux));
    if (c.num_aux > 0 && (!c.a_aux_density || !c.b_aux_density))
        bad("a_aux_density or b_aux_density is NULL with num_aux " + std::to_string(c.num_aux));
    if (!c.b_input_density) bad("b_input_density is NULL");

    circuit_job job;
    job.a = as_fr(c.a);
    job.b = as_fr(c.b);
    job.c = as_fr(c.c);
    job.num_constraints = c.num_constraints;
    job.inputs = as_fr(c.inputs);
    job.num_inputs = c.num_inputs;
    job.aux = as_fr(c.aux);
    job.num_aux = c.num_aux;
    job.a_aux_density = c.a_aux_density;
    job.b_input_density = c.b_input_density;
    job.b_aux_density = c.b_aux_density;
    job.lg_domain = domain_lg(who, c.num_constraints);
    job.a_aux_count = popcount_bits(c.a_aux_density, c.num_aux);
    job.b_input_count = popcount_bits(c.b_input_density, c.num_inputs);
    job.b_aux_count = popcount_bits(c.b_aux_density, c.num_aux);
    job.tag = c.tag;
    check_key(who, job, key);
    return job;
}

// A job from a shape alone (no witness yet): what prepare and the shape
// check need.
circuit_job shape_job(const std::string &who, const shape &sh) {
    circuit_job job;
    job.sh = &sh;
    job.num_constraints = sh.num_constraints;
    job.num_inputs = sh.num_inputs;
    job.num_aux = sh.num_aux;
    job.a_aux_density = sh.a_aux_density.data();
    job.b_input_density = sh.b_input_density.data();
    job.b_aux_density = sh.b_aux_density.data();
    job.lg_domain = domain_lg(who, sh.num_constraints);
    job.a_aux_count = sh.a_aux_count;
    job.b_input_count = sh.b_input_count;
    job.b_aux_count = sh.b_aux_count;
    return job;
}

// Checks of one witness against its shape; fills the job.
circuit_job check_witness(size_t k, const cp_witness &w, const shape &sh, const proving_key &key) {
    const std::string who = circuit_name(k, w.tag);
    if (w.num_inputs != sh.num_inputs || w.num_aux != sh.num_aux)
        fail(CP_ERR_SHAPE_MISMATCH, who + ": the witness has " + std::to_string(w.num_inputs) +
                                        " inputs and " + std::to_string(w.num_aux) +
                                        " aux values, the shape " + std::to_string(sh.num_inputs) +
                                        " and " + std::to_string(sh.num_aux));
    if (!w.inputs) fail(CP_ERR_INVALID_ARGUMENT, who + ": inputs is NULL");
    if (w.num_aux > 0 && !w.aux)
        fail(CP_ERR_INVALID_ARGUMENT, who + ": aux is NULL with num_aux " + std::to_string(w.num_aux));
    if (!fr_is_one(*as_fr(w.inputs)))
        fail(CP_ERR_INVALID_ARGUMENT, who + ": inputs[0] is not ONE");
    circuit_job job = shape_job(who, sh);
    job.inputs = as_fr(w.inputs);
    job.aux = as_fr(w.aux);
    job.tag = w.tag;
    check_key(who, job, key);
    return job;
}

}  // namespace cp
