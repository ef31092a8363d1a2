// The Groth16 part of a device (include/cuda_prover/groth16.h): proving
// keys in host memory and their per-device copies, shapes, a circuit's job
// and what its device part produces, the witness buffers a device lends,
// the tail of a device part, and the interface a backend implements for
// Groth16 (groth16_device), reached through device::groth16().
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "blst.h"
#include "cuda_prover.h"
#include "error.hpp"
#include "parallel.hpp"
#include "witness_pool.hpp"

namespace cp {

// A copy of a proving key placed on one device by a backend (device memory
// for CUDA). Owned by the key, freed with it or on trim.
struct key_device_copy {
    virtual ~key_device_copy() = default;
    virtual uint64_t bytes() const = 0;
};

// std::allocator, except that growing a vector leaves new elements of a
// trivial type unset: a key's sections (up to tens of GiB) are written by
// the threads that decode or compute their points, so each page is first
// touched there, not zeroed on one thread beforehand.
template <class T>
struct unset_allocator : std::allocator<T> {
    using value_type = T;
    template <class U>
    struct rebind {
        using other = unset_allocator<U>;
    };
    unset_allocator() noexcept = default;
    template <class U>
    unset_allocator(const unset_allocator<U> &) noexcept {}
    template <class U>
    void construct(U *p) noexcept {
        ::new (static_cast<void *>(p)) U;
    }
    template <class U, class A0, class... A>
    void construct(U *p, A0 &&a0, A &&...a) {
        ::new (static_cast<void *>(p)) U(std::forward<A0>(a0), std::forward<A>(a)...);
    }
};

// A section of a key: its points, written before they are read.
template <class T>
using point_vector = std::vector<T, unset_allocator<T>>;

// A proving key in host memory, in bellperson's layout.
struct proving_key {
    blst_p1_affine alpha_g1, beta_g1, delta_g1;
    blst_p2_affine beta_g2, gamma_g2, delta_g2;
    point_vector<blst_p1_affine> ic, h, l, a, b_g1;
    point_vector<blst_p2_affine> b_g2;

    // Per-device copies, indexed by the backend's physical device ordinal.
    mutable std::mutex copies_mu;
    mutable std::vector<std::unique_ptr<key_device_copy>> copies;

    // The six verifying-key points of `p`, copied (unchecked).
    void set_vk_points(const cp_key_parts &p) {
        std::memcpy(&alpha_g1, &p.alpha_g1, sizeof alpha_g1);
        std::memcpy(&beta_g1, &p.beta_g1, sizeof beta_g1);
        std::memcpy(&beta_g2, &p.beta_g2, sizeof beta_g2);
        std::memcpy(&gamma_g2, &p.gamma_g2, sizeof gamma_g2);
        std::memcpy(&delta_g1, &p.delta_g1, sizeof delta_g1);
        std::memcpy(&delta_g2, &p.delta_g2, sizeof delta_g2);
    }
};

// What the device part of one circuit produces (projective sums).
struct device_partials {
    blst_p1 h;        // sum h_i * H_i
    blst_p1 l;        // sum aux_i * L_i
    blst_p1 a;        // sum inputs * A_in + sum aux(A density) * A_aux
    blst_p1 b_g1;     // same over B in G1
    blst_p2 b_g2;     // same over B in G2
};

// A circuit's constraints (cp_shape): A, B, C in CSR form over the columns
// [inputs..., aux...], with the densities that follow from them.
struct shape_matrix {
    std::vector<uint64_t> row_ptr;        // num_constraints + 1
    std::vector<cp_shape_entry> entries;  // row_ptr.back()
    uint64_t longest_row = 0;             // entries of the longest row
};

struct shape {
    uint64_t id = 0;  // unique per shape in the process: keys device copies
    uint64_t num_constraints = 0, num_inputs = 0, num_aux = 0;
    shape_matrix a, b, c;
    std::vector<blst_fr> coeffs;  // entry coeff k >= 2 is coeffs[k - 2]
    // Density bitmaps (bit i of word i / 64) and their set bits.
    std::vector<uint64_t> a_aux_density, b_input_density, b_aux_density;
    uint64_t a_aux_count = 0, b_input_count = 0, b_aux_count = 0;

    uint64_t nonzeros() const { return a.entries.size() + b.entries.size() + c.entries.size(); }
    // Bytes of a device copy: offsets, entries, coefficients, bitmaps.
    uint64_t device_bytes() const;
};

// One circuit's proof input with the facts the orchestration derived and
// checked. Either `a`, `b`, `c` hold the evaluations (cp_prove_start) or
// `sh` is set and the backend evaluates them from the witness
// (cp_groth16_prove_start_witness).
struct circuit_job {
    const blst_fr *a = nullptr, *b = nullptr, *c = nullptr;
    const shape *sh = nullptr;
    size_t num_constraints = 0;
    const blst_fr *inputs = nullptr;  // inputs[0] is ONE
    size_t num_inputs = 0;
    const blst_fr *aux = nullptr;
    size_t num_aux = 0;
    const uint64_t *a_aux_density = nullptr;    // num_aux bits
    const uint64_t *b_input_density = nullptr;  // num_inputs bits
    const uint64_t *b_aux_density = nullptr;    // num_aux bits
    uint32_t lg_domain = 0;      // domain size 2^lg_domain >= num_constraints
    size_t a_aux_count = 0;      // set bits in a_aux_density
    size_t b_input_count = 0;    // set bits in b_input_density
    size_t b_aux_count = 0;      // set bits in b_aux_density
    int64_t tag = -1;
    // inputs and aux lie in a buffer this job's device lent
    // (groth16_device::lend_witness): the device part may upload them directly.
    bool lent = false;
    // What the lease started of the upload before the device's mutex
    // (witness_lease::filled); backend-specific, nullptr when nothing.
    const void *early_upload = nullptr;
};

// What a device lends for one witness (groth16_device::lend_witness):
// a buffer the orchestration fills outside the device's mutex. It must end
// after the job's device part and before its device.
class witness_lease {
public:
    virtual ~witness_lease() = default;
    // Takes the job's witness (inputs, aux) on up to `threads` threads:
    // copied into the lease's buffer, job.inputs / job.aux pointed there
    // and job.lent set (copy_witness_into), or kept in a form of the
    // backend's own (a packed witness: witness_pack.hpp) with the job left
    // as it was; also left as it was when there is no room. Called with
    // the thread bound.
    virtual void fill(circuit_job &job, int threads) = 0;
    // Then: start what of the upload can start before the device's mutex,
    // and say so in job.early_upload. Called with the thread bound.
    virtual void filled(circuit_job &job) { (void)job; }
};

// The job's witness copied into b (inputs, then aux, in a few pieces: one
// thread copies about 10 GB/s), the job pointed at it and marked lent.
inline void copy_witness_into(witness_buffer &b, circuit_job &job, int threads) {
    std::memcpy(b.inputs(), job.inputs, job.num_inputs * sizeof(blst_fr));
    blst_fr *to = b.aux();
    const blst_fr *from = job.aux;
    parallel_for(job.num_aux, std::min(threads, 4), size_t(1) << 18,
                 [&](size_t lo, size_t hi, size_t) {
                     std::memcpy(to + lo, from + lo, (hi - lo) * sizeof(blst_fr));
                 });
    job.inputs = b.inputs();
    job.aux = b.aux();
    job.lent = true;
}

// What a device part left queued on its device (groth16_device::device_part): the
// wait for its work and the read of its results. The orchestration runs
// finish after it releases the device's mutex, so that the next proof's
// device part starts while this one's last kernels run. Destroying it
// without finish waits for the device's work and drops the results.
class device_tail {
public:
    virtual ~device_tail() = default;
    // Waits for the work and fills the partials and timings the device part
    // was given; called once, with the thread bound.
    virtual void finish() = 0;
};

// A device's Groth16 work (device::groth16()). The orchestration
// serializes device_part calls with the device's mutex.
class groth16_device {
public:
    virtual ~groth16_device() = default;

    // Runs H and the five MSMs of one circuit (first a, b, c from the shape
    // and the a*b = c check, when the job has a shape: CP_ERR_UNSATISFIED
    // names the first failing row). Called with the thread bound and the
    // device's mutex held. Fills `out` and the phase fields of `t` it
    // measures, or returns the tail that does (the job's buffers, `out` and
    // `t` must outlive it); nullptr when the part is done.
    virtual std::unique_ptr<device_tail> device_part(const proving_key &key, const circuit_job &job,
                                                     device_partials &out, cp_timings &t) = 0;

    // How many of n jobs like `first` (one key and one shape) one pass of
    // this device would serve: more than 1 only when the key's bases
    // are streamed, sharing pays by stream_sharing() (stream_share_pays) and
    // the memory holds them (plan_shared), so that each chunk goes up once
    // for all of them. Called with the thread bound and the device's mutex
    // held.
    virtual size_t shared_pass_limit(const proving_key &key, const circuit_job &first, size_t n) {
        (void)key;
        (void)first;
        (void)n;
        return 1;
    }
    // The device parts of n jobs (n <= shared_pass_limit of the same jobs)
    // as one pass over the key's streamed bases; done when it returns.
    // errs[i] receives job i's own failure (an unsatisfied witness) and the
    // others are still proved; a failure of the device throws.
    virtual void shared_part(const proving_key &key, const circuit_job *const *jobs, size_t n,
                             device_partials *const *outs, cp_timings *const *ts,
                             std::exception_ptr *errs) {
        (void)key;
        (void)jobs;
        (void)outs;
        (void)ts;
        (void)errs;
        fail(CP_ERR_INTERNAL, "this device has no shared passes (" + std::to_string(n) + " jobs)");
    }

    // A buffer for one witness (witness_pool.hpp), which the orchestration
    // fills before it takes the device's mutex; nullptr when the device
    // has none to lend (then the device part reads the caller's memory).
    // Called with the thread bound, without the device's mutex.
    virtual std::unique_ptr<witness_lease> lend_witness(size_t num_inputs, size_t num_aux) = 0;
    // Readies the device for proofs of `num_constraints` constraints with
    // `key`: places the key's per-device copy (when the backend keeps one)
    // and allocates the working cache, as the first such proof would; with
    // a shape, places its device copy too. Called with the thread bound and
    // the device's own mutex held.
    virtual void prepare(const proving_key &key, uint64_t num_constraints, const shape *sh) = 0;

    // Batches of curve points for keys (keys made from their scalars, keys
    // checked as they load). Called with the thread bound and the device's
    // own mutex held.
    // out[i] = scalars[i] times the generator of G1 (g2 false; out holds
    // blst_p1_affine) or G2 (blst_p2_affine); infinity (all zeros) for 0.
    virtual void generator_multiples(bool g2, const blst_fr *scalars, size_t n, void *out) = 0;
    // The index of the first of n decoded points (blst_p1_affine or
    // blst_p2_affine: on the curve, not infinity) outside its prime-order
    // subgroup; n when every one is inside.
    virtual size_t first_outside_subgroup(bool g2, const void *points, size_t n) = 0;

    virtual uint64_t key_uploads() const = 0;
    // Device memory a proof of this shape needs beyond the proving key.
    virtual cp_memory_estimate estimate(const proving_key &key, uint64_t num_constraints) const = 0;
};

}  // namespace cp
