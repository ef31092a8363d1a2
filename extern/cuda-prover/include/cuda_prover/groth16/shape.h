/*
 * cuda-prover core, Groth16: a circuit's shape (its constraints, fixed for
 * every proof) and proving from a shape and a witness.
 */
#ifndef CUDA_PROVER_GROTH16_SHAPE_H
#define CUDA_PROVER_GROTH16_SHAPE_H

#include <stddef.h>
#include <stdint.h>

#include "../core.h"
#include "key.h"
#include "prove.h"
#include "types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The constraints of a circuit, fixed for every proof of it: A, B and C as
 * sparse matrices in CSR form over the columns [inputs..., aux...], one row
 * per constraint, laid out like cp_circuit (input 0 is ONE; the last
 * num_inputs rows are input_i * 0 = 0). Only the witness changes between
 * proofs: the core evaluates a = A*w, b = B*w, c = C*w itself, on the device,
 * and checks a*b = c at every row before it proves.
 *
 * An entry's coeff is CP_COEFF_ONE (+1) or CP_COEFF_MINUS_ONE (-1), which cost
 * no multiplication, or k >= 2 for coeffs[k - 2]. Zero coefficients are left
 * out; densities follow from the matrices (a column is dense in A or B when
 * any entry of its column is there). */
#define CP_COEFF_ONE 0u
#define CP_COEFF_MINUS_ONE 1u

typedef struct cp_shape_entry {
    uint32_t col;    /* < num_inputs + num_aux; inputs first */
    uint32_t coeff;  /* CP_COEFF_ONE, CP_COEFF_MINUS_ONE or 2 + index */
} cp_shape_entry;

typedef struct cp_shape_matrix {
    const uint64_t *row_ptr;        /* num_constraints + 1 offsets, row_ptr[0] == 0 */
    const cp_shape_entry *entries;  /* row_ptr[num_constraints] entries */
} cp_shape_matrix;

typedef struct cp_shape_parts {
    uint64_t num_constraints;
    uint64_t num_inputs;
    uint64_t num_aux;
    cp_shape_matrix a, b, c;
    const cp_fr *coeffs;            /* coefficients other than +1 and -1 */
    size_t num_coeffs;
} cp_shape_parts;

/* A circuit's constraints, copied and validated (offsets, columns,
 * coefficient indices). Device copies live in each device's cache next to
 * the key: placed by cp_device_prepare_shape or the first proof, freed by
 * cp_device_trim or with the shape. */
typedef struct cp_shape cp_shape;

cp_status cp_shape_new(const cp_shape_parts *parts, cp_shape **out);
void cp_shape_free(cp_shape *shape);

/* What follows from a shape: its sizes and the set bits of its densities. */
typedef struct cp_shape_info {
    uint64_t num_constraints;
    uint64_t num_inputs;
    uint64_t num_aux;
    uint64_t nonzeros;          /* entries of A, B and C together */
    uint64_t a_aux_count;       /* aux columns used by A */
    uint64_t b_input_count;     /* input columns used by B */
    uint64_t b_aux_count;       /* aux columns used by B */
    uint64_t device_bytes;      /* what a device copy takes */
} cp_shape_info;

cp_status cp_shape_info_get(const cp_shape *shape, cp_shape_info *out);

/* Checks that a proving key and a shape belong together (query lengths and
 * densities); the message names the first disagreement. */
cp_status cp_groth16_shape_check(const cp_key *key, const cp_shape *shape);

/* One proof's witness. */
typedef struct cp_witness {
    const cp_fr *inputs;        /* inputs[0] == 1 */
    size_t num_inputs;
    const cp_fr *aux;
    size_t num_aux;
    cp_fr r;                    /* Groth16 blinding factors */
    cp_fr s;
    int64_t tag;                /* caller's label (a partition number); -1 if none */
} cp_witness;

/* Like cp_prove_start for circuits given by a shape and their witnesses:
 * the witness goes to the device once and serves the evaluation of a, b, c
 * and the MSMs. A witness that does not satisfy the shape fails with
 * CP_ERR_UNSATISFIED naming the first row; a shape that does not fit the key
 * or the witness with CP_ERR_SHAPE_MISMATCH. Proofs are those cp_prove_start
 * makes from the same a, b, c. */
cp_status cp_groth16_prove_start_witness(cp_context *ctx, const cp_key *key,
                                         const cp_shape *shape, const cp_witness *witnesses,
                                         size_t num_witnesses, int32_t gpu_index,
                                         cp_mutex *mutex, cp_pending **out);

/* cp_groth16_prove_start_witness followed by cp_prove_finish. */
cp_status cp_groth16_prove_witness(cp_context *ctx, const cp_key *key, const cp_shape *shape,
                                   const cp_witness *witnesses, size_t num_witnesses,
                                   int32_t gpu_index, cp_mutex *mutex, cp_proof *proofs_out);

/* cp_device_prepare for proofs from `shape`: also places the shape's device
 * copy. */
cp_status cp_device_prepare_shape(cp_context *ctx, int32_t ordinal, const cp_key *key,
                                  const cp_shape *shape);

#ifdef __cplusplus
}
#endif

#endif /* CUDA_PROVER_GROTH16_SHAPE_H */
