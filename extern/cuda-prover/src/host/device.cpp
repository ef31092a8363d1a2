// The host backend's device (device.hpp): info, lending, preparing,
// trimming, the memory checks and the shared passes' plans.
#include "host/device.hpp"

#include <sys/sysinfo.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <new>
#include <string>

#include "field.hpp"
#include "host/estimate.hpp"
#include "host/point_batch.hpp"

namespace cp {
namespace host {

namespace {

std::string mib(uint64_t b) {
    return std::to_string(b / (1 << 20)) + "." + std::to_string((b % (1 << 20)) * 10 / (1 << 20)) +
           " MiB";
}

void *host_witness_alloc(size_t bytes) {
    return ::operator new(bytes, std::align_val_t(256), std::nothrow);
}
void host_witness_free(void *p) { ::operator delete(p, std::align_val_t(256)); }

// Lent witness buffers: plain host memory (the host backend reads the
// witness where it is either way; lending keeps the orchestration's path
// the same on both backends). At most this many bytes.
constexpr uint64_t HOST_WITNESS_POOL_BYTES = uint64_t(1) << 30;

// A lent witness buffer; nothing to start early.
class host_witness_lease final : public witness_lease {
public:
    explicit host_witness_lease(std::unique_ptr<witness_buffer> b) : b_(std::move(b)) {}
    void fill(circuit_job &job, int threads) override { copy_witness_into(*b_, job, threads); }

private:
    std::unique_ptr<witness_buffer> b_;
};

}  // namespace

host_device::host_device(int ordinal, int threads)
    : ordinal_(ordinal), threads_(threads), gkr_(gkr::host_kernels(threads)),
      witnesses_(host_witness_alloc, host_witness_free, HOST_WITNESS_POOL_BYTES) {}

cp_device_info host_device::info() const {
    cp_device_info d;
    std::memset(&d, 0, sizeof d);
    d.ordinal = ordinal_;
    d.simulated = 1;
    std::snprintf(d.name, sizeof d.name, "host-sim-%d", ordinal_);
    struct sysinfo si;
    if (sysinfo(&si) == 0) {
        d.free_bytes = std::min<uint64_t>(static_cast<uint64_t>(si.freeram) * si.mem_unit,
                                          memory_limit());
        d.total_bytes = static_cast<uint64_t>(si.totalram) * si.mem_unit;
    }
    return d;
}

std::unique_ptr<witness_lease> host_device::lend_witness(size_t num_inputs, size_t num_aux) {
    auto b = witnesses_.lend(num_inputs, num_aux);
    if (!b) return nullptr;
    return std::unique_ptr<witness_lease>(new host_witness_lease(std::move(b)));
}

void host_device::generator_multiples(bool g2, const blst_fr *scalars, size_t n, void *out) {
    touched_ = true;
    host::generator_multiples(g2, scalars, n, out, threads_);
}

size_t host_device::first_outside_subgroup(bool g2, const void *points, size_t n) {
    touched_ = true;
    return host::first_outside_subgroup(g2, points, n, threads_);
}

void host_device::prepare(const proving_key &key, uint64_t num_constraints, const shape *) {
    touched_ = true;
    // Callers bound num_constraints by 2^MAX_LG_DOMAIN.
    const uint32_t lg = domain_lg_of(num_constraints);
    stream_plan plan;
    if (check_memory(key, num_constraints, plan))
        stream_.ensure(plan.buffer_bytes);
    cache_.ensure(lg, threads_);
}

size_t host_device::shared_pass_limit(const proving_key &key, const circuit_job &first, size_t n) {
    stream_plan single, plan;
    const size_t wanted = stream_share_wanted(stream_sharing(), cost_, &key, n);
    if (wanted < 2 || !check_memory(key, first.num_constraints, single)) return 1;
    return share_plan(key, first.num_constraints, single, wanted, plan);
}

void host_device::shared_part(const proving_key &key, const circuit_job *const *jobs, size_t n,
                 device_partials *const *outs, cp_timings *const *ts,
                 std::exception_ptr *errs) {
    touched_ = true;
    stream_plan single, plan;
    if (!check_memory(key, jobs[0]->num_constraints, single))
        fail(CP_ERR_INTERNAL, "a shared pass over a key that is not streamed");
    const size_t most = share_plan(key, jobs[0]->num_constraints, single, n, plan);
    if (most < n)
        fail(CP_ERR_INTERNAL, "a shared pass of " + std::to_string(n) + " proofs, " +
                                  std::to_string(most) + " fit");
    streamed_parts(key, jobs, n, plan, outs, ts, errs);
}

uint64_t host_device::trim() {
    const uint64_t streaming = 2 * stream_.bytes;
    stream_.release();
    sets_ = std::vector<scalar_set>();
    witnesses_.release_idle();  // host memory outside the cache: not counted
    return cache_.release() + streaming + gkr_->trim();
}

cp_memory_estimate host_device::estimate(const proving_key &key, uint64_t num_constraints) const {
    return host::estimate(key, num_constraints);
}

bool host_device::check_memory(const proving_key &key, uint64_t num_constraints,
                               stream_plan &plan) const {
    const uint64_t limit = memory_limit();
    const cp_memory_estimate need = estimate(key, num_constraints);
    if (need.key_bytes <= limit && need.working_bytes <= limit - need.key_bytes)
        return false;
    if (plan_stream(plan, limit, streamed_fixed_bytes(key, num_constraints), msm_sizes_of(key),
                    no_temp))
        return true;
    fail(CP_ERR_OUT_OF_MEMORY,
         "needs " + mib(need.streamed_bytes) + " on device " + std::to_string(ordinal_) +
             ", " + mib(limit) + " free (memory limit): the key (" + mib(need.key_bytes) +
             ") does not fit next to the working set (" + mib(need.working_bytes) +
             ") and streaming it in chunks needs at least " + mib(need.streamed_bytes));
}

uint64_t host_device::set_bytes(const proving_key &key) {
    return (uint64_t(key.h.size()) + key.a.size() + key.b_g1.size()) * sizeof(blst_fr);
}

size_t host_device::share_plan(const proving_key &key, uint64_t num_constraints,
                               const stream_plan &single, size_t n, stream_plan &p) const {
    return plan_shared(p, single, n, memory_limit(), streamed_fixed_bytes(key, num_constraints),
                       set_bytes(key), msm_sizes_of(key), no_temp);
}

}  // namespace host

std::unique_ptr<device> host_device(int ordinal, int threads) {
    return std::unique_ptr<device>(new host::host_device(ordinal, threads));
}

}  // namespace cp
