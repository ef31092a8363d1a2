// The process's CUDA device set, lazily built gpu_t objects, the thread's
// device and the record of touched devices (see registry.hpp), and the four
// functions sppark's headers declare for its device list: select_gpu,
// gpu_props, ngpus and all_gpus, answered from the set.
#include "registry.hpp"

#include <cuda.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <set>

namespace cp_cuda {
namespace {

constexpr int MIN_CC_MAJOR = 7;

struct registry {
    std::mutex mu;
    bool fixed = false;
    std::vector<int> ids;                // the set, ascending CUDA ordinals
    std::vector<cudaDeviceProp> props;   // per registry index
    std::vector<std::unique_ptr<gpu_t>> gpus;  // per registry index, built lazily
    std::vector<const gpu_t *> all;      // all_gpus(), built once
    bool all_built = false;
    std::set<int> touched;               // CUDA ordinals set by the core
};

// Never destroyed: gpu_t objects hold streams and threads that must not be
// torn down after the CUDA runtime during process exit.
registry &reg() {
    static registry *r = new registry;
    return *r;
}

thread_local int t_device = -1;


[[noreturn]] void throw_cuda(cudaError_t e, const std::string &what) {
    (void)cudaGetLastError();
    throw cuda_error{-(int)e, what + ": " + cudaGetErrorString(e)};
}

int index_of(const registry &r, int cuda_id) {
    auto it = std::lower_bound(r.ids.begin(), r.ids.end(), cuda_id);
    return it != r.ids.end() && *it == cuda_id ? int(it - r.ids.begin()) : -1;
}

std::string list(const std::vector<int> &ids) {
    std::string s;
    for (int id : ids) s += (s.empty() ? "" : ",") + std::to_string(id);
    return "{" + s + "}";
}

// Fixes the set to every usable device when nothing claimed one yet (a
// caller of sppark's functions before any context). Lock held.
void fix_default(registry &r) {
    if (r.fixed) return;
    r.ids = usable_devices();
    r.props.resize(r.ids.size());
    for (size_t i = 0; i < r.ids.size(); i++) usable_device(r.ids[i], &r.props[i]);
    r.gpus.resize(r.ids.size());
    r.fixed = true;
}

// Lock held.
void set_device_locked(registry &r, int cuda_id) {
    if (index_of(r, cuda_id) < 0)
        throw cuda_error{-(int)cudaErrorInvalidDevice,
                         "CUDA device " + std::to_string(cuda_id) +
                             " is outside this process's device set " + list(r.ids)};
    r.touched.insert(cuda_id);
    const cudaError_t e = cudaSetDevice(cuda_id);
    if (e != cudaSuccess) throw_cuda(e, "cudaSetDevice(" + std::to_string(cuda_id) + ")");
    t_device = cuda_id;
}

// Lock held; r.fixed.
const gpu_t &gpu_at(registry &r, size_t index) {
    if (index >= r.ids.size())
        throw cuda_error{-(int)cudaErrorInvalidDevice,
                         "device index " + std::to_string(index) + " is outside this process's " +
                             "device set " + list(r.ids)};
    set_device_locked(r, r.ids[index]);
    if (!r.gpus[index]) r.gpus[index].reset(new gpu_t((int)index, r.ids[index], r.props[index]));
    return *r.gpus[index];
}

// Whether the driver has an active primary context on the device. The
// driver functions come through the runtime, so nothing links libcuda.
bool primary_context_active(int cuda_id) {
    using get_fn = CUresult (*)(CUdevice *, int);
    using state_fn = CUresult (*)(CUdevice, unsigned int *, int *);
    static get_fn get = nullptr;
    static state_fn state = nullptr;
    static std::once_flag once;
    std::call_once(once, [] {
        void *p = nullptr;
        cudaDriverEntryPointQueryResult q;
        if (cudaGetDriverEntryPointByVersion("cuDeviceGet", &p, 12000, cudaEnableDefault, &q) ==
                cudaSuccess && q == cudaDriverEntryPointSuccess)
            get = (get_fn)p;
        p = nullptr;
        if (cudaGetDriverEntryPointByVersion("cuDevicePrimaryCtxGetState", &p, 12000,
                                             cudaEnableDefault, &q) == cudaSuccess &&
            q == cudaDriverEntryPointSuccess)
            state = (state_fn)p;
        (void)cudaGetLastError();
    });
    if (!get || !state) return false;
    CUdevice dev;
    unsigned int flags = 0;
    int active = 0;
    if (get(&dev, cuda_id) != CUDA_SUCCESS) return false;
    return state(dev, &flags, &active) == CUDA_SUCCESS && active != 0;
}

}  // namespace

void runtime_settings() {
    static std::once_flag once;
    std::call_once(once, [] { (void)setenv("CUDA_DEVICE_MAX_CONNECTIONS", "32", 0); });
}

int visible_devices(std::string *why) {
    runtime_settings();
    int n = 0;
    const cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        if (why) *why = std::string("CUDA runtime: ") + cudaGetErrorString(e);
        return 0;
    }
    if (n == 0 && why) *why = "no CUDA device visible";
    return n;
}

bool usable_device(int cuda_id, cudaDeviceProp *props) {
    runtime_settings();
    cudaDeviceProp p;
    if (cudaGetDeviceProperties(&p, cuda_id) != cudaSuccess) {
        (void)cudaGetLastError();
        return false;
    }
    if (props) *props = p;
    return p.major >= MIN_CC_MAJOR && p.cooperativeLaunch;
}

std::vector<int> usable_devices() {
    std::vector<int> out;
    const int n = visible_devices(nullptr);
    for (int id = 0; id < n; id++)
        if (usable_device(id, nullptr)) out.push_back(id);
    return out;
}

std::string claim_devices(std::vector<int> &wanted) {
    registry &r = reg();
    std::lock_guard<std::mutex> lk(r.mu);
    if (!r.fixed && !wanted.empty()) {
        std::vector<cudaDeviceProp> props(wanted.size());
        for (size_t i = 0; i < wanted.size(); i++)
            if (!usable_device(wanted[i], &props[i]))
                return "CUDA device " + std::to_string(wanted[i]) +
                       " lacks compute capability 7.0 or cooperative launch";
        r.ids = wanted;
        r.props = std::move(props);
        r.gpus.resize(r.ids.size());
        r.fixed = true;
        return "";
    }
    fix_default(r);
    if (wanted.empty()) {
        wanted = r.ids;
        return r.ids.empty() ? "no usable CUDA device" : "";
    }
    for (int id : wanted)
        if (index_of(r, id) < 0)
            return "CUDA device " + std::to_string(id) + " is outside this process's device set " +
                   list(r.ids) +
                   ": a process uses the devices of its first CUDA context for its whole life";
    return "";
}

const gpu_t &gpu_of(int cuda_id) {
    registry &r = reg();
    std::lock_guard<std::mutex> lk(r.mu);
    fix_default(r);
    const int i = index_of(r, cuda_id);
    if (i < 0)
        throw cuda_error{-(int)cudaErrorInvalidDevice,
                         "CUDA device " + std::to_string(cuda_id) +
                             " is outside this process's device set " + list(r.ids)};
    return gpu_at(r, (size_t)i);
}

void set_device(int cuda_id) {
    registry &r = reg();
    std::lock_guard<std::mutex> lk(r.mu);
    fix_default(r);
    set_device_locked(r, cuda_id);
}

int thread_device() { return t_device; }

bool touched(int cuda_id) {
    {
        registry &r = reg();
        std::lock_guard<std::mutex> lk(r.mu);
        if (r.touched.count(cuda_id)) return true;
    }
    return primary_context_active(cuda_id);
}

device_scope::device_scope(int cuda_id) : id_(cuda_id) {
    prev_ = t_device;
    if (prev_ < 0) {
        // A device the caller chose itself (not 0: see the header).
        int d = -1;
        if (cudaGetDevice(&d) == cudaSuccess && d > 0) prev_ = d;
        (void)cudaGetLastError();
    }
    if (t_device != cuda_id) set_device(cuda_id);
}

device_scope::~device_scope() {
    if (prev_ < 0 || prev_ == id_) return;
    // The thread was on prev_ already, so this creates no context.
    if (cudaSetDevice(prev_) == cudaSuccess)
        t_device = prev_;
    else
        (void)cudaGetLastError();
}

}  // namespace cp_cuda

// sppark's device list, over the process's device set.

size_t ngpus() {
    using namespace cp_cuda;
    registry &r = reg();
    std::lock_guard<std::mutex> lk(r.mu);
    fix_default(r);
    return r.ids.size();
}

const gpu_t &select_gpu(int id) {
    using namespace cp_cuda;
    registry &r = reg();
    std::lock_guard<std::mutex> lk(r.mu);
    fix_default(r);
    if (r.ids.empty()) throw_cuda(cudaErrorNoDevice, "select_gpu");
    if (id == -1) {
        // The device the thread runs on, when it is one of the set.
        int cuda_id = t_device;
        if (cuda_id < 0 && cudaGetDevice(&cuda_id) != cudaSuccess) throw_cuda(cudaGetLastError(), "cudaGetDevice");
        const int i = index_of(r, cuda_id);
        if (i < 0)
            throw cuda_error{-(int)cudaErrorInvalidDevice,
                             "select_gpu(-1): the thread's device " + std::to_string(cuda_id) +
                                 " is outside this process's device set " + list(r.ids)};
        id = i;
    }
    if (id < 0) throw cuda_error{-(int)cudaErrorInvalidDevice, "select_gpu: negative index"};
    return gpu_at(r, (size_t)id);
}

const cudaDeviceProp &gpu_props(int id) {
    using namespace cp_cuda;
    registry &r = reg();
    std::lock_guard<std::mutex> lk(r.mu);
    fix_default(r);
    if (id < 0 || (size_t)id >= r.props.size())
        throw cuda_error{-(int)cudaErrorInvalidDevice,
                         "gpu_props: device index " + std::to_string(id) + " is outside the set " +
                             list(r.ids)};
    return r.props[(size_t)id];
}

const std::vector<const gpu_t *> &all_gpus() {
    using namespace cp_cuda;
    registry &r = reg();
    std::lock_guard<std::mutex> lk(r.mu);
    fix_default(r);
    if (!r.all_built) {
        const int prev = t_device;
        for (size_t i = 0; i < r.ids.size(); i++) r.all.push_back(&gpu_at(r, i));
        if (prev >= 0) set_device_locked(r, prev);
        r.all_built = true;
    }
    return r.all;
}
