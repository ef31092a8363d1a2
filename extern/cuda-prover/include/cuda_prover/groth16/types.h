/*
 * cuda-prover core, Groth16: the BLS12-381 field elements and points of the
 * ABI (layouts: groth16.h).
 */
#ifndef CUDA_PROVER_GROTH16_TYPES_H
#define CUDA_PROVER_GROTH16_TYPES_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cp_fr {
    uint64_t l[4];
} cp_fr;

typedef struct cp_fp {
    uint64_t l[6];
} cp_fp;

typedef struct cp_fp2 {
    cp_fp fp[2];
} cp_fp2;

typedef struct cp_g1_affine {
    cp_fp x;
    cp_fp y;
} cp_g1_affine;

typedef struct cp_g2_affine {
    cp_fp2 x;
    cp_fp2 y;
} cp_g2_affine;

#ifdef __cplusplus
}
#endif

#endif /* CUDA_PROVER_GROTH16_TYPES_H */
