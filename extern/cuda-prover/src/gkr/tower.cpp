// Owns: the tower entry points (cp_tower_*): placing the input on one
// device (canonical or Montgomery words, in pieces, checked and converted
// by the backend), building the layers of a product or fraction-sum tree
// in one buffer per tree, timing both, and handing out the sumcheck that
// reduces a claim on layer i to one on layer i + 1.
#include <memory>
#include <vector>

#include "clock.hpp"
#include "gkr/handles.hpp"
#include "status.hpp"

namespace cp {
namespace gkr {
namespace {

void tower_new(cp_context *ctx, int32_t gpu_index, cp_mutex *mutex, int64_t tag, cp_tower_kind kind,
               uint32_t log_size, const cp_bb4 *values, const cp_bb4 *denominators,
               const cp_tower_options *options, cp_tower **out) {
    const char *where = options ? "cp_tower_new_with" : "cp_tower_new";
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
    cp_tower_options opts = {CP_BB4_CANONICAL, 0};
    if (options) opts = *options;
    if (opts.form != CP_BB4_CANONICAL && opts.form != CP_BB4_MONTGOMERY)
        fail(CP_ERR_INVALID_ARGUMENT, std::string(where) + ": unknown form " + std::to_string(opts.form));
    if (opts.chunk_elements > (uint64_t(1) << CP_GKR_MAX_VARS))
        fail(CP_ERR_INVALID_ARGUMENT, std::string(where) + ": chunk_elements " +
                                          std::to_string(opts.chunk_elements) + " is more than 2^" +
                                          std::to_string(CP_GKR_MAX_VARS));
    const bool canonical = opts.form == CP_BB4_CANONICAL;
    const size_t n = size_t(1) << log_size;

    std::unique_ptr<cp_tower> t(new cp_tower);
    t->where = site::route_one(ctx, gpu_index, mutex, tag, "tower", where);
    t->kind = kind;
    t->log_size = log_size;
    t->layers.resize(log_size + 1);
    t->consumed.assign(log_size + 1, false);
    // The first bad input, found on the device: (which array, index).
    int bad_array = -1;
    size_t bad_index = 0;
    try {
        t->where.run([&](kernels &k) {
            const auto t0 = clock_type::now();
            // Layer i of a tree lives at offset 2^i - 1 of its buffer.
            const size_t total = 2 * n - 1;
            const cp_bb4 *const inputs[2] = {values, denominators};
            for (int a = 0; a < (frac ? 2 : 1); a++) {
                const buf_id b = k.alloc(total);
                t->owned.push_back(b);
                for (uint32_t i = 0; i <= log_size; i++) t->layers[i].push_back(view{b, (size_t(1) << i) - 1});
            }
            for (int a = 0; a < (frac ? 2 : 1); a++) {
                const size_t first_bad = k.upload_words(t->layers[log_size][a],
                                                        reinterpret_cast<const uint32_t *>(inputs[a]),
                                                        n, canonical, static_cast<size_t>(opts.chunk_elements));
                if (first_bad < n) {
                    bad_array = a;
                    bad_index = first_bad;
                    return;
                }
            }
            t->times.upload_ns = ns_since(t0);
            const auto t1 = clock_type::now();
            for (uint32_t i = log_size; i-- > 0;) {
                const size_t half = size_t(1) << i;
                const auto &child = t->layers[i + 1];
                const auto &parent = t->layers[i];
                if (frac)
                    k.fraction_layer(child[0], child[1], parent[0], parent[1], half);
                else
                    k.product_layer(child[0], parent[0], half);
            }
            k.sync();
            t->times.layers_ns = ns_since(t1);
        });
        if (bad_array >= 0) {
            // Named as the host conversion always named it.
            const char *what = bad_array == 1 ? "denominators" : frac ? "numerators" : "values";
            (void)from_abi((bad_array == 1 ? denominators : values)[bad_index], what, bad_index);
            fail(CP_ERR_INTERNAL, std::string(where) + ": input " + std::to_string(bad_index) +
                                      " was reported bad but is not");
        }
    } catch (...) {
        t->where.release(t->owned);
        throw;
    }
    *out = t.release();
}

void tower_root(cp_tower *t, cp_bb4 *out) {
    if (!t || !out) fail(CP_ERR_INVALID_ARGUMENT, "cp_tower_root: NULL argument");
    std::vector<bb::ext> v(t->layers[0].size());
    t->where.run([&](kernels &k) {
        for (size_t i = 0; i < v.size(); i++) k.download(t->layers[0][i], 1, &v[i]);
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
            for (const view &c : t->layers[layer + 1]) {
                sc->tables.push_back(c);
                sc->tables.push_back(view{c.buf, c.offset + half});
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
        gkr::tower_new(ctx, gpu_index, mutex, tag, kind, log_size, values, denominators, nullptr, out);
    });
}

cp_status cp_tower_new_with(cp_context *ctx, int32_t gpu_index, cp_mutex *mutex, int64_t tag,
                            cp_tower_kind kind, uint32_t log_size, const cp_bb4 *values,
                            const cp_bb4 *denominators, const cp_tower_options *options,
                            cp_tower **out) {
    static const cp_tower_options defaults = {CP_BB4_CANONICAL, 0};
    return guard("cp_tower_new_with", [&] {
        gkr::tower_new(ctx, gpu_index, mutex, tag, kind, log_size, values, denominators,
                       options ? options : &defaults, out);
    });
}

cp_status cp_tower_times(const cp_tower *t, cp_tower_build_times *out) {
    return guard("cp_tower_times", [&] {
        if (!t || !out) fail(CP_ERR_INVALID_ARGUMENT, "cp_tower_times: NULL argument");
        *out = t->times;
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
        owned->where.release(owned->owned);
    });
}

}  // extern "C"
