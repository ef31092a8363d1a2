// The CUDA backend: one cp::device per usable GPU, the glue between the
// backend seam (backend.hpp) and the files of device/: device scoping
// (scope.hpp), owners of CUDA objects (raii.hpp), key residency
// (key_residency.*), the resident shape (shape_residency.*), the working
// cache (working_cache.*), the staging ring (staging.*), streamed keys
// (key_streaming.*), the warm-up's
// synthetic witness (warm_up.*), the witness buffers it lends and their
// early uploads (witness_lender.*), the pass lanes (pass_lane.hpp, lanes.hpp)
// and the Groth16 pass (groth16_pass.*). Each
// device keeps the proving keys it has seen in device memory (proving_key::copies,
// by CUDA ordinal) and a working cache reused between proofs. A device is
// one CUDA ordinal of the process's device set (registry.hpp); it does
// nothing on its GPU until it is first used.
#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <cuda_runtime.h>

#include "backend.hpp"
#include "gkr/kernels.hpp"
#include "device/groth16_pass.hpp"
#include "device/key_placement.hpp"
#include "device/key_residency.hpp"
#include "device/scope.hpp"
#include "device/state.hpp"
#include "device/witness_lender.hpp"
#include "device/warm_up.hpp"
#include "gpu_ops.hpp"
#include "point_batch.hpp"
#include "registry.hpp"

namespace cp {
namespace {

using namespace cuda_dev;

// Witness buffers a prepare with a shape readies (witness_lender::warm):
// enough for four proofs in flight on the device (engine workers per
// device); more make the pool grow on demand.
constexpr unsigned WARM_WITNESSES = 4;

// A pass's tail (groth16_pass) whose CUDA and sppark failures name the
// device, as the device part's own do.
class sppark_errors_tail final : public device_tail {
public:
    sppark_errors_tail(std::unique_ptr<device_tail> t, int cuda_id)
        : t_(std::move(t)), cuda_id_(cuda_id) {}
    void finish() override {
        try {
            t_->finish();
        } catch (const cuda_error &e) {
            rethrow_sppark(e, cuda_id_);
        }
    }

private:
    std::unique_ptr<device_tail> t_;
    int cuda_id_;
};

class cuda_device final : public device, public groth16_device {
public:
    cuda_device(int cuda_id, const cudaDeviceProp &props)
        : d_(cuda_id, cuda_id, props), gkr_(gkr::cuda_kernels(cuda_id)) {}

    ~cuda_device() override {
        gkr_.reset();  // frees its buffers on its own device
        if (points_) {
            try {
                bound_scope scope(d_.cuda_id);
                points_.reset();
            } catch (...) {
            }
        }
        if (witnesses_.holds_anything()) {
            try {
                bound_scope scope(d_.cuda_id);
                witnesses_.trim();
            } catch (...) {
            }
        }
        if (!d_.holds_anything())
            return;  // never used: its GPU is left alone
        // The members release their CUDA objects; the scope puts the
        // thread on this device for the ones that need it.
        try {
            bound_scope scope(d_.cuda_id);
            for (auto &l : d_.lanes)
                l.release();
            d_.shape.clear();
            d_.staging.release();
            d_.streamer.release();
        } catch (...) {
        }
    }

    void bind_thread() override { set_device(d_.cuda_id); }

    bool touched() const override { return cp_cuda::touched(d_.cuda_id); }

    cp_device_info info() const override {
        cp_device_info inf;
        std::memset(&inf, 0, sizeof(inf));
        inf.ordinal = d_.ordinal;
        inf.simulated = 0;
        const cudaDeviceProp &p = d_.props;
        std::strncpy(inf.name, p.name, sizeof(inf.name) - 1);
        inf.cc_major = p.major;
        inf.cc_minor = p.minor;
        bound_scope scope(d_.cuda_id);
        size_t free_b = 0, total_b = 0;
        cuda_check(cudaMemGetInfo(&free_b, &total_b), "cudaMemGetInfo");
        inf.free_bytes = std::min<uint64_t>(free_b, memory_limit());
        inf.total_bytes = total_b;
        return inf;
    }

    std::unique_ptr<witness_lease> lend_witness(size_t num_inputs, size_t num_aux) override {
        return witnesses_.lend(num_inputs, num_aux, memory_limit() == UINT64_MAX);
    }

    void prepare(const proving_key &key, uint64_t num_constraints, const shape *sh) override {
        bind_thread();
        try {
            const size_t m = domain_for(num_constraints);
            // The passes in flight first: preparing may replace what they
            // use.
            auto lanes = d_.quiesce();
            prepare_pass(d_, budget(), key, m, sh);
            warm_up(key, m, sh);
            prepare_lanes(d_, budget(), key, m);
            if (sh)
                witnesses_.warm(sh->num_inputs, sh->num_aux, WARM_WITNESSES,
                                memory_limit() == UINT64_MAX);
        } catch (const cuda_error &e) {
            rethrow_sppark(e, d_.cuda_id);
        }
    }

    std::unique_ptr<device_tail> device_part(const proving_key &key, const circuit_job &job,
                                             device_partials &out, cp_timings &t) override {
        bind_thread();
        std::unique_ptr<device_tail> tail;
        try {
            tail = groth16_pass(d_, budget(), key, job, out, t);
        } catch (const cuda_error &e) {
            rethrow_sppark(e, d_.cuda_id);
        }
        // A completed pass has done what warm_up does (kernels loaded,
        // buffers in place): a later prepare of this size (and shape, whose
        // evaluation ran) need not run one more.
        d_.warmed_m = std::max(d_.warmed_m, size_t(1) << job.lg_domain);
        if (job.sh)
            d_.note_shape_warmed(job.sh->id);
        if (!tail)
            return nullptr;
        return std::unique_ptr<device_tail>(new sppark_errors_tail(std::move(tail), d_.cuda_id));
    }

    size_t shared_pass_limit(const proving_key &key, const circuit_job &first, size_t n) override {
        bind_thread();
        try {
            return cuda_dev::shared_pass_limit(d_, budget(), key, first, n, stream_sharing());
        } catch (const cuda_error &e) {
            rethrow_sppark(e, d_.cuda_id);
        }
    }

    void shared_part(const proving_key &key, const circuit_job *const *jobs, size_t n,
                     device_partials *const *outs, cp_timings *const *ts,
                     std::exception_ptr *errs) override {
        bind_thread();
        try {
            groth16_shared_pass(d_, budget(), key, jobs, n, outs, ts, errs);
        } catch (const cuda_error &e) {
            rethrow_sppark(e, d_.cuda_id);
        }
        d_.warmed_m = std::max(d_.warmed_m, size_t(1) << jobs[0]->lg_domain);
    }

    void generator_multiples(bool g2, const blst_fr *scalars, size_t n, void *out) override {
        bind_thread();
        try {
            points().generator_multiples(g2 ? cp_cuda::msm_group::g2 : cp_cuda::msm_group::g1,
                                         reinterpret_cast<const cp_cuda::fr_raw *>(scalars), n,
                                         out);
        } catch (const cuda_error &e) {
            rethrow_sppark(e, d_.cuda_id);
        }
    }

    size_t first_outside_subgroup(bool g2, const void *points_in, size_t n) override {
        bind_thread();
        try {
            return points().first_outside_subgroup(
                g2 ? cp_cuda::msm_group::g2 : cp_cuda::msm_group::g1, points_in, n);
        } catch (const cuda_error &e) {
            rethrow_sppark(e, d_.cuda_id);
        }
    }

    uint64_t trim() override {
        uint64_t freed = 0;
        if (points_) {
            bound_scope scope(d_.cuda_id);
            freed += points_->bytes();
            points_.reset();
        }
        // Idle lent witness buffers (host memory) and the early uploads'
        // cached memory (outside the working cache): freed, not counted.
        if (witnesses_.holds_anything()) {
            bound_scope scope(d_.cuda_id);
            witnesses_.trim();
        }
        try {
            freed += gkr_->trim();
        } catch (const cuda_error &e) {
            rethrow_sppark(e, d_.cuda_id);
        }
        if (!d_.holds_anything())
            return freed;  // never used: nothing else to free, and its GPU is left alone
        bound_scope scope(d_.cuda_id);
        auto lanes = d_.quiesce();  // the passes in flight end first
        try {
            d_.gpu().sync();
        } catch (const cuda_error &e) {
            rethrow_sppark(e, d_.cuda_id);
        }
        if (d_.staging.stream())
            cuda_check(cudaStreamSynchronize(d_.staging.stream()), "cudaStreamSynchronize");
        d_.warmed_m = 0;
        d_.warmed_shapes.clear();
        if (d_.shape.buf) {
            freed += d_.shape.bytes();
            d_.shape.clear();
        }
        for (auto &l : d_.lanes)
            freed += l.release();
        freed += d_.streamer.held();
        d_.streamer.release();
        d_.note_placed();
        d_.staging.release();
        trim_default_pool(d_.cuda_id);
        return freed;
    }

    // The lanes' working caches and MSM buffers and the GKR tables: what
    // trim gives back besides the shape and a streamed key's chunk buffers.
    uint64_t cache_bytes() const override {
        return d_.lanes_bytes() + gkr_->bytes();
    }
    // The caches, the shape, the chunk buffers and the default pool's idle
    // bytes: what trim gives back.
    uint64_t held_bytes() const override {
        bound_scope scope(d_.cuda_id);
        return cache_bytes() + d_.placed_bytes.load() + memory_budget::pool_idle();
    }

    groth16_device &groth16() override { return *this; }

    gkr::kernels &gkr() override { return *gkr_; }
    uint64_t cache_allocations() const override {
        uint64_t n = 0;
        for (const auto &l : d_.lanes)
            n += l.cache.allocations.load();
        return n;
    }
    uint64_t key_uploads() const override { return d_.key_uploads.load(); }

    cp_memory_estimate estimate(const proving_key &key, uint64_t num_constraints) const override {
        const cache_layout L = layout_for(key, domain_for(num_constraints));
        cp_memory_estimate e;
        // sppark's tables count as part of every proof's working set.
        {
            cp_cuda::device_scope scope(d_.cuda_id);
            know_library_bytes(d_);
        }
        const uint64_t library = d_.library_bytes.load();
        e.working_bytes = L.total + temp_bytes(L, d_.props.multiProcessorCount) + library;
        e.key_bytes = key_layout(key).total;
        bool fits = false;
        e.streamed_bytes = plan_for(d_, 0, L.total + library, key, &fits).total_bytes;
        const cache_layout Lc = compact_layout_for(key, L.m);
        e.compact_bytes = plan_for(d_, 0, Lc.total + library, key, &fits).total_bytes;
        return e;
    }

private:
    // The point batches (point_batch.hpp), built on first use with the
    // generators' windows: G times 2^(16 k), k < 16.
    cp_cuda::point_batch &points() {
        if (!points_) {
            cp_cuda::g1_affine_raw w1[16];
            cp_cuda::g2_affine_raw w2[16];
            blst_p1 p1 = *blst_p1_generator();
            blst_p2 p2 = *blst_p2_generator();
            for (int k = 0; k < 16; k++) {
                blst_p1_to_affine(reinterpret_cast<blst_p1_affine *>(&w1[k]), &p1);
                blst_p2_to_affine(reinterpret_cast<blst_p2_affine *>(&w2[k]), &p2);
                for (int b = 0; b < 16; b++) {
                    blst_p1_double(&p1, &p1);
                    blst_p2_double(&p2, &p2);
                }
            }
            points_.reset(new cp_cuda::point_batch(d_.stream(), w1, w2));
        }
        return *points_;
    }
    std::unique_ptr<cp_cuda::point_batch> points_;

    device_state d_;
    std::unique_ptr<gkr::kernels> gkr_;  // its buffers are part of the working cache
    witness_lender witnesses_{d_.cuda_id};

    memory_budget budget() const { return memory_budget{d_.ordinal, memory_limit(), workers()}; }

    // One device part on a synthetic witness of the key's shape
    // (warm_up.hpp); the result is discarded.
    void warm_up(const proving_key &key, size_t m, const shape *sh) {
        if (m <= d_.warmed_m && (!sh || d_.shape_warmed(sh->id)))
            return;
        synthetic_witness w;
        if (!make_synthetic_witness(w, key, m))
            return;
        device_partials out;
        cp_timings t;
        std::memset(&t, 0, sizeof t);
        groth16_pass(d_, budget(), key, w.job, out, t, true);  // on lane 0, done when it returns
        d_.warmed_m = std::max(d_.warmed_m, m);
        // The evaluation kernels on the synthetic witness the pass left on
        // the device: loaded, result discarded (it satisfies nothing).
        if (sh && d_.shape.id == sh->id && sh->num_inputs == key.ic.size() &&
            sh->num_aux == key.l.size()) {
            d_.shape.evaluate(d_.gpu(), *sh, d_.lanes[0].cache.buf.bytes_ptr(),
                              layout_for(key, m));
            cp_cuda::gpu_sync_default(d_.gpu());
            d_.note_shape_warmed(sh->id);
        }
    }
};

}  // namespace

int cuda_visible_count(std::string *why) { return cp_cuda::visible_devices(why); }

std::vector<int> cuda_usable_devices(std::string *why) {
    std::string reason;
    const int n = cp_cuda::visible_devices(&reason);
    std::vector<int> ids = cp_cuda::usable_devices();
    if (why) {
        if (n == 0)
            *why = reason;
        else if (ids.size() < (size_t)n)
            *why = std::to_string(n - ids.size()) + " of " + std::to_string(n) +
                   " CUDA devices lack compute capability 7.0 or cooperative launch";
    }
    return ids;
}

int cuda_device_count(std::string *why) { return (int)cuda_usable_devices(why).size(); }

cp_device_info cuda_device_info(int cuda_id) {
    cp_device_info inf;
    std::memset(&inf, 0, sizeof(inf));
    cp_cuda::runtime_settings();
    cudaDeviceProp p;
    if (cudaGetDeviceProperties(&p, cuda_id) != cudaSuccess) {
        const cudaError_t e = cudaGetLastError();
        fail(CP_ERR_DEVICE, "CUDA device " + std::to_string(cuda_id) + ": " + cudaGetErrorString(e));
    }
    inf.ordinal = cuda_id;
    std::strncpy(inf.name, p.name, sizeof(inf.name) - 1);
    inf.cc_major = p.major;
    inf.cc_minor = p.minor;
    inf.total_bytes = p.totalGlobalMem;
    return inf;
}

std::vector<int> cuda_claim(std::vector<int> ids) {
    const std::string why = cp_cuda::claim_devices(ids);
    if (!why.empty())
        fail(CP_ERR_DEVICE_INDEX, "cp_context_new: " + why);
    return ids;
}

std::unique_ptr<device> cuda_device_for(int cuda_id) {
    cudaDeviceProp p;
    if (!cp_cuda::usable_device(cuda_id, &p))
        fail(CP_ERR_DEVICE, "CUDA device " + std::to_string(cuda_id) + " is not usable");
    return std::unique_ptr<device>(new cuda_device(cuda_id, p));
}

bool cuda_touched(int cuda_id) { return cp_cuda::touched(cuda_id); }

}  // namespace cp
