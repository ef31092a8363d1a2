/*
 * cuda-prover core: the C ABI.
 *
 * Groth16 over BLS12-381 for circuits synthesized the way bellperson does it.
 * One ABI, two backends: "host" (CPU threads, N simulated devices) and "cuda"
 * (kernels from sppark). Nothing throws across this boundary: every call that
 * can fail returns a cp_status whose message, when not NULL, is owned by the
 * caller and released with cp_string_free.
 *
 * Memory layouts: cp_fr is blst_fr (Montgomery form, 4 little-endian 64-bit
 * limbs), cp_g1_affine is blst_p1_affine, cp_g2_affine is blst_p2_affine
 * (coordinates in Montgomery form). blstrs' Scalar, G1Affine and G2Affine have
 * exactly these layouts.
 *
 * Devices: an ordinal is in [0, cp_device_count): for the CUDA backend the
 * CUDA device ordinal, for the host backend the simulated device's number.
 * A context opens only the devices of its device set (cp_context_options);
 * the others keep their ordinals but are closed: every call naming one is
 * CP_ERR_DEVICE_INDEX, and the core never binds a thread to it, allocates on
 * it or creates a CUDA context on it. A gpu_index argument is
 *   >= 0                 every circuit of the call runs on that device;
 *   CP_GPU_AUTO (-1)     circuits are split in contiguous ranges over the
 *                        first min(open devices, num_circuits) open devices,
 *                        range t on the t-th;
 *   CP_GPU_BOUND (-2)    the device bound to the calling thread with
 *                        cp_select_gpu; an error when the thread has none.
 * Anything else, or an ordinal >= the device count, is CP_ERR_DEVICE_INDEX.
 */
#ifndef CUDA_PROVER_H
#define CUDA_PROVER_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CP_GPU_AUTO (-1)
#define CP_GPU_BOUND (-2)

typedef enum cp_code {
    CP_OK = 0,
    /* a null pointer, a zero length where one is required, a bad option */
    CP_ERR_INVALID_ARGUMENT = 1,
    /* gpu_index outside [-2, device_count) */
    CP_ERR_DEVICE_INDEX = 2,
    /* CP_GPU_BOUND from a thread that never called cp_select_gpu */
    CP_ERR_NO_DEVICE_BOUND = 3,
    /* a params file that cannot be opened or read */
    CP_ERR_PARAMS_IO = 4,
    /* a params file or buffer that is truncated or holds invalid points */
    CP_ERR_PARAMS_FORMAT = 5,
    /* the proving key does not fit the circuit (lengths, densities, inputs) */
    CP_ERR_SHAPE_MISMATCH = 6,
    /* the witness does not satisfy constraint a*b = c */
    CP_ERR_UNSATISFIED = 7,
    /* not enough host or device memory for the request */
    CP_ERR_OUT_OF_MEMORY = 8,
    /* an error from the device runtime */
    CP_ERR_DEVICE = 9,
    /* a fault requested through cp_inject_fault */
    CP_ERR_INJECTED_FAULT = 10,
    /* the backend does not support the request */
    CP_ERR_UNSUPPORTED = 11,
    /* a bug in the core; the message says where */
    CP_ERR_INTERNAL = 12
} cp_code;

typedef struct cp_status {
    int32_t code;   /* a cp_code */
    char *message;  /* NULL on success; otherwise free with cp_string_free */
} cp_status;

void cp_string_free(char *message);

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
/* Context and devices                                                 */
/* ------------------------------------------------------------------ */

/* Which backend a context runs on. */
typedef enum cp_backend_kind {
    CP_BACKEND_HOST = 0,
    CP_BACKEND_CUDA = 1
} cp_backend_kind;

typedef struct cp_context_options {
    /* CP_BACKEND_CUDA needs a build with the cuda feature and at least one
     * visible GPU; otherwise the call fails with CP_ERR_UNSUPPORTED or
     * CP_ERR_DEVICE. */
    int32_t backend;
    /* Host backend: number of simulated devices; 0 reads
     * CUDA_PROVER_HOST_DEVICES (default 1). Ignored by the CUDA backend. */
    int32_t host_devices;
    /* Host backend: worker threads per proof; 0 means all hardware threads. */
    int32_t host_threads;
    /* The device set: the ordinals this context opens (CUDA device ordinals
     * for the CUDA backend), or num_devices == 0 for every usable device.
     * An ordinal that does not exist, a duplicate, or (CUDA) a device that
     * lacks compute capability 7.0 or cooperative launch is
     * CP_ERR_DEVICE_INDEX.
     *
     * CUDA: a process has one set of devices it may use, fixed by its first
     * CUDA context (sppark's kernels keep per-device state for the process).
     * A later context may open a subset of it (num_devices == 0 opens the
     * whole fixed set); asking for a device outside it is
     * CP_ERR_DEVICE_INDEX naming the fixed set. Nothing touches a GPU
     * outside the set: no cudaSetDevice, no context, no allocation. */
    const int32_t *devices;
    size_t num_devices;
} cp_context_options;

/* The context owns one state per device: its mutex, its cache slot, its
 * statistics. Two contexts never share device state. */
typedef struct cp_context cp_context;

/* A proving key (see below). */
typedef struct cp_srs cp_srs;

cp_status cp_context_new(const cp_context_options *options, cp_context **out);
void cp_context_free(cp_context *ctx);

/* "host" or "cuda". Static string; never freed. */
const char *cp_context_backend_name(const cp_context *ctx);

/* Whether this library was built with the CUDA backend. */
int32_t cp_built_with_cuda(void);

/* Number of usable CUDA devices (compute capability >= 7.0 and cooperative
 * launch); 0 (with CP_OK) when the library has no CUDA backend, there is no
 * GPU or no driver. The message of a successful call may say why the count
 * is 0 or why some visible devices are left out (free it). Creates no CUDA
 * context (cudaGetDeviceCount and cudaGetDeviceProperties only). */
cp_status cp_cuda_device_count(int32_t *out);

/* The CUDA ordinals of the usable devices, ascending: writes min(cap, n) of
 * them to out and n to *len. Creates no CUDA context. */
cp_status cp_cuda_usable_devices(int32_t *out, size_t cap, size_t *len);

/* The size of the context's ordinal space: CUDA, every visible device;
 * host, the simulated devices. Some may be closed (see cp_context_devices). */
cp_status cp_device_count(const cp_context *ctx, int32_t *out);

/* The context's open devices, ascending: min(cap, n) ordinals to out, n to
 * *len. */
cp_status cp_context_devices(const cp_context *ctx, int32_t *out, size_t cap, size_t *len);

/* Whether the core touched device `ordinal` (open or closed): bound a thread
 * to it, allocated on it or created a context on it. CUDA: anything this
 * process's core did to that GPU through any context (CUDA contexts are per
 * process), or a primary context on it, whoever made it (asked from the
 * driver, which creates none for the question). Host: what this context
 * did to the simulated device. */
cp_status cp_device_touched(const cp_context *ctx, int32_t ordinal, int32_t *out);

typedef struct cp_device_info {
    int32_t ordinal;
    int32_t simulated;      /* 1 for host-backend devices */
    char name[128];
    int32_t cc_major;       /* 0 for host devices */
    int32_t cc_minor;
    uint64_t free_bytes;    /* host devices: free system memory */
    uint64_t total_bytes;
} cp_device_info;

cp_status cp_device_info_get(const cp_context *ctx, int32_t ordinal, cp_device_info *out);

/* A CUDA device's description without a context: name, compute capability
 * and total memory; free_bytes is 0 (unknown: measuring it would create a
 * context). CP_ERR_DEVICE_INDEX for an ordinal that is not visible. */
cp_status cp_cuda_device_info(int32_t cuda_ordinal, cp_device_info *out);

typedef struct cp_device_stats {
    uint64_t proofs;              /* circuits proved on this device */
    uint64_t busy_ns;             /* time spent in device parts (their device_ns summed: a
                                     device with two pass lanes overlaps them) */
    uint64_t cache_allocations;   /* times a working cache was (re)allocated (CUDA: one per
                                     pass lane) */
    uint64_t cache_bytes;         /* bytes held by the working cache now (CUDA: with the MSM buffers) */
    uint64_t srs_uploads;         /* proving keys copied to this device */
    uint64_t trims;               /* cp_device_trim calls that freed memory */
} cp_device_stats;

cp_status cp_device_stats_get(const cp_context *ctx, int32_t ordinal, cp_device_stats *out);

/* Frees the device's working cache. *freed_bytes (may be NULL) receives how
 * much was released. Waits for the device's mutex. */
cp_status cp_device_trim(cp_context *ctx, int32_t ordinal, uint64_t *freed_bytes);

/* Readies a device for proofs of `num_constraints` constraints with `srs`:
 * uploads the proving key (once per device) and allocates the working cache,
 * holding the device's own mutex, so that the first proof pays neither.
 * The host backend allocates its cache. */
cp_status cp_device_prepare(cp_context *ctx, int32_t ordinal, const cp_srs *srs,
                            uint64_t num_constraints);

/* Binds the calling thread to a device of this context (select_gpu).
 * ordinal -1 unbinds. */
cp_status cp_select_gpu(cp_context *ctx, int32_t ordinal);

/* The device bound to the calling thread for this context, or
 * CP_ERR_NO_DEVICE_BOUND. */
cp_status cp_current_gpu(const cp_context *ctx, int32_t *out);

/* Bytes of device memory one proof of a circuit with this shape needs on top
 * of the proving key, and the proving key's own device footprint. A device
 * whose memory (its free memory, capped by cp_set_device_memory_limit) holds
 * less than working_bytes + srs_bytes streams the key's bases in chunks
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
    uint64_t srs_bytes;
    uint64_t streamed_bytes;
    uint64_t compact_bytes;
} cp_memory_estimate;

/* ------------------------------------------------------------------ */
/* Per-device mutex                                                    */
/* ------------------------------------------------------------------ */

/* A mutex the caller allocates for one device and passes to every prove call
 * it routes to that device. The core holds it over the device part only.
 * A NULL mutex means the context's own mutex for the device. */
typedef struct cp_mutex cp_mutex;

cp_status cp_mutex_new(cp_mutex **out);
void cp_mutex_free(cp_mutex *m);

/* ------------------------------------------------------------------ */
/* Proving key (SRS)                                                   */
/* ------------------------------------------------------------------ */

/* A bellperson proving key in memory (groth16::Parameters). All arrays are
 * copied; the caller may free them after the call. */
typedef struct cp_srs_parts {
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
} cp_srs_parts;

typedef struct cp_srs_shape {
    uint64_t ic_len;
    uint64_t h_len;
    uint64_t l_len;
    uint64_t a_len;
    uint64_t b_g1_len;
    uint64_t b_g2_len;
} cp_srs_shape;

/* Checks on a proving key's points. Every point is always checked to be
 * canonically encoded, on its curve and not the point at infinity (cheap).
 * Unless the caller passes CP_SRS_TRUSTED_UNCHECKED, every point is also
 * checked to lie in the prime-order subgroup (G1 or G2): about 30 us per G1
 * point and 37 us per G2 point on one core, run on every hardware thread.
 * A point that fails is CP_ERR_PARAMS_FORMAT naming its section and index.
 *
 * Files: after a full check the file's digest (SHA-256 over its size and
 * its content) is written to "<path>.verified"; a later load that computes
 * the same digest skips the subgroup checks (the cheap checks still run).
 * The record is a cache: whoever can write beside the params file can write
 * it too. A record that cannot be written does not fail the load: the
 * successful status then carries a message saying why. */
#define CP_SRS_CHECKED 0u
/* The caller vouches that every point lies in its subgroup (it generated
 * the key itself, or checked it before): no subgroup check, no record. */
#define CP_SRS_TRUSTED_UNCHECKED 1u
/* Files: neither read nor write "<path>.verified": every load pays the
 * subgroup checks. */
#define CP_SRS_NO_DIGEST 2u

typedef enum cp_subgroup_status {
    /* every point was checked by this call */
    CP_SUBGROUP_CHECKED = 0,
    /* skipped: "<path>.verified" holds this file's digest */
    CP_SUBGROUP_DIGEST_MATCHED = 1,
    /* skipped: the caller passed CP_SRS_TRUSTED_UNCHECKED */
    CP_SUBGROUP_TRUSTED = 2
} cp_subgroup_status;

/* What a load did and how long it took. */
typedef struct cp_srs_load_report {
    int32_t subgroup;        /* a cp_subgroup_status */
    int32_t digest_written;  /* 1 when this call wrote "<path>.verified" */
    uint64_t bytes;          /* bytes parsed (0 for parts) */
    uint64_t points;         /* points in the key */
    uint64_t read_ns;        /* reading, hashing, decoding and the cheap checks */
    uint64_t subgroup_ns;    /* the subgroup checks; 0 when skipped */
    uint64_t total_ns;
} cp_srs_load_report;

/* A key from in-memory parts, checked as `flags` (CP_SRS_*) say. Each
 * length is at most 2^32 - 1 (as in the params format). report may be NULL. */
cp_status cp_srs_load_parts(const cp_srs_parts *parts, uint32_t flags,
                            cp_srs_load_report *report, cp_srs **out);

/* Reads a file written by bellperson's Parameters::write (big-endian lengths,
 * uncompressed points). The path must name a regular file (a named pipe or a
 * device is refused without blocking); it is read, not mapped, so a file
 * that shrinks while it loads is an error. An unreadable file is
 * CP_ERR_PARAMS_IO with the system's reason ("No such file or directory",
 * "Permission denied", ...); a short or corrupt file is
 * CP_ERR_PARAMS_FORMAT naming the section, point or length field. The h
 * section must hold 2^k - 1 points and b_g1 and b_g2 the same number. */
cp_status cp_srs_load_file(const char *path, uint32_t flags, cp_srs_load_report *report,
                           cp_srs **out);

/* Same format from a buffer (no digest record). */
cp_status cp_srs_load_bytes(const uint8_t *data, size_t len, uint32_t flags,
                            cp_srs_load_report *report, cp_srs **out);

/* cp_srs_load_file with the subgroup checks, when it makes them, on device
 * `ordinal` of ctx (a CUDA device's kernels, about 1,000 field
 * multiplications a point; the host backend's threads), under that
 * device's own mutex; the verifying key's points and ic on the host. */
cp_status cp_srs_load_file_on(cp_context *ctx, int32_t ordinal, const char *path,
                              uint32_t flags, cp_srs_load_report *report, cp_srs **out);

/* A params file confined to a directory: the file `name` of the directory
 * open as `dirfd` (one path component: no '/', not "." or ".."), opened
 * relative to dirfd without following a symbolic link (a link there is
 * CP_ERR_PARAMS_IO saying so); its "<name>.verified" record is read and
 * written in the same directory, also without following links. So a
 * directory or file swapped for a link cannot make the core read or write
 * outside the directory the caller opened. `shown` (NULL: `name`) names
 * the file in messages. With ctx NULL the subgroup checks run on the host
 * (as cp_srs_load_file), else on device `ordinal` of ctx (as
 * cp_srs_load_file_on). */
cp_status cp_srs_load_file_at(cp_context *ctx, int32_t ordinal, int dirfd, const char *name,
                              const char *shown, uint32_t flags, cp_srs_load_report *report,
                              cp_srs **out);

/* Keys made in memory from their scalars (a TEST key from its toxic
 * waste): the verifying key is given, every other point is the generator of
 * its group times a scalar, computed on a device. Such points lie in the
 * prime-order subgroups by construction; the verifying key's points and ic
 * are checked as a loaded key's. */
typedef struct cp_srs_builder cp_srs_builder;

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
cp_status cp_srs_builder_new(const cp_srs_parts *vk, cp_srs_builder **out);

/* Points start .. start + n - 1 of `section` (a cp_key_section): the
 * generator (G2 for CP_SECTION_B_G2, G1 otherwise) times scalars[i], on
 * device `ordinal` of ctx under its own mutex. A section is filled in
 * order: start is the number of its points filled so far. */
cp_status cp_srs_builder_fill(cp_context *ctx, int32_t ordinal, cp_srs_builder *b,
                              int32_t section, uint64_t start, const cp_fr *scalars, size_t n);

/* The key, once every point is filled. With a path, the key is also written
 * there in bellperson's params format (through "<path>.partial", synced and
 * renamed), with its "<path>.verified" record; a record that could not be
 * written is CP_OK with a message. The builder is still freed with
 * cp_srs_builder_free. */
cp_status cp_srs_builder_finish(cp_srs_builder *b, const char *path, cp_srs **out);
void cp_srs_builder_free(cp_srs_builder *b);

/* The three loaders with flags CP_SRS_CHECKED and no report. */
cp_status cp_srs_from_parts(const cp_srs_parts *parts, cp_srs **out);
cp_status cp_srs_from_file(const char *path, cp_srs **out);
cp_status cp_srs_from_bytes(const uint8_t *data, size_t len, cp_srs **out);

void cp_srs_free(cp_srs *srs);

cp_status cp_srs_shape_get(const cp_srs *srs, cp_srs_shape *out);

/* The verifying-key points, for the caller to rebuild a verifying key. The
 * ic array is written to ic_out when ic_cap >= ic_len. */
cp_status cp_srs_vk_get(const cp_srs *srs, cp_srs_parts *vk_out, cp_g1_affine *ic_out, size_t ic_cap);

/* The host backend's estimate, needing no context. For a device of a
 * context use cp_device_memory_estimate: each backend lays out its memory
 * its own way. */
cp_status cp_memory_estimate_get(const cp_srs *srs, uint64_t num_constraints,
                                 cp_memory_estimate *out);

/* What device `ordinal` of `ctx` needs for proofs of `num_constraints`
 * constraints with `srs`, by that device's backend (the CUDA layout of the
 * key copy and the working cache, sppark's MSM temporaries). */
cp_status cp_device_memory_estimate(const cp_context *ctx, int32_t ordinal, const cp_srs *srs,
                                    uint64_t num_constraints, cp_memory_estimate *out);

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
cp_status cp_prove_start(cp_context *ctx, const cp_srs *srs,
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
cp_status cp_prove(cp_context *ctx, const cp_srs *srs,
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
cp_status cp_groth16_shape_check(const cp_srs *srs, const cp_shape *shape);

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
cp_status cp_groth16_prove_start_witness(cp_context *ctx, const cp_srs *srs,
                                         const cp_shape *shape, const cp_witness *witnesses,
                                         size_t num_witnesses, int32_t gpu_index,
                                         cp_mutex *mutex, cp_pending **out);

/* cp_groth16_prove_start_witness followed by cp_prove_finish. */
cp_status cp_groth16_prove_witness(cp_context *ctx, const cp_srs *srs, const cp_shape *shape,
                                   const cp_witness *witnesses, size_t num_witnesses,
                                   int32_t gpu_index, cp_mutex *mutex, cp_proof *proofs_out);

/* cp_device_prepare for proofs from `shape`: also places the shape's device
 * copy. */
cp_status cp_device_prepare_shape(cp_context *ctx, int32_t ordinal, const cp_srs *srs,
                                  const cp_shape *shape);

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

/* ------------------------------------------------------------------ */
/* Test hooks                                                          */
/* ------------------------------------------------------------------ */

/* Makes the device part of the next circuit on `ordinal` whose tag equals
 * `tag` (any tag when tag is -1) fail with CP_ERR_INJECTED_FAULT. One shot.
 * ordinal -1 clears every pending fault of the context. */
cp_status cp_inject_fault(cp_context *ctx, int32_t ordinal, int64_t tag);

/* Host backend: makes each device part on `ordinal` take at least
 * `extra_ns` longer (a slower simulated device). */
cp_status cp_set_device_delay(cp_context *ctx, int32_t ordinal, uint64_t extra_ns);

/* Test hook: the device part of every circuit whose tag is `tag` takes
 * `extra_ns` longer, on any device (uneven partitions). 0 removes it. */
cp_status cp_set_tag_delay(cp_context *ctx, int64_t tag, uint64_t extra_ns);

/* Caps the memory the core may use on `ordinal` at `bytes` (0 removes the
 * cap): free memory reported for the device and checked before work is at
 * most this. A proving key that does not fit next to a proof's working set
 * is streamed through the device in chunks (cp_memory_estimate,
 * cp_timings.stream_chunks); less than cp_memory_estimate.streamed_bytes is
 * CP_ERR_OUT_OF_MEMORY. The host backend simulates the cap: it keeps the
 * key and the working set within it the way a device would. For sharing a
 * device with other processes, for keys larger than the device, and to test
 * both paths. */
cp_status cp_set_device_memory_limit(cp_context *ctx, int32_t ordinal, uint64_t bytes);

/* When proofs with the same streamed key share one pass over its chunks
 * (cp_timings.stream_shared). A pass copies the next chunk while it sums
 * the current one, so one proof's pass takes about the longer of the key's
 * copy and its sums, and n proofs' the longer of the copy and n proofs'
 * sums: sharing pays while the copy is the longer. Each proof past the
 * first keeps its MSM scalars on the device until the chunks are summed:
 * the pass's plan counts them within the memory limit. */
typedef enum cp_stream_sharing {
    /* Where it pays, by the device's last streamed pass of the same key:
     * up to copy time / one proof's sum time proofs (none before a pass of
     * the key was measured). The default. */
    CP_SHARE_AUTO = 0,
    /* Whenever the memory holds the proofs' scalars. */
    CP_SHARE_ALWAYS = 1,
    /* Never: each proof streams the key alone. */
    CP_SHARE_NEVER = 2
} cp_stream_sharing;

/* Sets when proofs on `ordinal` share streamed passes. */
cp_status cp_set_stream_sharing(cp_context *ctx, int32_t ordinal, cp_stream_sharing mode);

#ifdef __cplusplus
}
#endif

#endif /* CUDA_PROVER_H */
