// Owns: the checks of a Groth16 circuit before any device work: a circuit
// given as a, b, c (pointers, sizes, density counts) or a witness against
// its shape, and either against the proving key's query lengths; each
// fills the circuit_job a backend runs. Failures name the circuit.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "core.hpp"

namespace cp {

// "circuit K (tag T)", how every message names a circuit.
std::string circuit_name(size_t k, int64_t tag);

// The key's query lengths against what the job needs.
void check_key(const std::string &who, const circuit_job &job, const proving_key &key);

// Cheap checks of a circuit given as a, b, c (pointers, sizes, shape
// against the key); fills the job.
circuit_job check_circuit(size_t k, const cp_circuit &c, const proving_key &key);

// A job from a shape alone (no witness yet): what prepare and the shape
// check need.
circuit_job shape_job(const std::string &who, const shape &sh);

// Checks of one witness against its shape; fills the job.
circuit_job check_witness(size_t k, const cp_witness &w, const shape &sh, const proving_key &key);

}  // namespace cp
