/*
 * cuda-prover core: the C ABI's core, which every proof family shares.
 *
 * Owns: status and error codes (cp_code, cp_status, cp_string_free), the
 * context and its backend, devices (ordinals, the device set, info, what
 * the core touched, binding a thread to a device, gpu_index routing),
 * per-device statistics and freeing a device's working cache, and the
 * caller's per-device mutex (cp_mutex). The proof families, groth16.h and
 * gkr.h, and the hooks of testing.h build on it; cuda_prover.h includes
 * them all.
 *
 * One ABI, two backends: "host" (CPU threads, N simulated devices) and "cuda"
 * (kernels from sppark). Nothing throws across this boundary: every call that
 * can fail returns a cp_status whose message, when not NULL, is owned by the
 * caller and released with cp_string_free.
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
#ifndef CUDA_PROVER_CORE_H
#define CUDA_PROVER_CORE_H

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
    uint64_t key_uploads;         /* proving keys copied to this device */
    uint64_t trims;               /* cp_device_trim calls that freed memory */
    uint64_t held_bytes;          /* bytes the core holds on the device for the next passes,
                                     all of which cp_device_trim gives back: the working
                                     caches and MSM buffers, the shape, a streamed key's chunk
                                     buffers (CUDA: and the memory pool's idle bytes); not
                                     resident keys. Free to a job of the key the device holds
                                     next to free_bytes. */
    uint64_t limit_bytes;         /* the cap cp_set_device_memory_limit set on the core's use of
                                     this device, 0 for none: a job's room is at most this,
                                     whatever free_bytes + held_bytes say */
    uint64_t workers;             /* callers that run device parts here at once, as
                                     cp_set_device_workers set it (1 by default) */
} cp_device_stats;

cp_status cp_device_stats_get(const cp_context *ctx, int32_t ordinal, cp_device_stats *out);

/* Frees the device's working cache. *freed_bytes (may be NULL) receives how
 * much was released. Waits for the device's mutex. */
cp_status cp_device_trim(cp_context *ctx, int32_t ordinal, uint64_t *freed_bytes);

/* Binds the calling thread to a device of this context (select_gpu).
 * ordinal -1 unbinds. */
cp_status cp_select_gpu(cp_context *ctx, int32_t ordinal);

/* The device bound to the calling thread for this context, or
 * CP_ERR_NO_DEVICE_BOUND. */
cp_status cp_current_gpu(const cp_context *ctx, int32_t *out);

/* ------------------------------------------------------------------ */
/* Per-device mutex                                                    */
/* ------------------------------------------------------------------ */

/* A mutex the caller allocates for one device and passes to every prove call
 * it routes to that device. The core holds it over the device part only.
 * A NULL mutex means the context's own mutex for the device. */
typedef struct cp_mutex cp_mutex;

cp_status cp_mutex_new(cp_mutex **out);
void cp_mutex_free(cp_mutex *m);

#ifdef __cplusplus
}
#endif

#endif /* CUDA_PROVER_CORE_H */
