// Owns: the HOST backend's device (cp::host_devices): a simulated device
// that runs the device part of a proof on CPU threads (with a shape: a, b,
// c evaluated from the witness and checked first) in its working cache
// (working_cache.hpp). It never copies the proving key, so key_uploads
// stays 0; under a memory limit it simulates a device: when the key and the
// working set do not fit the limit together, the key's bases are streamed
// in chunks through two bounded buffers (stream_plan.hpp,
// host/streamed_msm.hpp), with the same decisions a GPU takes, and proofs
// waiting with the same key share one pass over its chunks
// (device::shared_part). Its member functions lie by concept in
//   device.cpp          the device: info, lending, preparing, trimming,
//                       the memory checks and the shared passes' plans
//   device_part.cpp     the front (a, b, c and H) and a device part with
//                       the key kept whole
//   streamed_part.cpp   the device parts of proofs that stream the key
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <vector>

#include "backend.hpp"
#include "clock.hpp"
#include "gkr/kernels.hpp"
#include "host/streamed_msm.hpp"
#include "host/working_cache.hpp"
#include "stream_plan.hpp"
#include "witness_pool.hpp"

namespace cp {
namespace host {

class host_device final : public device, public groth16_device {
public:
    host_device(int ordinal, int threads);

    void bind_thread() override { touched_ = true; }
    bool touched() const override { return touched_.load(); }
    cp_device_info info() const override;
    std::unique_ptr<witness_lease> lend_witness(size_t num_inputs, size_t num_aux) override;
    void generator_multiples(bool g2, const blst_fr *scalars, size_t n, void *out) override;
    size_t first_outside_subgroup(bool g2, const void *points, size_t n) override;
    void prepare(const proving_key &key, uint64_t num_constraints, const shape *) override;
    std::unique_ptr<device_tail> device_part(const proving_key &key, const circuit_job &job,
                                             device_partials &out, cp_timings &t) override;
    size_t shared_pass_limit(const proving_key &key, const circuit_job &first, size_t n) override;
    void shared_part(const proving_key &key, const circuit_job *const *jobs, size_t n,
                     device_partials *const *outs, cp_timings *const *ts,
                     std::exception_ptr *errs) override;
    uint64_t trim() override;
    uint64_t cache_bytes() const override { return cache_.bytes + gkr_->bytes(); }
    uint64_t held_bytes() const override { return cache_bytes() + 2 * stream_.bytes; }
    groth16_device &groth16() override { return *this; }
    gkr::kernels &gkr() override {
        touched_ = true;
        return *gkr_;
    }
    uint64_t cache_allocations() const override { return cache_.allocations; }
    uint64_t key_uploads() const override { return 0; }
    cp_memory_estimate estimate(const proving_key &key, uint64_t num_constraints) const override;

private:
    int ordinal_;
    int threads_;
    working_cache cache_;
    stream_buffers stream_;  // the chunk buffers of streamed proofs
    // A streamed pass's MSM scalars per proof: H's (but for the last proof,
    // whose stay in the working cache), A's and B's gathered by density.
    struct scalar_set {
        std::vector<blst_fr> h, sa, sb;
    };
    std::vector<scalar_set> sets_;
    stream_cost cost_;  // of the last streamed pass (stream_share_pays)
    std::unique_ptr<gkr::kernels> gkr_;
    witness_pool witnesses_;
    std::atomic<bool> touched_{false};

    // Whether a proof streams the key's bases (the plan in `plan`) or keeps
    // the key resident; CP_ERR_OUT_OF_MEMORY when neither fits the limit.
    bool check_memory(const proving_key &key, uint64_t num_constraints, stream_plan &plan) const;
    // The MSM scalars a proof past the first keeps while a shared pass
    // streams: H's, A's and B's (L's are the caller's aux).
    static uint64_t set_bytes(const proving_key &key);
    // How many of n proofs share one pass (stream_plan.hpp), its plan in p.
    size_t share_plan(const proving_key &key, uint64_t num_constraints, const stream_plan &single,
                      size_t n, stream_plan &p) const;
    // a, b, c (given, or evaluated from the shape and checked) and H's
    // coefficients into the working cache's a.
    void front(const circuit_job &job, cp_timings &t);
    // The four MSMs of n proofs with the key's bases streamed through
    // stream_ once for all of them (plan: from share_plan, or check_memory
    // for one). A proof whose witness fails its shape gets its error in
    // errs[i] and leaves the pass.
    void streamed_parts(const proving_key &key, const circuit_job *const *jobs, size_t n,
                        const stream_plan &plan, device_partials *const *outs,
                        cp_timings *const *ts, std::exception_ptr *errs);
};

}  // namespace host
}  // namespace cp
