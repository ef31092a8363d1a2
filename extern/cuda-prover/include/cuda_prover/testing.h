/*
 * cuda-prover core: test hooks and tuning knobs.
 *
 * Owns: the hooks tests use to make a device fail or run slower
 * (cp_inject_fault, cp_set_device_delay, cp_set_tag_delay), and the
 * per-device knobs a caller may also set in production: the memory cap
 * (cp_set_device_memory_limit), when streamed passes are shared
 * (cp_set_stream_sharing) and how many callers prove on a device at once
 * (cp_set_device_workers). All of it is state of a context (core.h).
 */
#ifndef CUDA_PROVER_TESTING_H
#define CUDA_PROVER_TESTING_H

#include <stddef.h>
#include <stdint.h>

#include "core.h"

#ifdef __cplusplus
extern "C" {
#endif

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

/* ------------------------------------------------------------------ */
/* Tuning knobs                                                        */
/* ------------------------------------------------------------------ */

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

/* The most workers cp_set_device_workers takes. */
#define CP_MAX_DEVICE_WORKERS 64

/* How many callers run device parts on `ordinal` at once (an engine's
 * workers there; 1 to CP_MAX_DEVICE_WORKERS, 1 by default). A CUDA device
 * with a resident key and no memory limit keeps a second pass lane, so that
 * one proof's upload, evaluation and NTTs run while the last one's MSMs
 * finish: with one worker the lane takes at most half of the memory left
 * beside the key, the shape and the first lane (the rest stays for other
 * keys and work); with more, whatever fits, since a second worker's proof
 * is there to use it (the device has two lanes: more than 2 is as 2). */
cp_status cp_set_device_workers(cp_context *ctx, int32_t ordinal, uint32_t workers);

#ifdef __cplusplus
}
#endif

#endif /* CUDA_PROVER_TESTING_H */
