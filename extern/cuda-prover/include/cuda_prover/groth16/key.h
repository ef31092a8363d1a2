/*
 * cuda-prover core, Groth16: proving keys (cp_key): from parts, files or
 * bytes, their points checked as the flags say, the key builder, their
 * shape and verifying key.
 */
#ifndef CUDA_PROVER_GROTH16_KEY_H
#define CUDA_PROVER_GROTH16_KEY_H

#include <stddef.h>
#include <stdint.h>

#include "../core.h"
#include "types.h"

#ifdef __cplusplus
extern "C" {
#endif

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

#ifdef __cplusplus
}
#endif

#endif /* CUDA_PROVER_GROTH16_KEY_H */
