// Owns: the digest of a params file and the "verified" record kept beside it.
//
// The digest is SHA-256 over a domain-separation tag, the file size and the
// SHA-256 of each of the file's leaves in order. The leaves are the pieces
// the parser reads (the verifying key, each length field, runs of at most
// LEAF_POINTS points of a section): they depend only on the file's content,
// so the digest is a function of the content, and the leaves are hashed in
// parallel.
//
// `<params>.verified` records that a file with this size and digest passed
// every check, subgroup membership included, so a later load that computes
// the same digest may skip the subgroup checks. The record carries an
// HMAC under a per-machine key kept outside the params directories
// (record_key.hpp): whoever may write a params directory but not read
// that key cannot make a record vouch for a file. Records and keys are
// opened without following symbolic links.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace cp {

constexpr size_t LEAF_POINTS = 4096;

struct leaf_hash {
    uint8_t h[32];
};

// SHA-256 of one leaf.
leaf_hash hash_leaf(const uint8_t *data, size_t len);

// The file digest from its size and its leaves' hashes.
std::string file_digest_hex(uint64_t size, const std::vector<leaf_hash> &leaves);

// `<params>.verified`.
std::string verified_record_path(const char *params_path);

// Record paths are relative to `dirfd` (AT_FDCWD: the working directory,
// or an absolute path).

// Whether the record at `record_path` says that a file of `size` bytes with
// `digest_hex` was verified. A missing, unreadable or malformed record is
// false (the checks then run again); it never blocks (FIFOs are refused).
bool verified_record_matches(int dirfd, const std::string &record_path, uint64_t size,
                             const std::string &digest_hex);

// Writes the record atomically (temporary file, fsync, rename, all in
// `dirfd`). Returns an empty string, or why it could not be written (the
// load still succeeds).
std::string write_verified_record(int dirfd, const std::string &record_path, uint64_t size,
                                  const std::string &digest_hex);

}  // namespace cp
