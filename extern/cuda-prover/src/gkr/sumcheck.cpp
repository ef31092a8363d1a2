// Owns: the sumcheck entry points (cp_sumcheck_*) and cp_bb4_batch: argument
// checks, then the device work through the handle's site (the dispatcher).
#include <memory>
#include <vector>

#include "gkr/handles.hpp"
#include "status.hpp"

namespace cp {
namespace gkr {
namespace {

constexpr size_t MAX_TABLES = 64;
constexpr size_t MAX_TERMS = 16;

void check_vars(uint32_t m, const char *where) {
    if (m > CP_GKR_MAX_VARS)
        fail(CP_ERR_INVALID_ARGUMENT, std::string(where) + ": " + std::to_string(m) +
                                          " variables, more than CP_GKR_MAX_VARS (" +
                                          std::to_string(CP_GKR_MAX_VARS) + ")");
}

void sumcheck_new(cp_context *ctx, int32_t gpu_index, cp_mutex *mutex, int64_t tag,
                  uint32_t num_vars, const cp_bb4 *const *tables, size_t num_tables,
                  cp_sumcheck **out) {
    const char *where = "cp_sumcheck_new";
    if (out) *out = nullptr;
    if (!ctx || !tables || !out) fail(CP_ERR_INVALID_ARGUMENT, std::string(where) + ": NULL argument");
    check_vars(num_vars, where);
    if (num_tables == 0 || num_tables > MAX_TABLES)
        fail(CP_ERR_INVALID_ARGUMENT, std::string(where) + ": num_tables is " +
                                          std::to_string(num_tables) + ", not in [1, 64]");
    const size_t n = size_t(1) << num_vars;
    std::vector<std::vector<bb::ext>> host(num_tables);
    for (size_t i = 0; i < num_tables; i++) {
        if (!tables[i])
            fail(CP_ERR_INVALID_ARGUMENT, std::string(where) + ": table " + std::to_string(i) + " is NULL");
        host[i].resize(n);
        from_abi(tables[i], n, host[i].data(), "table " + std::to_string(i), ctx->threads);
    }
    std::unique_ptr<cp_sumcheck> sc(new cp_sumcheck);
    sc->where = site::route_one(ctx, gpu_index, mutex, tag, "sumcheck", where);
    sc->vars_left = num_vars;
    try {
        sc->where.run([&](kernels &k) {
            for (size_t i = 0; i < num_tables; i++) {
                const buf_id b = k.upload(host[i].data(), n);
                sc->owned.push_back(b);
                sc->tables.push_back(view{b, 0});
            }
        });
    } catch (...) {
        sc->where.release(sc->owned);
        throw;
    }
    *out = sc.release();
}

void sumcheck_round(cp_sumcheck *sc, const cp_sumcheck_term *terms, size_t num_terms,
                    uint32_t degree, cp_bb4 *evals_out) {
    const char *where = "cp_sumcheck_round";
    if (!sc || !terms || !evals_out) fail(CP_ERR_INVALID_ARGUMENT, std::string(where) + ": NULL argument");
    if (sc->vars_left == 0)
        fail(CP_ERR_INVALID_ARGUMENT, std::string(where) + ": every variable is bound already");
    if (num_terms == 0 || num_terms > MAX_TERMS)
        fail(CP_ERR_INVALID_ARGUMENT, std::string(where) + ": num_terms is " +
                                          std::to_string(num_terms) + ", not in [1, 16]");
    if (degree > CP_SUMCHECK_MAX_DEGREE)
        fail(CP_ERR_INVALID_ARGUMENT, std::string(where) + ": degree " + std::to_string(degree) +
                                          " is more than CP_SUMCHECK_MAX_DEGREE");
    std::vector<term> ts(num_terms);
    for (size_t q = 0; q < num_terms; q++) {
        const cp_sumcheck_term &t = terms[q];
        const std::string who = std::string(where) + ": term " + std::to_string(q);
        if (t.num_factors < 1 || t.num_factors > degree)
            fail(CP_ERR_INVALID_ARGUMENT, who + ": num_factors " + std::to_string(t.num_factors) +
                                              " is not in [1, degree " + std::to_string(degree) + "]");
        for (uint32_t f = 0; f < t.num_factors; f++) {
            if (t.factors[f] >= sc->tables.size())
                fail(CP_ERR_INVALID_ARGUMENT, who + ": factor " + std::to_string(f) + " names table " +
                                                  std::to_string(t.factors[f]) + " of " +
                                                  std::to_string(sc->tables.size()));
            ts[q].idx[f] = t.factors[f];
        }
        ts[q].n = t.num_factors;
        ts[q].coeff = from_abi(t.coeff, who + " coeff", 0);
    }
    bb::ext out[MAX_DEGREE + 1];
    const size_t len = size_t(1) << sc->vars_left;
    sc->where.run([&](kernels &k) {
        k.round(sc->tables.data(), sc->tables.size(), len, ts.data(), ts.size(), degree, out);
    });
    for (uint32_t i = 0; i <= degree; i++) evals_out[i] = to_abi(out[i]);
}

void sumcheck_fold(cp_sumcheck *sc, const cp_bb4 *r) {
    const char *where = "cp_sumcheck_fold";
    if (!sc || !r) fail(CP_ERR_INVALID_ARGUMENT, std::string(where) + ": NULL argument");
    if (sc->vars_left == 0)
        fail(CP_ERR_INVALID_ARGUMENT, std::string(where) + ": every variable is bound already");
    const bb::ext c = from_abi(*r, std::string(where) + ": r", 0);
    const size_t len = size_t(1) << sc->vars_left;
    sc->where.run([&](kernels &k) { k.fold(sc->tables.data(), sc->tables.size(), len, c); });
    sc->vars_left--;
}

void sumcheck_values(cp_sumcheck *sc, uint64_t index, cp_bb4 *out) {
    const char *where = "cp_sumcheck_values";
    if (!sc || !out) fail(CP_ERR_INVALID_ARGUMENT, std::string(where) + ": NULL argument");
    if (index >= (uint64_t(1) << sc->vars_left))
        fail(CP_ERR_INVALID_ARGUMENT, std::string(where) + ": index " + std::to_string(index) +
                                          " is past the tables' " +
                                          std::to_string(uint64_t(1) << sc->vars_left) + " entries");
    std::vector<bb::ext> v(sc->tables.size());
    sc->where.run([&](kernels &k) {
        for (size_t i = 0; i < sc->tables.size(); i++) {
            view t = sc->tables[i];
            t.offset += static_cast<size_t>(index);
            k.download(t, 1, &v[i]);
        }
    });
    for (size_t i = 0; i < v.size(); i++) out[i] = to_abi(v[i]);
}

void bb4_batch(cp_context *ctx, int32_t gpu_index, cp_bb4_op op, const cp_bb4 *a, const cp_bb4 *b,
               cp_bb4 *out, size_t n) {
    const char *where = "cp_bb4_batch";
    if (!ctx || (n > 0 && (!a || !out || (op != CP_BB4_INV && !b))))
        fail(CP_ERR_INVALID_ARGUMENT, std::string(where) + ": NULL argument");
    if (op < CP_BB4_ADD || op > CP_BB4_INV)
        fail(CP_ERR_INVALID_ARGUMENT, std::string(where) + ": unknown op " + std::to_string(op));
    std::vector<bb::ext> ha(n), hb(op == CP_BB4_INV ? 0 : n), ho(n);
    from_abi(a, n, ha.data(), "a");
    if (op != CP_BB4_INV) from_abi(b, n, hb.data(), "b");
    const site s = site::route_one(ctx, gpu_index, nullptr, -1, "field batch", where);
    s.run([&](kernels &k) { k.field_op(op, ha.data(), op == CP_BB4_INV ? ha.data() : hb.data(), ho.data(), n); });
    for (size_t i = 0; i < n; i++) out[i] = to_abi(ho[i]);
}

}  // namespace
}  // namespace gkr
}  // namespace cp

using namespace cp;

extern "C" {

cp_status cp_bb4_batch(cp_context *ctx, int32_t gpu_index, cp_bb4_op op, const cp_bb4 *a,
                       const cp_bb4 *b, cp_bb4 *out, size_t n) {
    return guard("cp_bb4_batch", [&] { gkr::bb4_batch(ctx, gpu_index, op, a, b, out, n); });
}

cp_status cp_sumcheck_new(cp_context *ctx, int32_t gpu_index, cp_mutex *mutex, int64_t tag,
                          uint32_t num_vars, const cp_bb4 *const *tables, size_t num_tables,
                          cp_sumcheck **out) {
    return guard("cp_sumcheck_new", [&] {
        gkr::sumcheck_new(ctx, gpu_index, mutex, tag, num_vars, tables, num_tables, out);
    });
}

cp_status cp_sumcheck_round(cp_sumcheck *sc, const cp_sumcheck_term *terms, size_t num_terms,
                            uint32_t degree, cp_bb4 *evals_out) {
    return guard("cp_sumcheck_round",
                 [&] { gkr::sumcheck_round(sc, terms, num_terms, degree, evals_out); });
}

cp_status cp_sumcheck_fold(cp_sumcheck *sc, const cp_bb4 *r) {
    return guard("cp_sumcheck_fold", [&] { gkr::sumcheck_fold(sc, r); });
}

uint32_t cp_sumcheck_vars_left(const cp_sumcheck *sc) { return sc ? sc->vars_left : 0; }

int32_t cp_sumcheck_device(const cp_sumcheck *sc) { return sc ? sc->where.ordinal : -1; }

cp_status cp_sumcheck_values(cp_sumcheck *sc, uint64_t index, cp_bb4 *out) {
    return guard("cp_sumcheck_values", [&] { gkr::sumcheck_values(sc, index, out); });
}

void cp_sumcheck_free(cp_sumcheck *sc) {
    guard_void([&] {
        if (!sc) return;
        std::unique_ptr<cp_sumcheck> owned(sc);
        owned->where.release(owned->owned);
    });
}

}  // extern "C"
