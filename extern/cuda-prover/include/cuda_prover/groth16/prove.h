/*
 * cuda-prover core, Groth16: proving from a, b, c (cp_circuit): started and
 * finished apart or in one call, each proof's phases timed.
 */
#ifndef CUDA_PROVER_GROTH16_PROVE_H
#define CUDA_PROVER_GROTH16_PROVE_H

#include <stddef.h>
#include <stdint.h>

#include "../core.h"
#include "key.h"
#include "types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One synthesized circuit, laid out like bellperson's ProvingAssignment.
 * Input 0 is ONE; the last num_inputs constraints are input_i * 0 = 0.
 * Density bitmaps: bit i of word i / 64 (least significant first) is set
 * when variable i appears with a non-zero coefficient in that polynomial. */
typedef struct cp_circuit {
    const cp_fr *a;             /* evaluations of A at each constraint */
    const cp_fr *b;
    const cp_fr *c;
    size_t num_constraints;
    const cp_fr *inputs;        /* input assignment, inputs[0] == 1 */
    size_t num_inputs;
    const cp_fr *aux;           /* aux assignment */
    size_t num_aux;
    const uint64_t *a_aux_density;   /* num_aux bits */
    const uint64_t *b_input_density; /* num_inputs bits */
    const uint64_t *b_aux_density;   /* num_aux bits */
    cp_fr r;                    /* Groth16 blinding factors */
    cp_fr s;
    int64_t tag;                /* caller's label (a partition number); -1 if none */
} cp_circuit;

/* Nanoseconds per phase of one circuit's proof. */
typedef struct cp_timings {
    uint64_t wait_ns;        /* waiting for the device mutex */
    uint64_t upload_ns;      /* host to device copies (0 on host) */
    uint64_t ntt_ns;         /* the seven NTTs and the pointwise work for H */
    uint64_t msm_h_ns;
    uint64_t msm_l_ns;
    uint64_t msm_a_ns;
    uint64_t msm_b_g1_ns;
    uint64_t msm_b_g2_ns;
    uint64_t batch_add_ns;   /* sums of points whose scalar is 1 */
    uint64_t eval_ns;        /* A*w, B*w, C*w and the a*b = c check from a shape
                                (0 for circuits given as a, b, c) */
    uint64_t device_ns;      /* whole device part: from the device mutex taken to the end
                                of its tail (the wait for its MSMs, after the mutex) */
    uint64_t epilogue_ns;    /* host epilogue in cp_prove_finish */
    /* Measured: the device memory the core held during the device part at
     * its highest. CUDA: the key copy, the working caches (both pass lanes)
     * and the resident shape, plus the high-water mark of the device's
     * memory pool (the MSM buffers, sppark's NTT temporaries) over the
     * device part. Host: the working
     * cache's bytes. */
    uint64_t peak_device_bytes;
    /* The backend's estimate of the same (cp_device_memory_estimate:
     * working set, plus the key copy where the backend keeps one). */
    uint64_t estimated_device_bytes;
    /* Chunks of bases this device part streamed (cp_memory_estimate): 0 when
     * the key was resident, else the chunks of its four MSMs (H+L, A, B in
     * G1, B in G2; an MSM over no bases counts one). */
    uint64_t stream_chunks;
    /* Bytes of each of the two chunk buffers of a streamed device part; 0
     * when the key was resident. */
    uint64_t stream_buffer_bytes;
    /* Proofs that shared this streamed device part's pass over the key
     * (stream_chunks went up once and were summed for each of them): 1 when
     * it streamed alone, 0 when the key was resident. Items of one call and
     * of other callers waiting on the same device with the same key, shape
     * and cp_mutex share a pass where that pays (cp_set_stream_sharing) and
     * the device's memory holds their scalars next to the chunk buffers (at
     * most 8). The MSM times of a shared pass are split evenly among its
     * proofs. */
    uint64_t stream_shared;
    /* How a streamed device part laid out its memory (cp_memory_estimate):
     * 0 whole (or the key resident), 1 phased with a, b, c sent up from the
     * host, 2 phased with the shape's rows streamed through the device and
     * evaluated there. */
    uint64_t phased;
} cp_timings;

typedef struct cp_proof {
    cp_g1_affine a;
    cp_g2_affine b;
    cp_g1_affine c;
    int32_t device;          /* ordinal that ran this circuit's device part */
    cp_timings timings;
} cp_proof;

/* The device part is done; the host epilogue is left. */
typedef struct cp_pending cp_pending;

/* Runs the device part of every circuit (checks, H via NTTs, the MSMs),
 * holding the device's mutex over it, and returns once it is done. The
 * circuits' arrays are not used after the call returns. */
cp_status cp_prove_start(cp_context *ctx, const cp_key *key,
                         const cp_circuit *circuits, size_t num_circuits,
                         int32_t gpu_index, cp_mutex *mutex,
                         cp_pending **out);

/* Number of circuits in a pending proof and the device each ran on. */
size_t cp_pending_len(const cp_pending *p);
int32_t cp_pending_device(const cp_pending *p, size_t i);

/* The host epilogue: blinding, sums, conversion to affine. Writes
 * cp_pending_len(p) proofs to proofs_out. Consumes and frees p, on success
 * and on failure. */
cp_status cp_prove_finish(cp_pending *p, cp_proof *proofs_out);

/* Drops a pending proof without finishing it. */
void cp_pending_free(cp_pending *p);

/* cp_prove_start followed by cp_prove_finish. */
cp_status cp_prove(cp_context *ctx, const cp_key *key,
                   const cp_circuit *circuits, size_t num_circuits,
                   int32_t gpu_index, cp_mutex *mutex, cp_proof *proofs_out);

#ifdef __cplusplus
}
#endif

#endif /* CUDA_PROVER_GROTH16_PROVE_H */
