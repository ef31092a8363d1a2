/*
 * cuda-prover core, Groth16: what a proof needs of a device's memory, and
 * a device readied for a key.
 */
#ifndef CUDA_PROVER_GROTH16_MEMORY_H
#define CUDA_PROVER_GROTH16_MEMORY_H

#include <stdint.h>

#include "../core.h"
#include "key.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Bytes of device memory one proof of a circuit with this shape needs on top
 * of the proving key, and the proving key's own device footprint. A device
 * whose memory (its free memory, capped by cp_set_device_memory_limit) holds
 * less than working_bytes + key_bytes streams the key's bases in chunks
 * instead: streamed_bytes is the least memory that works (the working set,
 * the scalars the streamed MSMs need, two of the smallest chunk buffers and
 * their MSM temporaries); below it a proof fails with
 * CP_ERR_OUT_OF_MEMORY. On a GPU, working_bytes and streamed_bytes include
 * what sppark keeps on the device for the process's lifetime (its NTT
 * tables, about 36 MiB, measured the first time the device is asked).
 * A proof from a witness and a shape (cp_groth16_prove_start_witness) needs
 * the shape's device copy on top of streamed_bytes; compact_bytes is the
 * least memory of a phased pass instead: the key streamed, the shape kept
 * on the host (a, b, c evaluated there and sent up), and the scalars of the
 * MSMs laid over a, b, c once H is computed. compact_bytes <=
 * streamed_bytes; a pass is phased only when nothing else fits, and its
 * proof is byte-identical. */
typedef struct cp_memory_estimate {
    uint64_t working_bytes;
    uint64_t key_bytes;
    uint64_t streamed_bytes;
    uint64_t compact_bytes;
} cp_memory_estimate;

/* The host backend's estimate, needing no context. For a device of a
 * context use cp_device_memory_estimate: each backend lays out its memory
 * its own way. */
cp_status cp_memory_estimate_get(const cp_key *key, uint64_t num_constraints,
                                 cp_memory_estimate *out);

/* What device `ordinal` of `ctx` needs for proofs of `num_constraints`
 * constraints with `key`, by that device's backend (the CUDA layout of the
 * key copy and the working cache, sppark's MSM temporaries). */
cp_status cp_device_memory_estimate(const cp_context *ctx, int32_t ordinal, const cp_key *key,
                                    uint64_t num_constraints, cp_memory_estimate *out);

/* Readies a device for proofs of `num_constraints` constraints with `key`:
 * uploads the proving key (once per device) and allocates the working cache,
 * holding the device's own mutex, so that the first proof pays neither.
 * The host backend allocates its cache. */
cp_status cp_device_prepare(cp_context *ctx, int32_t ordinal, const cp_key *key,
                            uint64_t num_constraints);

#ifdef __cplusplus
}
#endif

#endif /* CUDA_PROVER_GROTH16_MEMORY_H */
