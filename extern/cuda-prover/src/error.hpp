// How the core fails inside: errors are thrown as cp::error and turned into
// a cp_status at the ABI boundary (status.hpp). Nothing escapes the ABI.
#pragma once

#include <string>
#include <utility>

#include "cuda_prover.h"

namespace cp {

struct error {
    cp_code code;
    std::string message;
};

[[noreturn]] inline void fail(cp_code code, std::string message) {
    throw error{code, std::move(message)};
}

}  // namespace cp
