// Owns: Groth16 on top of the dispatcher: the checks of a circuit given as
// a, b, c (cp_prove_start) or as a shape and a witness
// (cp_groth16_prove_start_witness) against the proving key, pending proofs
// and the host epilogue (bellperson 0.27's formulas), with the subgroup
// check of every proof before it leaves the core. Routing, locking, faults
// and statistics are the dispatcher's (dispatch.hpp).
#include <algorithm>
#include <chrono>
#include <cstring>

#include "core.hpp"
#include "dispatch.hpp"
#include "field.hpp"
#include "parallel.hpp"
#include "r1cs.hpp"
#include "status.hpp"

namespace cp {
namespace {

using clock_type = std::chrono::steady_clock;

uint64_t ns_between(clock_type::time_point a, clock_type::time_point b) {
    return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(b - a).count());
}

std::string circuit_name(size_t k, int64_t tag) {
    return "circuit " + std::to_string(k) + " (tag " + std::to_string(tag) + ")";
}

const blst_fr *as_fr(const cp_fr *p) { return reinterpret_cast<const blst_fr *>(p); }

uint32_t domain_lg(const std::string &who, uint64_t num_constraints) {
    const uint32_t lg = domain_lg_of(num_constraints);
    if (lg > MAX_LG_DOMAIN)
        fail(CP_ERR_SHAPE_MISMATCH, who + ": num_constraints " + std::to_string(num_constraints) +
                                        " needs a domain of 2^" + std::to_string(lg) +
                                        ", more than the largest, 2^" + std::to_string(MAX_LG_DOMAIN));
    return lg;
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

struct blinding {
    const cp_fr *r, *s;
};

// One item's record for a shared pass (dispatch_share): what a leader of
// any call needs to run it.
struct shared_item {
    const proving_key *key;
    const circuit_job *job;
    device_partials *out;
    cp_timings *t;
    int32_t *device;
};

// share_key::kind of Groth16 device parts (payloads are shared_item).
const char groth16_parts = 0;

// Groth16 device parts as items that may share a pass over a streamed key.
dispatch_share groth16_sharing(const proving_key &key, const std::vector<circuit_job> &run,
                               std::vector<shared_item> &records) {
    dispatch_share sh;
    sh.key = [&key, &run](size_t k) {
        share_key sk;
        sk.kind = &groth16_parts;
        sk.key = &key;
        sk.shape = run[k].sh;
        return sk;
    };
    sh.payload = [&records](size_t k) -> void * { return &records[k]; };
    sh.limit = [](void *const *payloads, size_t n, device &dev) {
        const shared_item &first = *static_cast<shared_item *>(payloads[0]);
        return dev.groth16().shared_pass_limit(*first.key, *first.job, n);
    };
    sh.run = [](void *const *payloads, size_t n, int ordinal, device &dev,
                std::exception_ptr *errs) {
        std::vector<const circuit_job *> jobs(n);
        std::vector<device_partials *> outs(n);
        std::vector<cp_timings *> ts(n);
        for (size_t i = 0; i < n; i++) {
            shared_item &it = *static_cast<shared_item *>(payloads[i]);
            jobs[i] = it.job;
            outs[i] = it.out;
            ts[i] = it.t;
            *it.device = ordinal;
        }
        const proving_key &k = *static_cast<shared_item *>(payloads[0])->key;
        dev.groth16().shared_part(k, jobs.data(), n, outs.data(), ts.data(), errs);
    };
    return sh;
}

// The device part of every job over its route, into a new pending proof.
cp_pending *run_jobs(cp_context &ctx, const proving_key &key, const std::vector<circuit_job> &jobs,
                     const std::vector<blinding> &bl, const route &rt, cp_mutex *mutex) {
    std::unique_ptr<cp_pending> p(new cp_pending);
    p->entries.resize(jobs.size());
    p->alpha_g1 = key.alpha_g1;
    p->beta_g1 = key.beta_g1;
    p->delta_g1 = key.delta_g1;
    p->beta_g2 = key.beta_g2;
    p->delta_g2 = key.delta_g2;
    std::vector<dispatch_item> items(jobs.size());
    for (size_t k = 0; k < jobs.size(); k++) {
        items[k].tag = jobs[k].tag;
        items[k].name = circuit_name(k, jobs[k].tag);
        cp_pending::entry &e = p->entries[k];
        std::memset(&e.timings, 0, sizeof e.timings);
        std::memcpy(&e.r, bl[k].r, sizeof e.r);
        std::memcpy(&e.s, bl[k].s, sizeof e.s);
    }
    std::vector<item_times> times;
    // A witness-only job's witness goes into a buffer its device lends
    // (groth16_device::lend_witness), copied or packed, before the device's
    // mutex is taken, and the lease starts what it can of the upload; it ends with the item's
    // device part. Without a lease the device part reads the caller's
    // memory. A device part that returns a tail (device_tail) is finished
    // after the device's mutex is released, and its lease ends then.
    std::vector<circuit_job> run(jobs);
    std::vector<std::unique_ptr<witness_lease>> leases(jobs.size());
    std::vector<std::unique_ptr<device_tail>> tails(jobs.size());
    // Items of this call and of other callers on the same device with the
    // same key and shape may share one pass (device::shared_pass_limit).
    std::vector<shared_item> records(jobs.size());
    for (size_t k = 0; k < jobs.size(); k++) {
        cp_pending::entry &e = p->entries[k];
        records[k] = shared_item{&key, &run[k], &e.parts, &e.timings, &e.device};
    }
    const dispatch_share sharing = groth16_sharing(key, run, records);
    dispatch(ctx, rt, items, mutex,
             [&](size_t k, int ordinal, device &dev) {
                 cp_pending::entry &e = p->entries[k];
                 e.device = ordinal;
                 tails[k] = dev.groth16().device_part(key, run[k], e.parts, e.timings);
                 if (!tails[k]) leases[k].reset();
             },
             times,
             [&](size_t k, int, device &dev) {
                 circuit_job &j = run[k];
                 if (!j.sh) return;
                 leases[k] = dev.groth16().lend_witness(j.num_inputs, j.num_aux);
                 if (!leases[k]) return;
                 // Copied, or packed (its values read twice, the second
                 // time sparsely), on up to 8 of the context's threads.
                 leases[k]->fill(j, std::min(ctx.threads, 8));
                 leases[k]->filled(j);
             },
             [&](size_t k, int, device &) {
                 if (tails[k]) {
                     tails[k]->finish();
                     tails[k].reset();
                 }
                 leases[k].reset();
             },
             &sharing);
    for (size_t k = 0; k < jobs.size(); k++) {
        p->entries[k].timings.wait_ns = times[k].wait_ns;
        p->entries[k].timings.device_ns = times[k].device_ns;
    }
    return p.release();
}

void prove_start(cp_context *ctx, const cp_key *key_h, const cp_circuit *circuits, size_t n,
                 int32_t gpu_index, cp_mutex *mutex, cp_pending **out) {
    if (out) *out = nullptr;
    if (!ctx || !key_h || !circuits || !out)
        fail(CP_ERR_INVALID_ARGUMENT, "cp_prove_start: NULL argument");
    if (n == 0) fail(CP_ERR_INVALID_ARGUMENT, "cp_prove_start: num_circuits is 0");
    const proving_key &key = key_h->key;
    const route rt = resolve_route(*ctx, gpu_index, n, mutex, "cp_prove_start");

    // Checks, cheap ones first, before any device work.
    std::vector<circuit_job> jobs;
    std::vector<blinding> bl;
    jobs.reserve(n);
    for (size_t k = 0; k < n; k++) {
        jobs.push_back(check_circuit(k, circuits[k], key));
        bl.push_back({&circuits[k].r, &circuits[k].s});
    }
    for (size_t k = 0; k < n; k++) {
        const size_t bad = first_unsatisfied(jobs[k].a, jobs[k].b, jobs[k].c,
                                             jobs[k].num_constraints, ctx->threads);
        if (bad != SIZE_MAX)
            fail(CP_ERR_UNSATISFIED, circuit_name(k, jobs[k].tag) + ": constraint " +
                                         std::to_string(bad) + " is not satisfied (a*b != c)");
    }
    *out = run_jobs(*ctx, key, jobs, bl, rt, mutex);
}

void prove_start_witness(cp_context *ctx, const cp_key *key_h, const cp_shape *shape_h,
                         const cp_witness *ws, size_t n, int32_t gpu_index, cp_mutex *mutex,
                         cp_pending **out) {
    if (out) *out = nullptr;
    if (!ctx || !key_h || !shape_h || !ws || !out)
        fail(CP_ERR_INVALID_ARGUMENT, "cp_groth16_prove_start_witness: NULL argument");
    if (n == 0) fail(CP_ERR_INVALID_ARGUMENT, "cp_groth16_prove_start_witness: num_witnesses is 0");
    const proving_key &key = key_h->key;
    const route rt = resolve_route(*ctx, gpu_index, n, mutex, "cp_groth16_prove_start_witness");
    std::vector<circuit_job> jobs;
    std::vector<blinding> bl;
    jobs.reserve(n);
    for (size_t k = 0; k < n; k++) {
        jobs.push_back(check_witness(k, ws[k], shape_h->sh, key));
        bl.push_back({&ws[k].r, &ws[k].s});
    }
    // Satisfaction is checked by the backend, where a, b, c are evaluated.
    *out = run_jobs(*ctx, key, jobs, bl, rt, mutex);
}

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

}  // namespace
}  // namespace cp

using namespace cp;

extern "C" {

cp_status cp_prove_start(cp_context *ctx, const cp_key *key, const cp_circuit *circuits,
                         size_t num_circuits, int32_t gpu_index, cp_mutex *mutex, cp_pending **out) {
    return guard("cp_prove_start",
                 [&] { prove_start(ctx, key, circuits, num_circuits, gpu_index, mutex, out); });
}

size_t cp_pending_len(const cp_pending *p) { return p ? p->entries.size() : 0; }

int32_t cp_pending_device(const cp_pending *p, size_t i) {
    if (!p || i >= p->entries.size()) return -1;
    return p->entries[i].device;
}

cp_status cp_prove_finish(cp_pending *p, cp_proof *proofs_out) {
    std::unique_ptr<cp_pending> owned(p);
    return guard("cp_prove_finish", [&] {
        if (!owned) fail(CP_ERR_INVALID_ARGUMENT, "cp_prove_finish: pending is NULL");
        if (!proofs_out) fail(CP_ERR_INVALID_ARGUMENT, "cp_prove_finish: proofs_out is NULL");
        for (size_t i = 0; i < owned->entries.size(); i++) finish_one(*owned, owned->entries[i], proofs_out[i]);
    });
}

void cp_pending_free(cp_pending *p) {
    guard_void([&] { delete p; });
}

cp_status cp_groth16_prove_start_witness(cp_context *ctx, const cp_key *key,
                                         const cp_shape *shape, const cp_witness *witnesses,
                                         size_t num_witnesses, int32_t gpu_index,
                                         cp_mutex *mutex, cp_pending **out) {
    return guard("cp_groth16_prove_start_witness", [&] {
        prove_start_witness(ctx, key, shape, witnesses, num_witnesses, gpu_index, mutex, out);
    });
}

cp_status cp_groth16_prove_witness(cp_context *ctx, const cp_key *key, const cp_shape *shape,
                                   const cp_witness *witnesses, size_t num_witnesses,
                                   int32_t gpu_index, cp_mutex *mutex, cp_proof *proofs_out) {
    if (!proofs_out)
        return make_status(CP_ERR_INVALID_ARGUMENT, "cp_groth16_prove_witness: proofs_out is NULL");
    cp_pending *p = nullptr;
    cp_status st = cp_groth16_prove_start_witness(ctx, key, shape, witnesses, num_witnesses,
                                                  gpu_index, mutex, &p);
    if (st.code != CP_OK) return st;
    return cp_prove_finish(p, proofs_out);
}

cp_status cp_groth16_shape_check(const cp_key *key, const cp_shape *shape) {
    return guard("cp_groth16_shape_check", [&] {
        if (!key || !shape) fail(CP_ERR_INVALID_ARGUMENT, "cp_groth16_shape_check: NULL argument");
        check_key("the shape", shape_job("the shape", shape->sh), key->key);
    });
}

cp_status cp_device_prepare_shape(cp_context *ctx, int32_t ordinal, const cp_key *key,
                                  const cp_shape *shape) {
    return guard("cp_device_prepare_shape", [&] {
        if (!ctx || !key || !shape)
            fail(CP_ERR_INVALID_ARGUMENT, "cp_device_prepare_shape: NULL argument");
        check_ordinal(ctx, ordinal, "cp_device_prepare_shape");
        check_key("the shape", shape_job("the shape", shape->sh), key->key);
        device_slot &s = ctx->slot(ordinal);
        std::lock_guard<std::mutex> lk(s.own);
        bind_scope scope(*ctx, ordinal);
        s.dev->groth16().prepare(key->key, shape->sh.num_constraints, &shape->sh);
    });
}

cp_status cp_prove(cp_context *ctx, const cp_key *key, const cp_circuit *circuits,
                   size_t num_circuits, int32_t gpu_index, cp_mutex *mutex, cp_proof *proofs_out) {
    if (!proofs_out) return make_status(CP_ERR_INVALID_ARGUMENT, "cp_prove: proofs_out is NULL");
    cp_pending *p = nullptr;
    cp_status st = cp_prove_start(ctx, key, circuits, num_circuits, gpu_index, mutex, &p);
    if (st.code != CP_OK) return st;
    return cp_prove_finish(p, proofs_out);
}

}  // extern "C"
