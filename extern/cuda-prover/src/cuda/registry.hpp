// The CUDA devices this process may use, and everything that makes a thread
// run on one of them. It replaces sppark's device list (util/all_gpus.cpp),
// which builds a gpu_t (a CUDA context, streams, a thread pool) on every
// visible GPU the first time it is asked anything: here the list is the
// device set of the process's first CUDA context, and a device's gpu_t is
// built the first time that device is used.
//
// Registry indices (what sppark's select_gpu, gpu_props and gpu_t::id()
// take) count the devices of the set in ascending CUDA order; the core's own
// code speaks CUDA ordinals and converts. Every cudaSetDevice of the core
// goes through set_device, which refuses a device outside the set and
// records the device as touched.
//
// The state is process-wide because a CUDA context is: it is the one
// exception to the core's "state lives in a cp_context" rule.
#pragma once

#include <string>
#include <vector>

#include <cuda_runtime.h>

#include <util/gpu_t.cuh>

namespace cp_cuda {

// The runtime spreads a context's streams over CUDA_DEVICE_MAX_CONNECTIONS
// hardware queues (8 unless set), and two streams that share a queue run
// in order: with two pass lanes a device uses about 16 streams (sppark's
// four, the copy and early-upload streams, four MSM slots per lane), and a
// pass's upload, NTTs and sorts then waited behind the other lane's MSM
// kernels (chain 2^20 on an H200: each pass's start waited for the whole
// other pass). 32 queues, unless the process chose a number: the driver
// reads it when it creates a context, so before the core's first CUDA call.
void runtime_settings();

// Visible CUDA devices (cudaGetDeviceCount); 0, with the reason in *why,
// when there is no GPU or driver. Creates no context.
int visible_devices(std::string *why);

// Whether visible device `cuda_id` can run sppark's kernels (compute
// capability >= 7.0 and cooperative launch); its properties go to *props
// (may be NULL). Creates no context.
bool usable_device(int cuda_id, cudaDeviceProp *props);

// The usable devices, ascending. Creates no context.
std::vector<int> usable_devices();

// Claims `wanted` (CUDA ordinals, usable, ascending, distinct) for a new
// context: the first claim of the process fixes its device set; a later one
// must lie inside it. An empty `wanted` becomes the whole set (every usable
// device when nothing was fixed yet). Returns "" or why the claim fails.
std::string claim_devices(std::vector<int> &wanted);

// The device's gpu_t, built on first use with the calling thread set to it
// (the thread stays there). Throws cuda_error for a device outside the set.
const gpu_t &gpu_of(int cuda_id);

// Makes the calling thread run on `cuda_id`, a device of the set, and
// records it as touched. Throws cuda_error otherwise.
void set_device(int cuda_id);

// The device this thread was last set to through set_device, or -1.
int thread_device();

// Whether the core set a thread to `cuda_id`, or a primary context is
// active on it (asked from the driver without creating one).
bool touched(int cuda_id);

// Runs the scope on `cuda_id`, then puts the thread back on the device it
// was on. A thread that never chose a device reads as device 0 from the
// runtime, and setting 0 would create a context there: such a thread is
// left on `cuda_id` rather than moved to a GPU it never used.
class device_scope {
    int prev_ = -1;
    int id_;

public:
    explicit device_scope(int cuda_id);
    ~device_scope();
    device_scope(const device_scope &) = delete;
    device_scope &operator=(const device_scope &) = delete;
};

}  // namespace cp_cuda
