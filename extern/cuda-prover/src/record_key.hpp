// Owns: the per-machine key that authenticates "verified" records.
//
// A `<params>.verified` record lets a later load skip the subgroup checks,
// so it must not be something whoever may write the params directory can
// make: each record carries an HMAC-SHA256 under a 32-byte secret kept
// outside every params directory, readable by its owner only:
//   $CUDA_PROVER_STATE_DIR/record.key, else
//   $XDG_STATE_HOME/cuda-prover/record.key, else
//   $HOME/.local/state/cuda-prover/record.key.
// It is made (from the kernel's random source, mode 0600, in a 0700
// folder) by the first load that writes a record. Without it no record is
// trusted and every load checks every point.
#pragma once

#include <cstdint>
#include <string>

namespace cp {

struct record_key {
    uint8_t k[32];
};

// Reads the key, making it when `create` and it is missing. False, with
// `why` set, when there is none to use (no location, unreadable, a file
// others may read or write, the wrong size).
bool load_record_key(bool create, record_key *out, std::string *why);

// HMAC-SHA256 of `msg` under `key`, as 64 hex digits.
std::string hmac_hex(const record_key &key, const std::string &msg);

}  // namespace cp
