// Owns: Groth16's entry points on top of the dispatcher: proving from a, b,
// c (cp_prove_start, cp_prove) and from a shape and a witness
// (cp_groth16_prove_start_witness, cp_groth16_prove_witness), pending
// proofs and their finish, the shape check against a key and a device
// readied for a shape. The checks are checks.hpp's, the device part
// run.hpp's, the epilogue epilogue.hpp's; routing, locking, faults and
// statistics are the dispatcher's (dispatch.hpp).
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core.hpp"
#include "dispatch.hpp"
#include "groth16/checks.hpp"
#include "groth16/epilogue.hpp"
#include "groth16/run.hpp"
#include "r1cs.hpp"
#include "status.hpp"

namespace cp {
namespace {

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
