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
 * Memory layouts: cp_fr is blst_fr (Montgomery form, 4 little-endian 64-bit
 * limbs), cp_g1_affine is blst_p1_affine, cp_g2_affine is blst_p2_affine
 * (coordinates in Montgomery form). blstrs' Scalar, G1Affine and G2Affine have
 * exactly these layouts.
 */
#ifndef CUDA_PROVER_GROTH16_H
#define CUDA_PROVER_GROTH16_H

#include <stddef.h>
#include <stdint.h>

#include "core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ */
/* BLS12-381 field elements and points                                 */
/* ------------------------------------------------------------------ */

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

/* ------------------------------------------------------------------ */
/* Proving key                                                         */
/* ------------------------------------------------------------------ */

/* A proving key (see below). */
typedef struct cp_key cp_key;

/* A bellperson proving key in memory (groth16::Parameters). All arrays are
 * copied; the caller may free them after the call. */
typedef struct cp_key_parts {
    cp_g1_affine alpha_g1;
    cp_g1_affine beta_g1;
    cp_g2_affine beta_g2;
    cp_g2_affine gamma_g2;
    cp_g1_affine delta_g1;
    cp_g2_affine delta_g2;
    const cp_g1_affine *ic;   size_t ic_len;
    const cp_g1_affine *h;    size_t h_len;
    const cp_g1_affine *l;    size_t l_len;
    const cp_g1_affine *a;    size_t a_len;
    const cp_g1_affine *b_g1; size_t b_g1_len;
    const cp_g2_affine *b_g2; size_t b_g2_len;
} cp_key_parts;

typedef struct cp_key_shape {
    uint64_t ic_len;
    uint64_t h_len;
    uint64_t l_len;
    uint64_t a_len;
    uint64_t b_g1_len;
    uint64_t b_g2_len;
} cp_key_shape;

/* Checks on a proving key's points. Every point is always checked to be
 * canonically encoded, on its curve and not the point at infinity (cheap).
 * Unless the caller passes CP_KEY_TRUSTED_UNCHECKED, every point is also
 * checked to lie in the prime-order subgroup (G1 or G2): about 30 us per G1
 * point and 37 us per G2 point on one core, run on every hardware thread.
 * A point that fails is CP_ERR_PARAMS_FORMAT naming its section and index.
 *
 * Files: after a full check the file's digest (SHA-256 over its size and
 * its content) is written to "<path>.verified"; a later load that computes
 * the same digest skips the subgroup and on-curve checks (the encoding
 * checks and the verifying key's and ic's points' checks still run).
 * The record is a cache: whoever can write beside the params file can write
 * it too. A record that cannot be written does not fail the load: the
 * successful status then carries a message saying why. */
#define CP_KEY_CHECKED 0u
/* The caller vouches that every point lies in its subgroup (it generated
 * the key itself, or checked it before): no subgroup check, no record. */
#define CP_KEY_TRUSTED_UNCHECKED 1u
/* Files: neither read nor write "<path>.verified": every load pays the
 * subgroup checks. */
#define CP_KEY_NO_DIGEST 2u

typedef enum cp_subgroup_status {
    /* every point was checked by this call */
    CP_SUBGROUP_CHECKED = 0,
    /* skipped: "<path>.verified" holds this file's digest */
    CP_SUBGROUP_DIGEST_MATCHED = 1,
    /* skipped: the caller passed CP_KEY_TRUSTED_UNCHECKED */
    CP_SUBGROUP_TRUSTED = 2
} cp_subgroup_status;

/* What a load did and how long it took. */
typedef struct cp_key_load_report {
    int32_t subgroup;        /* a cp_subgroup_status */
    int32_t digest_written;  /* 1 when this call wrote "<path>.verified" */
    uint64_t bytes;          /* bytes parsed (0 for parts) */
    uint64_t points;         /* points in the key */
    uint64_t read_ns;        /* reading, hashing, decoding and the cheap checks */
    uint64_t subgroup_ns;    /* the subgroup checks; 0 when skipped */
    uint64_t total_ns;
} cp_key_load_report;

/* A key from in-memory parts, checked as `flags` (CP_KEY_*) say. Each
 * length is at most 2^32 - 1 (as in the params format). report may be NULL. */
cp_status cp_key_load_parts(const cp_key_parts *parts, uint32_t flags,
                            cp_key_load_report *report, cp_key **out);

/* Reads a file written by bellperson's Parameters::write (big-endian lengths,
 * uncompressed points). The path must name a regular file (a named pipe or a
 * device is refused without blocking); it is read, not mapped, so a file
 * that shrinks while it loads is an error. An unreadable file is
 * CP_ERR_PARAMS_IO with the system's reason ("No such file or directory",
 * "Permission denied", ...); a short or corrupt file is
 * CP_ERR_PARAMS_FORMAT naming the section, point or length field. The h
 * section must hold 2^k - 1 points and b_g1 and b_g2 the same number. */
cp_status cp_key_load_file(const char *path, uint32_t flags, cp_key_load_report *report,
                           cp_key **out);

/* Same format from a buffer (no digest record). */
cp_status cp_key_load_bytes(const uint8_t *data, size_t len, uint32_t flags,
                            cp_key_load_report *report, cp_key **out);

/* cp_key_load_file with the subgroup checks, when it makes them, on device
 * `ordinal` of ctx (a CUDA device's kernels, about 1,000 field
 * multiplications a point; the host backend's threads), under that
 * device's own mutex; the verifying key's points and ic on the host. */
cp_status cp_key_load_file_on(cp_context *ctx, int32_t ordinal, const char *path,
                              uint32_t flags, cp_key_load_report *report, cp_key **out);

/* A params file confined to a directory: the file `name` of the directory
 * open as `dirfd` (one path component: no '/', not "." or ".."), opened
 * relative to dirfd without following a symbolic link (a link there is
 * CP_ERR_PARAMS_IO saying so); its "<name>.verified" record is read and
 * written in the same directory, also without following links. So a
 * directory or file swapped for a link cannot make the core read or write
 * outside the directory the caller opened. `shown` (NULL: `name`) names
 * the file in messages. With ctx NULL the subgroup checks run on the host
 * (as cp_key_load_file), else on device `ordinal` of ctx (as
 * cp_key_load_file_on). */
cp_status cp_key_load_file_at(cp_context *ctx, int32_t ordinal, int dirfd, const char *name,
                              const char *shown, uint32_t flags, cp_key_load_report *report,
                              cp_key **out);

/* Keys made in memory from their scalars (a TEST key from its toxic
 * waste): the verifying key is given, every other point is the generator of
 * its group times a scalar, computed on a device. Such points lie in the
 * prime-order subgroups by construction; the verifying key's points and ic
 * are checked as a loaded key's. */
typedef struct cp_key_builder cp_key_builder;

typedef enum cp_key_section {
    CP_SECTION_H = 0,
    CP_SECTION_L = 1,
    CP_SECTION_A = 2,
    CP_SECTION_B_G1 = 3,
    CP_SECTION_B_G2 = 4
} cp_key_section;

/* A builder for a key with vk's verifying-key points and ic and sections of
 * vk's lengths (h_len must be 2^k - 1, b_g1_len == b_g2_len; the section
 * pointers are ignored). The key's host memory is allocated here. */
cp_status cp_key_builder_new(const cp_key_parts *vk, cp_key_builder **out);

/* Points start .. start + n - 1 of `section` (a cp_key_section): the
 * generator (G2 for CP_SECTION_B_G2, G1 otherwise) times scalars[i], on
 * device `ordinal` of ctx under its own mutex. A section is filled in
 * order: start is the number of its points filled so far. */
cp_status cp_key_builder_fill(cp_context *ctx, int32_t ordinal, cp_key_builder *b,
                              int32_t section, uint64_t start, const cp_fr *scalars, size_t n);

/* The key, once every point is filled. With a path, the key is also written
 * there in bellperson's params format (through "<path>.partial", synced and
 * renamed), with its "<path>.verified" record; a record that could not be
 * written is CP_OK with a message. The builder is still freed with
 * cp_key_builder_free. */
cp_status cp_key_builder_finish(cp_key_builder *b, const char *path, cp_key **out);
void cp_key_builder_free(cp_key_builder *b);

/* The three loaders with flags CP_KEY_CHECKED and no report. */
cp_status cp_key_from_parts(const cp_key_parts *parts, cp_key **out);
cp_status cp_key_from_file(const char *path, cp_key **out);
cp_status cp_key_from_bytes(const uint8_t *data, size_t len, cp_key **out);

void cp_key_free(cp_key *key);

cp_status cp_key_shape_get(const cp_key *key, cp_key_shape *out);

/* The verifying-key points, for the caller to rebuild a verifying key. The
 * ic array is written to ic_out when ic_cap >= ic_len. */
cp_status cp_key_vk_get(const cp_key *key, cp_key_parts *vk_out, cp_g1_affine *ic_out, size_t ic_cap);

/* ------------------------------------------------------------------ */
/* Memory estimates and device preparation                             */
/* ------------------------------------------------------------------ */

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

/* ------------------------------------------------------------------ */
/* Proving                                                             */
/* ------------------------------------------------------------------ */

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

/* ------------------------------------------------------------------ */
/* Groth16 from a shape and a witness                                  */
/* ------------------------------------------------------------------ */

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

#endif /* CUDA_PROVER_GROTH16_H */
