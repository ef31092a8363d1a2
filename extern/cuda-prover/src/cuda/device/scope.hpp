// Device scoping for the CUDA device files: binding the calling thread to a
// device, and running a block on a device, with failures as cp::error.
#pragma once

#include <memory>

#include "device/errors.hpp"
#include "registry.hpp"

namespace cp {
namespace cuda_dev {

// cudaSetDevice through the registry, with its failure as a cp::error.
inline void set_device(int id) {
    try {
        cp_cuda::set_device(id);
    } catch (const cuda_error &e) {
        rethrow_sppark(e, id);
    }
}

// A cp_cuda::device_scope whose failure to enter is a cp::error.
class bound_scope {
    std::unique_ptr<cp_cuda::device_scope> scope_;

public:
    explicit bound_scope(int cuda_id) {
        try {
            scope_.reset(new cp_cuda::device_scope(cuda_id));
        } catch (const cuda_error &e) {
            rethrow_sppark(e, cuda_id);
        }
    }
    bound_scope(const bound_scope &) = delete;
    bound_scope &operator=(const bound_scope &) = delete;
};

}  // namespace cuda_dev
}  // namespace cp
