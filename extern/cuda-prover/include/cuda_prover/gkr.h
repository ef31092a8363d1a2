/*
 * cuda-prover core: GKR over BabyBear.
 *
 * Owns: the BabyBear degree-4 extension field (cp_bb4, cp_bb4_batch),
 * sumchecks over multilinear tables (cp_sumcheck_*) and product and
 * fraction-sum towers (cp_tower_*). Contexts, devices, cp_status and
 * cp_mutex are core.h's, and so are the gpu_index rules that the section
 * comment below calls "above".
 */
#ifndef CUDA_PROVER_GKR_H
#define CUDA_PROVER_GKR_H

#include <stddef.h>
#include <stdint.h>

#include "core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ */
/* GKR over BabyBear: sumcheck and tower proofs                        */
/* ------------------------------------------------------------------ */
/*
 * BabyBear is the field of p = 2^31 - 2^27 + 1; its degree-4 extension is
 * F_p[X] / (X^4 - 11). A cp_bb4 is c[0] + c[1] X + c[2] X^2 + c[3] X^3 with
 * every c[i] canonical (< p); a base element is a cp_bb4 with c[1..3] = 0.
 * Inputs with a coefficient >= p are CP_ERR_INVALID_ARGUMENT.
 *
 * Multilinear tables hold 2^m values; index bit m-1 is the first variable.
 * Binding (folding) the first variable at r maps t to
 * t'[j] = t[j] + r * (t[j + h] - t[j]), j < h = 2^(m-1).
 *
 * Every call that does device work runs through the same routing as the
 * Groth16 entry points: the device is chosen once, when the sumcheck or the
 * tower is created (gpu_index rules above; CP_GPU_AUTO takes the first open
 * device), and each later call runs there with the caller's cp_mutex (when
 * given) and the device's own mutex held. Faults and delays match the tag
 * given at creation. The tables live in the device's working cache:
 * cp_device_trim frees them, after which the handle's calls fail with
 * CP_ERR_INVALID_ARGUMENT. Host and CUDA backends give identical outputs.
 */
typedef struct cp_bb4 {
    uint32_t c[4];
} cp_bb4;

typedef enum cp_bb4_op {
    CP_BB4_ADD = 0,
    CP_BB4_SUB = 1,
    CP_BB4_MUL = 2,
    /* a^-1; 0 maps to 0 */
    CP_BB4_INV = 3
} cp_bb4_op;

/* out[i] = a[i] op b[i] (b unused for CP_BB4_INV) for i < n, computed by the
 * device's field kernels (Montgomery form inside). For testing the kernels
 * against a reference field. */
cp_status cp_bb4_batch(cp_context *ctx, int32_t gpu_index, cp_bb4_op op, const cp_bb4 *a,
                       const cp_bb4 *b, cp_bb4 *out, size_t n);

/* The largest number of variables of a sumcheck or tower. */
#define CP_GKR_MAX_VARS 30
/* The largest degree of a round polynomial (factors of a product term). */
#define CP_SUMCHECK_MAX_DEGREE 4

/* One term of a sum of products: coeff * prod_{k < num_factors}
 * table[factors[k]], num_factors in [1, CP_SUMCHECK_MAX_DEGREE]. */
typedef struct cp_sumcheck_term {
    cp_bb4 coeff;
    uint32_t num_factors;
    uint32_t factors[4];
} cp_sumcheck_term;

/* A sumcheck over num_tables multilinear tables of the same size on one
 * device. */
typedef struct cp_sumcheck cp_sumcheck;

/* Places tables[0..num_tables) (2^num_vars values each) on the device.
 * num_vars <= CP_GKR_MAX_VARS; num_tables in [1, 64]. */
cp_status cp_sumcheck_new(cp_context *ctx, int32_t gpu_index, cp_mutex *mutex, int64_t tag,
                          uint32_t num_vars, const cp_bb4 *const *tables, size_t num_tables,
                          cp_sumcheck **out);

/* The round polynomial g(t) = sum_{y} sum_terms coeff * prod_k
 * table[factors[k]](t, y) over the remaining variables y, as its values
 * g(0), ..., g(degree) into evals_out (degree + 1 entries). degree is at
 * least the largest num_factors and at most CP_SUMCHECK_MAX_DEGREE;
 * num_terms is in [1, 16].
 * CP_ERR_INVALID_ARGUMENT when no variable is left. */
cp_status cp_sumcheck_round(cp_sumcheck *sc, const cp_sumcheck_term *terms, size_t num_terms,
                            uint32_t degree, cp_bb4 *evals_out);

/* Binds the first remaining variable of every table at r. */
cp_status cp_sumcheck_fold(cp_sumcheck *sc, const cp_bb4 *r);

/* Variables left to bind. */
uint32_t cp_sumcheck_vars_left(const cp_sumcheck *sc);
/* The device the sumcheck runs on, or -1 for NULL. */
int32_t cp_sumcheck_device(const cp_sumcheck *sc);

/* Entry `index` (< 2^vars_left) of every table, into out[0..num_tables);
 * after the last fold, index 0 is each table's value at the challenges. */
cp_status cp_sumcheck_values(cp_sumcheck *sc, uint64_t index, cp_bb4 *out);

/* Frees the sumcheck's tables. */
void cp_sumcheck_free(cp_sumcheck *sc);

typedef enum cp_tower_kind {
    /* V_i[j] = V_{i+1}[j] * V_{i+1}[j + 2^i]: the root is the product */
    CP_TOWER_PRODUCT = 0,
    /* (p, q)_i[j] = (pL qR + pR qL, qL qR) with L = [j], R = [j + 2^i]:
     * the root is the sum of the fractions p/q (LogUp) */
    CP_TOWER_FRACTION = 1
} cp_tower_kind;

/* The layers of a product tree or a fraction-sum tree over 2^log_size
 * values, built on one device. */
typedef struct cp_tower cp_tower;

/* Builds the layers from `values` (the numerators for CP_TOWER_FRACTION)
 * and `denominators` (CP_TOWER_FRACTION only; NULL otherwise), 2^log_size
 * entries each, 1 <= log_size <= CP_GKR_MAX_VARS. */
cp_status cp_tower_new(cp_context *ctx, int32_t gpu_index, cp_mutex *mutex, int64_t tag,
                       cp_tower_kind kind, uint32_t log_size, const cp_bb4 *values,
                       const cp_bb4 *denominators, cp_tower **out);

/* How the coefficients of a cp_bb4 array are written. */
typedef enum cp_bb4_form {
    /* canonical: c[i] < p */
    CP_BB4_CANONICAL = 0,
    /* Montgomery form with R = 2^32: c[i] = (canonical * 2^32) mod p, < p.
     * These are the words of Plonky3's BabyBear (MontyField31) and of its
     * degree-4 binomial extension, so such arrays pass without a conversion
     * on the host. */
    CP_BB4_MONTGOMERY = 1
} cp_bb4_form;

/* Options of cp_tower_new_with. A zeroed struct gives cp_tower_new's
 * behaviour. */
typedef struct cp_tower_options {
    /* how values and denominators are written */
    cp_bb4_form form;
    /* Elements per piece of the input's copy to the device (CUDA: per
     * pinned staging buffer, at most 2^22, larger values are cut to it;
     * host: per conversion step); 0 = the backend's default (CUDA 2^19,
     * host 2^16); at most 2^30. It changes how the input travels, never the
     * tower. */
    uint64_t chunk_elements;
} cp_tower_options;

/* cp_tower_new with options (NULL = a zeroed cp_tower_options). The input
 * is copied to the device in pieces, converted (canonical form) and checked
 * there: a coefficient >= p is CP_ERR_INVALID_ARGUMENT naming the first bad
 * index. */
cp_status cp_tower_new_with(cp_context *ctx, int32_t gpu_index, cp_mutex *mutex, int64_t tag,
                            cp_tower_kind kind, uint32_t log_size, const cp_bb4 *values,
                            const cp_bb4 *denominators, const cp_tower_options *options,
                            cp_tower **out);

/* Where the time of building a tower went. */
typedef struct cp_tower_build_times {
    /* copying the input to the device, with its conversion and check */
    uint64_t upload_ns;
    /* building every layer above the input */
    uint64_t layers_ns;
} cp_tower_build_times;

/* The build times of `t`. */
cp_status cp_tower_times(const cp_tower *t, cp_tower_build_times *out);

/* The root: out[0] (the product, or the numerator) and, for
 * CP_TOWER_FRACTION, out[1] (the denominator). */
cp_status cp_tower_root(cp_tower *t, cp_bb4 *out);

/* The sumcheck that reduces a claim on layer `layer` (in [0, log_size)) at
 * `point` (layer coordinates) to one on layer + 1: its tables are eq(point,
 * y), then L and R of layer + 1 (product), or pL, pR, qL, qR (fraction),
 * with `layer` variables. The tower's layer + 1 is consumed (folded in
 * place); each layer can be reduced once. */
cp_status cp_tower_layer_sumcheck(cp_tower *t, uint32_t layer, const cp_bb4 *point,
                                  cp_sumcheck **out);

/* The device the tower lives on, or -1 for NULL. */
int32_t cp_tower_device(const cp_tower *t);

/* Frees the tower's layers. */
void cp_tower_free(cp_tower *t);

#ifdef __cplusplus
}
#endif

#endif /* CUDA_PROVER_GKR_H */
