/*
 * cuda-prover core: Groth16 over BLS12-381.
 *
 * Owns: the field and curve types (cp_fr, cp_fp, cp_fp2, cp_g1_affine,
 * cp_g2_affine), proving keys (cp_key: loading and checking them, the key
 * builder, their shape and verifying key), memory estimates and readying a
 * device for a key, proving from a, b, c (cp_circuit, cp_prove_start /
 * cp_prove_finish, cp_timings, cp_proof), and shapes with proving from a
 * witness (cp_shape, cp_groth16_*). Circuits are synthesized the way
 * bellperson does it. Contexts, devices, gpu_index, cp_status and cp_mutex
 * are core.h's.
 *
 * The family's parts, one header each under groth16/ (each self-contained):
 *   types.h   the field elements and points
 *   key.h     proving keys: loading and checking them, the key builder
 *   memory.h  memory estimates, a device readied for a key
 *   prove.h   proving from a, b, c
 *   shape.h   shapes, proving from a shape and a witness
 *
 * Memory layouts: cp_fr is blst_fr (Montgomery form, 4 little-endian 64-bit
 * limbs), cp_g1_affine is blst_p1_affine, cp_g2_affine is blst_p2_affine
 * (coordinates in Montgomery form). blstrs' Scalar, G1Affine and G2Affine have
 * exactly these layouts.
 */
#ifndef CUDA_PROVER_GROTH16_H
#define CUDA_PROVER_GROTH16_H

#include "groth16/types.h"
#include "groth16/key.h"
#include "groth16/memory.h"
#include "groth16/prove.h"
#include "groth16/shape.h"

#endif /* CUDA_PROVER_GROTH16_H */
