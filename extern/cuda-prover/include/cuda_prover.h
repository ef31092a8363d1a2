/*
 * cuda-prover core: the C ABI.
 *
 * Groth16 over BLS12-381 for circuits synthesized the way bellperson does it,
 * and GKR over BabyBear. One ABI, two backends: "host" (CPU threads, N
 * simulated devices) and "cuda" (kernels from sppark).
 *
 * This header is the whole ABI; it includes the four headers of
 * cuda_prover/, one per family:
 *   cuda_prover/core.h     status and error codes, the context, devices,
 *                          statistics, the per-device mutex, and the ABI's
 *                          conventions (errors, device ordinals, gpu_index)
 *   cuda_prover/groth16.h  Groth16: field and curve types, proving keys,
 *                          memory estimates, proving from a, b, c or from a
 *                          shape and a witness, the key builder (one part
 *                          header each, under cuda_prover/groth16/)
 *   cuda_prover/gkr.h      GKR over BabyBear: cp_bb4_*, cp_sumcheck_*,
 *                          cp_tower_*
 *   cuda_prover/testing.h  test hooks (faults, delays) and tuning knobs
 *                          (memory limit, stream sharing)
 * Each is self-contained (groth16.h, gkr.h and testing.h include core.h):
 * a source may include only the family it uses.
 */
#ifndef CUDA_PROVER_H
#define CUDA_PROVER_H

#include "cuda_prover/core.h"
#include "cuda_prover/groth16.h"
#include "cuda_prover/gkr.h"
#include "cuda_prover/testing.h"

#endif /* CUDA_PROVER_H */
