// Owns: proving (cp_prove_start / cp_prove_finish / cp_prove): gpu_index
// routing, argument/shape/satisfaction checks, the per-device locking around
// each circuit's device part, fault injection and device delay, statistics,
// pending proofs and the host epilogue (bellperson 0.27's formulas).
//
// Locking: the device part of each circuit runs with the caller's cp_mutex
// (when given) and then the device's own mutex held, always in that order.
// Taking the own mutex too keeps cp_device_trim (which takes only the own
// mutex) from freeing a working cache in use, and serializes two contexts'
// callers that share a cp_mutex.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <exception>
#include <thread>

#include "core.hpp"
#include "field.hpp"
#include "parallel.hpp"
#include "status.hpp"

namespace cp {
namespace {

using clock_type = std::chrono::steady_clock;

uint64_t ns_between(clock_type::time_point a, clock_type::time_point b) {
    return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(b - a).count());
}

std::string circuit_name(size_t k, const cp_circuit &c) {
    return "circuit " + std::to_string(k) + " (tag " + std::to_string(c.tag) + ")";
}

[[noreturn]] void shape_fail(size_t k, const cp_circuit &c, const std::string &what,
                             uint64_t expected, uint64_t actual) {
    fail(CP_ERR_SHAPE_MISMATCH, circuit_name(k, c) + ": " + what + ": the proving key has " +
                                    std::to_string(expected) + ", the circuit needs " +
                                    std::to_string(actual));
}

// Cheap checks (pointers, sizes, shape against the key); fills the job.
circuit_job check_shape(size_t k, const cp_circuit &c, const srs &key) {
    auto bad = [&](const std::string &why) {
        fail(CP_ERR_INVALID_ARGUMENT, circuit_name(k, c) + ": " + why);
    };
    if (c.num_inputs < 1) bad("num_inputs is 0 (input 0 must be ONE)");
    if (c.num_constraints < c.num_inputs)
        bad("num_constraints " + std::to_string(c.num_constraints) + " is less than num_inputs " +
            std::to_string(c.num_inputs));
    if (!c.a || !c.b || !c.c) bad("a, b or c is NULL");
    if (!c.inputs) bad("inputs is NULL");
    if (c.num_aux > 0 && !c.aux) bad("aux is NULL with num_aux " + std::to_string(c.num_aux));
    if (c.num_aux > 0 && (!c.a_aux_density || !c.b_aux_density))
        bad("a_aux_density or b_aux_density is NULL with num_aux " + std::to_string(c.num_aux));
    if (!c.b_input_density) bad("b_input_density is NULL");

    circuit_job job;
    job.c = &c;
    uint32_t lg = 0;
    while (lg < 63 && (uint64_t(1) << lg) < c.num_constraints) lg++;
    if (lg > MAX_LG_DOMAIN)
        fail(CP_ERR_SHAPE_MISMATCH, circuit_name(k, c) + ": num_constraints " +
                                        std::to_string(c.num_constraints) + " needs a domain of 2^" +
                                        std::to_string(lg) + ", more than the largest, 2^" +
                                        std::to_string(MAX_LG_DOMAIN));
    job.lg_domain = lg;
    job.a_aux_count = popcount_bits(c.a_aux_density, c.num_aux);
    job.b_input_count = popcount_bits(c.b_input_density, c.num_inputs);
    job.b_aux_count = popcount_bits(c.b_aux_density, c.num_aux);

    const uint64_t m = uint64_t(1) << lg;
    if (key.ic.size() != c.num_inputs) shape_fail(k, c, "ic points (num_inputs)", key.ic.size(), c.num_inputs);
    if (key.h.size() != m - 1)
        shape_fail(k, c, "h points (domain size - 1, domain 2^" + std::to_string(lg) + ")", key.h.size(), m - 1);
    if (key.l.size() != c.num_aux) shape_fail(k, c, "l points (num_aux)", key.l.size(), c.num_aux);
    if (key.a.size() != c.num_inputs + job.a_aux_count)
        shape_fail(k, c, "a points (num_inputs + set bits of a_aux_density)", key.a.size(),
                   c.num_inputs + job.a_aux_count);
    const uint64_t nb = job.b_input_count + job.b_aux_count;
    if (key.b_g1.size() != nb)
        shape_fail(k, c, "b_g1 points (set bits of b_input_density + b_aux_density)", key.b_g1.size(), nb);
    if (key.b_g2.size() != nb)
        shape_fail(k, c, "b_g2 points (set bits of b_input_density + b_aux_density)", key.b_g2.size(), nb);
    return job;
}

void check_satisfied(size_t k, const cp_circuit &c, int threads) {
    const blst_fr *a = reinterpret_cast<const blst_fr *>(c.a);
    const blst_fr *b = reinterpret_cast<const blst_fr *>(c.b);
    const blst_fr *cc = reinterpret_cast<const blst_fr *>(c.c);
    std::atomic<size_t> first{SIZE_MAX};
    parallel_for(c.num_constraints, threads, 1 << 14, [&](size_t lo, size_t hi, size_t) {
        for (size_t i = lo; i < hi; i++) {
            if (i >= first.load(std::memory_order_relaxed)) return;
            blst_fr t;
            blst_fr_mul(&t, &a[i], &b[i]);
            if (!fr_eq(t, cc[i])) {
                size_t cur = first.load();
                while (i < cur && !first.compare_exchange_weak(cur, i)) {
                }
                return;
            }
        }
    });
    size_t bad = first.load();
    if (bad != SIZE_MAX)
        fail(CP_ERR_UNSATISFIED, circuit_name(k, c) + ": constraint " + std::to_string(bad) +
                                     " is not satisfied (a*b != c)");
}

// Binds the calling thread to `ordinal` for its lifetime, then restores the
// previous binding.
struct bind_scope {
    cp_context &ctx;
    int prev;
    bind_scope(cp_context &c, int ordinal) : ctx(c), prev(bound_device(c.id)) {
        ctx.slot(ordinal).dev->bind_thread();
        set_bound_device(ctx.id, ordinal);
    }
    ~bind_scope() {
        set_bound_device(ctx.id, prev);
        if (prev >= 0) {
            try {
                ctx.slot(prev).dev->bind_thread();
            } catch (...) {
            }
        }
    }
};

// The device part of circuit k on device `ordinal`.
void run_circuit(cp_context &ctx, const srs &key, size_t k, const circuit_job &job, int ordinal,
                 cp_mutex *caller_mu, cp_pending::entry &e) {
    const cp_circuit &c = *job.c;
    device_slot &s = ctx.slot(ordinal);
    std::memset(&e.timings, 0, sizeof e.timings);
    std::memcpy(&e.r, &c.r, sizeof e.r);
    std::memcpy(&e.s, &c.s, sizeof e.s);
    e.device = ordinal;

    const auto t0 = clock_type::now();
    std::unique_lock<std::mutex> outer;
    if (caller_mu) outer = std::unique_lock<std::mutex>(caller_mu->m);
    std::unique_lock<std::mutex> own(s.own);
    const auto t1 = clock_type::now();
    e.timings.wait_ns = ns_between(t0, t1);

    uint64_t delay = 0;
    {
        std::lock_guard<std::mutex> lk(s.state);
        for (size_t i = 0; i < s.faults.size(); i++) {
            if (s.faults[i] == -1 || s.faults[i] == c.tag) {
                s.faults.erase(s.faults.begin() + static_cast<long>(i));
                fail(CP_ERR_INJECTED_FAULT, "injected fault on device " + std::to_string(ordinal) +
                                                " at tag " + std::to_string(c.tag));
            }
        }
        delay = s.delay_ns;
    }
    {
        std::lock_guard<std::mutex> lk(ctx.tag_delay_mu);
        auto it = ctx.tag_delay_ns.find(c.tag);
        if (it != ctx.tag_delay_ns.end()) delay += it->second;
    }
    try {
        s.dev->device_part(key, job, e.parts, e.timings);
    } catch (error &err) {
        err.message = circuit_name(k, c) + " on device " + std::to_string(ordinal) + ": " + err.message;
        throw;
    }
    if (delay) std::this_thread::sleep_for(std::chrono::nanoseconds(delay));
    const auto t2 = clock_type::now();
    e.timings.device_ns = ns_between(t1, t2);
    std::lock_guard<std::mutex> lk(s.state);
    s.proofs++;
    s.busy_ns += e.timings.device_ns;
}

void prove_start(cp_context *ctx, const cp_srs *key_h, const cp_circuit *circuits, size_t n,
                 int32_t gpu_index, cp_mutex *mutex, cp_pending **out) {
    if (out) *out = nullptr;
    if (!ctx || !key_h || !circuits || !out)
        fail(CP_ERR_INVALID_ARGUMENT, "cp_prove_start: NULL argument");
    if (n == 0) fail(CP_ERR_INVALID_ARGUMENT, "cp_prove_start: num_circuits is 0");
    const srs &key = key_h->key;
    const int count = ctx->count();

    // Routing.
    int n_gpus = 1, base = 0;
    if (gpu_index >= 0 && gpu_index < count) {
        base = gpu_index;
    } else if (gpu_index == CP_GPU_AUTO) {
        n_gpus = static_cast<int>(std::min<size_t>(static_cast<size_t>(count), n));
    } else if (gpu_index == CP_GPU_BOUND) {
        base = bound_device(ctx->id);
        if (base < 0)
            fail(CP_ERR_NO_DEVICE_BOUND,
                 "gpu_index CP_GPU_BOUND: this thread has no device bound; call cp_select_gpu");
    } else {
        fail(CP_ERR_DEVICE_INDEX, "gpu_index " + std::to_string(gpu_index) +
                                      " is out of range: this context has " + std::to_string(count) +
                                      " devices (valid: -1 for automatic, -2 for the bound device, 0.." +
                                      std::to_string(count - 1) + ")");
    }
    if (n_gpus < 1) fail(CP_ERR_DEVICE, "the context has no devices");
    if (mutex && n_gpus > 1)
        fail(CP_ERR_INVALID_ARGUMENT,
             "a cp_mutex belongs to one device, but gpu_index -1 spreads these " + std::to_string(n) +
                 " circuits over " + std::to_string(n_gpus) +
                 " devices; pass NULL or route to one device");

    // Checks, cheap ones first, before any device work.
    std::vector<circuit_job> jobs;
    jobs.reserve(n);
    for (size_t k = 0; k < n; k++) jobs.push_back(check_shape(k, circuits[k], key));
    for (size_t k = 0; k < n; k++) check_satisfied(k, circuits[k], ctx->threads);

    std::unique_ptr<cp_pending> p(new cp_pending);
    p->entries.resize(n);
    p->alpha_g1 = key.alpha_g1;
    p->beta_g1 = key.beta_g1;
    p->delta_g1 = key.delta_g1;
    p->beta_g2 = key.beta_g2;
    p->delta_g2 = key.delta_g2;

    if (n_gpus == 1) {
        bind_scope scope(*ctx, base);
        for (size_t k = 0; k < n; k++) run_circuit(*ctx, key, k, jobs[k], base, mutex, p->entries[k]);
    } else {
        std::mutex err_mu;
        size_t err_index = SIZE_MAX;
        std::exception_ptr err;
        std::atomic<bool> abort{false};
        auto record = [&](size_t k) {
            std::lock_guard<std::mutex> lk(err_mu);
            if (k < err_index) {
                err_index = k;
                err = std::current_exception();
            }
            abort = true;
        };
        auto worker = [&](int tid, size_t lo, size_t hi) {
            const int ord = base + tid;
            size_t k = lo;
            try {
                ctx->slot(ord).dev->bind_thread();
                set_bound_device(ctx->id, ord);
                for (; k < hi && !abort.load(); k++)
                    run_circuit(*ctx, key, k, jobs[k], ord, mutex, p->entries[k]);
            } catch (...) {
                record(k);
            }
            set_bound_device(ctx->id, -1);
        };
        std::vector<std::thread> threads;
        threads.reserve(static_cast<size_t>(n_gpus));
        try {
            // Contiguous ranges, earlier ranges take the extra circuit.
            const size_t q = n / static_cast<size_t>(n_gpus), r = n % static_cast<size_t>(n_gpus);
            size_t lo = 0;
            for (int tid = 0; tid < n_gpus; tid++) {
                size_t len = q + (static_cast<size_t>(tid) < r ? 1 : 0);
                threads.emplace_back(worker, tid, lo, lo + len);
                lo += len;
            }
        } catch (...) {
            abort = true;
            for (auto &t : threads) t.join();
            throw;
        }
        for (auto &t : threads) t.join();
        if (err) std::rethrow_exception(err);
    }
    *out = p.release();
}

blst_p1 p1_mul(const blst_p1 &p, const blst_fr &k) {
    blst_scalar s;
    blst_scalar_from_fr(&s, &k);
    blst_p1 r;
    blst_p1_mult(&r, &p, s.b, 255);
    return r;
}
blst_p1 p1_mul(const blst_p1_affine &p, const blst_fr &k) {
    blst_p1 pp;
    blst_p1_from_affine(&pp, &p);
    return p1_mul(pp, k);
}
blst_p2 p2_mul(const blst_p2_affine &p, const blst_fr &k) {
    blst_p2 pp;
    blst_p2_from_affine(&pp, &p);
    blst_scalar s;
    blst_scalar_from_fr(&s, &k);
    blst_p2 r;
    blst_p2_mult(&r, &pp, s.b, 255);
    return r;
}

void finish_one(const cp_pending &p, const cp_pending::entry &e, cp_proof &out) {
    const auto t0 = clock_type::now();
    const device_partials &d = e.parts;
    // A = alpha_g1 + a + r*delta_g1
    blst_p1 A = p1_mul(p.delta_g1, e.r);
    blst_p1_add_or_double_affine(&A, &A, &p.alpha_g1);
    blst_p1_add_or_double(&A, &A, &d.a);
    // B = beta_g2 + b_g2 + s*delta_g2
    blst_p2 B = p2_mul(p.delta_g2, e.s);
    blst_p2_add_or_double_affine(&B, &B, &p.beta_g2);
    blst_p2_add_or_double(&B, &B, &d.b_g2);
    // C = s*a + r*b_g1 + r*s*delta_g1 + s*alpha_g1 + r*beta_g1 + h + l
    blst_fr rs;
    blst_fr_mul(&rs, &e.r, &e.s);
    blst_p1 C = p1_mul(p.delta_g1, rs);
    blst_p1 t = p1_mul(p.alpha_g1, e.s);
    blst_p1_add_or_double(&C, &C, &t);
    t = p1_mul(p.beta_g1, e.r);
    blst_p1_add_or_double(&C, &C, &t);
    t = p1_mul(d.a, e.s);
    blst_p1_add_or_double(&C, &C, &t);
    t = p1_mul(d.b_g1, e.r);
    blst_p1_add_or_double(&C, &C, &t);
    blst_p1_add_or_double(&C, &C, &d.h);
    blst_p1_add_or_double(&C, &C, &d.l);

    std::memset(&out, 0, sizeof out);
    blst_p1_to_affine(reinterpret_cast<blst_p1_affine *>(&out.a), &A);
    blst_p2_to_affine(reinterpret_cast<blst_p2_affine *>(&out.b), &B);
    blst_p1_to_affine(reinterpret_cast<blst_p1_affine *>(&out.c), &C);
    out.device = e.device;
    out.timings = e.timings;
    out.timings.epilogue_ns = ns_between(t0, clock_type::now());
}

}  // namespace
}  // namespace cp

using namespace cp;

extern "C" {

cp_status cp_prove_start(cp_context *ctx, const cp_srs *srs, const cp_circuit *circuits,
                         size_t num_circuits, int32_t gpu_index, cp_mutex *mutex, cp_pending **out) {
    return guard("cp_prove_start",
                 [&] { prove_start(ctx, srs, circuits, num_circuits, gpu_index, mutex, out); });
}

size_t cp_pending_len(const cp_pending *p) { return p ? p->entries.size() : 0; }

int32_t cp_pending_device(const cp_pending *p, size_t i) {
    if (!p || i >= p->entries.size()) return -1;
    return p->entries[i].device;
}

cp_status cp_prove_finish(cp_pending *p, cp_proof *proofs_out) {
    std::unique_ptr<cp_pending> owned(p);
    return guard("cp_prove_finish", [&] {
        if (!owned) fail(CP_ERR_INVALID_ARGUMENT, "cp_prove_finish: pending is NULL");
        if (!proofs_out) fail(CP_ERR_INVALID_ARGUMENT, "cp_prove_finish: proofs_out is NULL");
        for (size_t i = 0; i < owned->entries.size(); i++) finish_one(*owned, owned->entries[i], proofs_out[i]);
    });
}

void cp_pending_free(cp_pending *p) {
    guard_void([&] { delete p; });
}

cp_status cp_prove(cp_context *ctx, const cp_srs *srs, const cp_circuit *circuits,
                   size_t num_circuits, int32_t gpu_index, cp_mutex *mutex, cp_proof *proofs_out) {
    if (!proofs_out) return make_status(CP_ERR_INVALID_ARGUMENT, "cp_prove: proofs_out is NULL");
    cp_pending *p = nullptr;
    cp_status st = cp_prove_start(ctx, srs, circuits, num_circuits, gpu_index, mutex, &p);
    if (st.code != CP_OK) return st;
    return cp_prove_finish(p, proofs_out);
}

}  // extern "C"
