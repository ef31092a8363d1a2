// Owns: the tower entry points (cp_tower_*): building the layers of a
// product or fraction-sum tree on one device and handing out the sumcheck
// that reduces a claim on layer i to one on layer i + 1.
#include <memory>
#include <vector>

#include "gkr/handles.hpp"
#include "status.hpp"

namespace cp {
namespace gkr {
namespace {

void tower_new(cp_context *ctx, int32_t gpu_index, cp_mutex *mutex, int64_t tag, cp_tower_kind kind,
               uint32_t log_size, const cp_bb4 *values, const cp_bb4 *denominators, cp_tower **out) {
    const char *where = "cp_tower_new";
    if (out) *out = nullptr;
    if (!ctx || !values || !out) fail(CP_ERR_INVALID_ARGUMENT, std::string(where) + ": NULL argument");
    if (kind != CP_TOWER_PRODUCT && kind != CP_TOWER_FRACTION)
        fail(CP_ERR_INVALID_ARGUMENT, std::string(where) + ": unknown kind " + std::to_string(kind));
    const bool frac = kind == CP_TOWER_FRACTION;
    if (frac && !denominators)
        fail(CP_ERR_INVALID_ARGUMENT, std::string(where) + ": CP_TOWER_FRACTION needs denominators");
    if (!frac && denominators)
        fail(CP_ERR_INVALID_ARGUMENT, std::string(where) + ": CP_TOWER_PRODUCT takes no denominators");
    if (log_size < 1 || log_size > CP_GKR_MAX_VARS)
        fail(CP_ERR_INVALID_ARGUMENT, std::string(where) + ": log_size " + std::to_string(log_size) +
                                          " is not in [1, " + std::to_string(CP_GKR_MAX_VARS) + "]");
    const size_t n = size_t(1) << log_size;
    std::vector<bb::ext> hv(n), hq(frac ? n : 0);
    from_abi(values, n, hv.data(), frac ? "numerators" : "values", ctx->threads);
    if (frac) from_abi(denominators, n, hq.data(), "denominators", ctx->threads);

    std::unique_ptr<cp_tower> t(new cp_tower);
    t->where = site::route_one(ctx, gpu_index, mutex, tag, "tower", where);
    t->kind = kind;
    t->log_size = log_size;
    t->layers.resize(log_size + 1);
    t->consumed.assign(log_size + 1, false);
    auto all = [&] {
        std::vector<buf_id> v;
        for (auto &l : t->layers) v.insert(v.end(), l.begin(), l.end());
        return v;
    };
    try {
        t->where.run([&](kernels &k) {
            t->layers[log_size].push_back(k.upload(hv.data(), n));
            if (frac) t->layers[log_size].push_back(k.upload(hq.data(), n));
            for (uint32_t i = log_size; i-- > 0;) {
                const size_t half = size_t(1) << i;
                auto &child = t->layers[i + 1];
                auto &parent = t->layers[i];
                parent.push_back(k.alloc(half));
                if (frac) {
                    parent.push_back(k.alloc(half));
                    k.fraction_layer(view{child[0], 0}, view{child[1], 0}, view{parent[0], 0},
                                     view{parent[1], 0}, half);
                } else {
                    k.product_layer(view{child[0], 0}, view{parent[0], 0}, half);
                }
            }
        });
    } catch (...) {
        t->where.release(all());
        throw;
    }
    *out = t.release();
}

void tower_root(cp_tower *t, cp_bb4 *out) {
    if (!t || !out) fail(CP_ERR_INVALID_ARGUMENT, "cp_tower_root: NULL argument");
    std::vector<bb::ext> v(t->layers[0].size());
    t->where.run([&](kernels &k) {
        for (size_t i = 0; i < v.size(); i++) k.download(view{t->layers[0][i], 0}, 1, &v[i]);
    });
    for (size_t i = 0; i < v.size(); i++) out[i] = to_abi(v[i]);
}

void tower_layer_sumcheck(cp_tower *t, uint32_t layer, const cp_bb4 *point, cp_sumcheck **out) {
    const char *where = "cp_tower_layer_sumcheck";
    if (out) *out = nullptr;
    if (!t || !out || (layer > 0 && !point))
        fail(CP_ERR_INVALID_ARGUMENT, std::string(where) + ": NULL argument");
    if (layer >= t->log_size)
        fail(CP_ERR_INVALID_ARGUMENT, std::string(where) + ": layer " + std::to_string(layer) +
                                          " is not below log_size " + std::to_string(t->log_size));
    if (t->consumed[layer + 1])
        fail(CP_ERR_INVALID_ARGUMENT, std::string(where) + ": layer " + std::to_string(layer) +
                                          " was reduced already (its child layer is folded)");
    std::vector<bb::ext> r(layer);
    from_abi(point, layer, r.data(), "point");
    const size_t half = size_t(1) << layer;
    std::unique_ptr<cp_sumcheck> sc(new cp_sumcheck);
    sc->where = t->where;
    sc->where.name = "tower layer " + std::to_string(layer) + " (tag " + std::to_string(t->where.tag) + ")";
    sc->vars_left = layer;
    try {
        sc->where.run([&](kernels &k) {
            const buf_id eq = k.alloc(half);
            sc->owned.push_back(eq);
            k.eq_table(view{eq, 0}, r.data(), layer);
            sc->tables.push_back(view{eq, 0});
            // Product: L, R. Fraction: pL, pR, qL, qR.
            for (buf_id b : t->layers[layer + 1]) {
                sc->tables.push_back(view{b, 0});
                sc->tables.push_back(view{b, half});
            }
        });
    } catch (...) {
        sc->where.release(sc->owned);
        throw;
    }
    t->consumed[layer + 1] = true;
    *out = sc.release();
}

}  // namespace
}  // namespace gkr
}  // namespace cp

using namespace cp;

extern "C" {

cp_status cp_tower_new(cp_context *ctx, int32_t gpu_index, cp_mutex *mutex, int64_t tag,
                       cp_tower_kind kind, uint32_t log_size, const cp_bb4 *values,
                       const cp_bb4 *denominators, cp_tower **out) {
    return guard("cp_tower_new", [&] {
        gkr::tower_new(ctx, gpu_index, mutex, tag, kind, log_size, values, denominators, out);
    });
}

cp_status cp_tower_root(cp_tower *t, cp_bb4 *out) {
    return guard("cp_tower_root", [&] { gkr::tower_root(t, out); });
}

cp_status cp_tower_layer_sumcheck(cp_tower *t, uint32_t layer, const cp_bb4 *point,
                                  cp_sumcheck **out) {
    return guard("cp_tower_layer_sumcheck", [&] { gkr::tower_layer_sumcheck(t, layer, point, out); });
}

int32_t cp_tower_device(const cp_tower *t) { return t ? t->where.ordinal : -1; }

void cp_tower_free(cp_tower *t) {
    guard_void([&] {
        if (!t) return;
        std::unique_ptr<cp_tower> owned(t);
        std::vector<gkr::buf_id> all;
        for (auto &l : owned->layers) all.insert(all.end(), l.begin(), l.end());
        owned->where.release(all);
    });
}

}  // extern "C"
