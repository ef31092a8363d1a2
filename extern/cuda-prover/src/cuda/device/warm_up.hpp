// A synthetic witness of a key's shape for the warm-up pass run at prepare:
// scalars cycling through 0, 1 and a general value, densities set on the
// first variables, so that every kernel is loaded and the memory pool holds
// the MSM temporaries before the first real proof. Nothing about the
// witness matters but its shape.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "backend.hpp"

namespace cp {
namespace cuda_dev {

struct synthetic_witness {
    // Left uninitialized by the allocation and filled on every core (at
    // 2^27 they are 17 GB: zeroing them first on one thread, then filling
    // them on one, took seconds of each readying).
    std::unique_ptr<blst_fr[]> abc, in, aux;
    std::vector<uint64_t> da, dbi, dba;
    circuit_job job;
};

// Fills `w` for a domain of m with `key`'s shape; false when the key's
// arrays do not describe a circuit (nothing to warm up).
bool make_synthetic_witness(synthetic_witness &w, const proving_key &key, size_t m);

}  // namespace cuda_dev
}  // namespace cp
