// Owns: what the process can learn of CUDA devices before any context
// (cp_built_with_cuda, cp_cuda_device_count, cp_cuda_usable_devices,
// cp_cuda_device_info), through the core's statically linked CUDA runtime;
// a build without the cuda feature answers none.
#include <string>
#include <vector>

#include "core.hpp"
#include "dispatch.hpp"
#include "status.hpp"

using namespace cp;

extern "C" {

int32_t cp_built_with_cuda(void) {
#ifdef CP_WITH_CUDA
    return 1;
#else
    return 0;
#endif
}

cp_status cp_cuda_device_count(int32_t *out) {
    std::string why;
    cp_status st = guard("cp_cuda_device_count", [&] {
        if (!out) fail(CP_ERR_INVALID_ARGUMENT, "cp_cuda_device_count: out is NULL");
        *out = 0;
#ifdef CP_WITH_CUDA
        *out = cuda_device_count(&why);
#else
        why = "built without the cuda feature";
#endif
    });
    if (st.code == CP_OK && out && *out == 0 && !why.empty()) return make_status(CP_OK, why.c_str());
    return st;
}

cp_status cp_cuda_usable_devices(int32_t *out, size_t cap, size_t *len) {
    return guard("cp_cuda_usable_devices", [&] {
        if (!len || (cap > 0 && !out))
            fail(CP_ERR_INVALID_ARGUMENT, "cp_cuda_usable_devices: NULL argument");
        *len = 0;
#ifdef CP_WITH_CUDA
        const std::vector<int> ids = cuda_usable_devices(nullptr);
        for (size_t i = 0; i < ids.size() && i < cap; i++) out[i] = ids[i];
        *len = ids.size();
#else
        (void)cap;
#endif
    });
}

cp_status cp_cuda_device_info(int32_t cuda_ordinal, cp_device_info *out) {
    return guard("cp_cuda_device_info", [&] {
        if (!out) fail(CP_ERR_INVALID_ARGUMENT, "cp_cuda_device_info: out is NULL");
#ifdef CP_WITH_CUDA
        std::string why;
        const int n = cuda_visible_count(&why);
        if (cuda_ordinal < 0 || cuda_ordinal >= n)
            fail(CP_ERR_DEVICE_INDEX, "cp_cuda_device_info: CUDA device " + std::to_string(cuda_ordinal) +
                                          " is not visible: " + std::to_string(n) + " device(s)" +
                                          (why.empty() ? std::string() : " (" + why + ")"));
        *out = cuda_device_info(cuda_ordinal);
#else
        (void)cuda_ordinal;
        fail(CP_ERR_UNSUPPORTED, "cp_cuda_device_info: this library was built without the cuda feature");
#endif
    });
}

}  // extern "C"
