// Multi-scalar multiplications on one GPU, for G1 and G2 of BLS12-381: the
// msm_context of gpu_ops.hpp. Each slot is a Pippenger engine
// (msm_engine.cuh: sppark's kernels, our orchestration, buffers allocated
// once), a stream and a pinned buffer for its window sums, so the MSMs of a
// proof run at the same time on their own streams and nothing is allocated
// per MSM. The window sums are combined on the host (blst) when read.
#define SPPARK_DONT_INSTANTIATE_TEMPLATES
#define TAKE_RESPONSIBILITY_FOR_ERROR_MESSAGE

#include <cuda_runtime.h>

#include <ff/bls12-381-fp2.hpp>
#include <ec/jacobian_t.hpp>
#include <ec/xyzz_t.hpp>

#include "gpu_ops.hpp"

#include <msm/pippenger.cuh>

#include "msm_engine.cuh"

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>

namespace cp_cuda {
namespace {

using g1_point = jacobian_t<fp_t>;
using g1_bucket = xyzz_t<fp_t>;
using g1_affine = g1_bucket::affine_t;
using g2_point = jacobian_t<fp2_t>;
using g2_bucket = xyzz_t<fp2_t>;
using g2_affine = g2_bucket::affine_t;

#ifndef __CUDA_ARCH__  // host-side types; on the device an Fp2 element is spread over two lanes
static_assert(sizeof(g1_point) == sizeof(g1_proj_raw), "G1 Jacobian layout");
static_assert(sizeof(g2_point) == sizeof(g2_proj_raw), "G2 Jacobian layout");
static_assert(sizeof(g1_affine) == sizeof(g1_affine_raw), "G1 affine layout");
static_assert(sizeof(g2_affine) == sizeof(g2_affine_raw), "G2 affine layout");
static_assert(sizeof(g1_affine::mem_t) == sizeof(g1_affine_raw), "G1 affine layout");
static_assert(sizeof(g2_affine::mem_t) == sizeof(g2_affine_raw), "G2 affine layout");
static_assert(sizeof(fr_t) == sizeof(fr_raw), "Fr layout");
// On the host a bucket's memory form is the bucket itself (xyzz_t::mem_t).
static_assert(sizeof(g1_bucket::mem_t) == sizeof(g1_bucket), "G1 bucket layout");
static_assert(sizeof(g2_bucket::mem_t) == sizeof(g2_bucket), "G2 bucket layout");
#endif
static_assert(msm_detail::FINISH_THREADS == MSM_NTHREADS,
              "finish kernel must see integrate's thread layout");

using g1_engine = msm_detail::msm_engine<g1_bucket, g1_affine, fr_t>;
using g2_engine = msm_detail::msm_engine<g2_bucket, g2_affine, fr_t>;

// Concurrent users of sppark's cooperative kernels need distinct counter
// slots per group (accumulate's MSM_NSTREAMS, batch_addition's
// BATCH_ADD_NSTREAMS).
constexpr size_t MAX_SLOTS_PER_GROUP = 8;

size_t slot_bytes(const msm_slot_spec &s, int sm_count) {
    return s.group == msm_group::g2
               ? g2_engine::layout(s.n_max, sm_count, s.table, s.batch_max, s.overlap_sort).total
               : g1_engine::layout(s.n_max, sm_count, s.table, s.batch_max, s.overlap_sort).total;
}

// A table run pays where Pippenger would run over (nearly) all the points:
// when at least an eighth of the scalars are long (neither 0, 1 nor short:
// msm_classify), or when the split was not asked for. Short scalars do not
// count towards that eighth (most of their digits are 0), but no longer
// weigh against it either: the top digits of many short scalars of similar
// length pile into a few buckets of the one bucket set, and the chunked
// accumulation (msm_accumulate.cuh) spreads any bucket over many threads
// (with sppark's one thread per bucket, 16K 63-bit scalars next to 2^20
// dense ones took the H + L of the `bits` circuit from 15 to 33 ms).
bool table_pays(bool split01, size_t n, const uint32_t *counts, size_t dense = 0) {
    if (!split01)
        return true;
    const size_t rest = counts[1] + dense, shorts = counts[2];
    return rest - shorts >= n / 8;
}

// Points per thread of msm_table_step (one inversion for each).
constexpr uint32_t TABLE_BATCH = 8;

template <class field_t>
void build_table(cudaStream_t s, void *d_table, size_t n, uint32_t wbits) {
    const size_t point = 2 * sizeof(typename field_t::mem_t);  // host: the whole Fp2
    const uint32_t windows = msm_detail::window_count(wbits);
    const size_t per_block = msm_detail::TABLE_THREADS / field_t::degree * TABLE_BATCH;
    const uint32_t blocks = (uint32_t)std::max<size_t>((n + per_block - 1) / per_block, 1);
    char *rows = (char *)d_table;
    for (uint32_t w = 1; w < windows && n; w++) {
        msm_detail::msm_table_step<field_t, TABLE_BATCH>
            <<<blocks, msm_detail::TABLE_THREADS, 0, s>>>(rows + w * n * point,
                                                          rows + (w - 1) * n * point, n, wbits);
        msm_detail::cuda_ok(cudaGetLastError(), "table of multiples");
    }
}

// Host side of what a slot copies back: the counts of classify and the
// window sums (xyzz points, msm_engine::window_sums), with the window count
// and width of the run that left them.
struct pinned_t {
    uint32_t counts[msm_detail::COUNTS];
    uint32_t recounts[msm_detail::COUNTS];  // a second classify's (the same values)
    uint32_t windows_and_wbits;
    alignas(16) unsigned char wsum[msm_detail::WSUM_SLOTS][sizeof(g2_bucket)];
};

// sum_w 2^(w * wbits) wsum[w] + wsum[ONES_SLOT] by Horner's rule, in
// sppark's host-side Jacobian arithmetic, into out (blst's layout, which
// Point shares); its time is added to prof's combine phase when profiled.
template <class Bucket, class Point, class Raw>
void combine_windows(const pinned_t &pin, msm_profile *prof, Raw &out) {
    const auto t0 = std::chrono::steady_clock::now();
    const uint32_t nwins = pin.windows_and_wbits & 0xffff, wbits = pin.windows_and_wbits >> 16;
    auto window = [&](uint32_t w) {
        Bucket b;
        std::memcpy((void *)&b, pin.wsum[w], sizeof(b));
        return Point(b);
    };
    Point acc;
    acc.inf();
    for (uint32_t w = nwins; w-- > 0;) {
        if (w + 1 < nwins)
            for (uint32_t i = 0; i < wbits; i++)
                acc.dbl();
        acc.add(window(w));
    }
    acc.add(window(msm_detail::ONES_SLOT));
    std::memcpy(&out, &acc, sizeof(out));
    if (prof)
        prof->ms[msm_phase_combine] += std::chrono::duration<double, std::milli>(
                                           std::chrono::steady_clock::now() - t0)
                                           .count();
}

}  // namespace

struct msm_context::impl {
    struct slot_t {
        msm_slot_spec spec;
        std::unique_ptr<g1_engine> e1;
        std::unique_ptr<g2_engine> e2;
        cudaStream_t stream = nullptr;
        cudaEvent_t start = nullptr, stop = nullptr;
        // Past the last table run's sort; past the last run that used
        // another slot's sorted digits.
        cudaEvent_t sorted = nullptr, released = nullptr;
        // The engine's second stream and its events (msm_slot_spec::
        // overlap_sort), or null ones.
        msm_detail::sort_lane lane;
        msm_profile *profile = nullptr;
        bool wants_table = false;  // the last launch's table_pays
        bool table_run = false;    // the last launch sorted its own digits for a table run
        bool gathered = false;     // the last classify gathered the split's rest
        size_t dense = 0;          // the last classify's dense head (msm_job::dense), or 0
        bool in_crowd = false;     // started as a table run, not finished yet
    };
    int device = 0;
    int sm_count = 0;
    void *base = nullptr;
    size_t bytes = 0;
    pinned_t *pinned = nullptr;  // one per slot
    std::vector<slot_t> slots;
    // Table runs started and not yet finished (the crowd a run starts in:
    // msm_engine::affine).
    uint32_t tables_in_flight = 0;

    ~impl() {
        int prev = -1;
        (void)cudaGetDevice(&prev);
        (void)cudaSetDevice(device);
        // The buffers came from the default pool (cudaMallocAsync) and go
        // back to it in stream order, once every slot's work is done:
        // cudaFree would release the memory but leave the pool's count of
        // used bytes (what a pass reads as its peak) as it was.
        for (auto &s : slots) {
            if (s.stream)
                (void)cudaStreamSynchronize(s.stream);
            if (s.lane.stream)
                (void)cudaStreamSynchronize(s.lane.stream);
        }
        if (base) {
            const cudaStream_t s0 = slots.empty() ? nullptr : slots[0].stream;
            (void)cudaFreeAsync(base, s0);
            (void)cudaStreamSynchronize(s0);
        }
        for (auto &s : slots) {
            if (s.stream)
                (void)cudaStreamDestroy(s.stream);  // idle: synchronized above
            if (s.start)
                (void)cudaEventDestroy(s.start);
            if (s.stop)
                (void)cudaEventDestroy(s.stop);
            for (cudaEvent_t e : {s.sorted, s.released})
                if (e)
                    (void)cudaEventDestroy(e);
            if (s.lane.stream)
                (void)cudaStreamDestroy(s.lane.stream);  // idle: synchronized above
            for (cudaEvent_t *e : s.lane.events())
                if (*e)
                    (void)cudaEventDestroy(*e);
        }
        if (pinned)
            (void)cudaFreeHost(pinned);
        (void)cudaGetLastError();
        if (prev >= 0)
            (void)cudaSetDevice(prev);
    }

    // msm_context::launch, with the sorted digits of `donor`'s table run
    // (a slot of an earlier job of the same start over the same scalars)
    // when this launch also takes a table run.
    void launch(size_t slot, cudaStream_t s, const void *d_points, const void *d_scalars,
                size_t n, bool split01, uint32_t table_wbits, slot_t *donor,
                cudaEvent_t gate);
    // msm_context::classify; without `gather` the scalars are only counted
    // (a job with a table: launch gathers them if the table does not pay).
    // A dense head (msm_job::dense) is left out of the classification when
    // it is larger than the split could gather anyway.
    void classify(size_t slot, cudaStream_t s, const void *d_points, const void *d_scalars,
                  size_t n, bool gather, size_t dense = 0);

    slot_t &at(size_t i) {
        if (i >= slots.size())
            throw cuda_error{-(int)cudaErrorInvalidValue,
                             std::string("cuda-prover MSM: no such slot")};
        return slots[i];
    }
};

uint32_t msm_table_window_bits(size_t n) { return msm_detail::table_window_bits(n); }

uint32_t msm_table_windows(uint32_t wbits) { return msm_detail::window_count(wbits); }

void msm_build_table(cudaStream_t stream, msm_group group, void *d_table, size_t n,
                     uint32_t wbits) {
    if (wbits < 10 || wbits > 20)
        throw cuda_error{-(int)cudaErrorInvalidValue,
                         std::string("cuda-prover MSM: table window width out of range")};
    if (group == msm_group::g2)
        build_table<fp2_t>(stream, d_table, n, wbits);
    else
        build_table<fp_t>(stream, d_table, n, wbits);
}

size_t msm_context_bytes(const std::vector<msm_slot_spec> &slots, int sm_count) {
    size_t total = 0;
    for (const auto &s : slots)
        total += msm_detail::align256(slot_bytes(s, sm_count));
    return std::max<size_t>(total, 256);
}

msm_context::msm_context(const gpu_t &gpu, const std::vector<msm_slot_spec> &slots)
    : p_(new impl) {
    using msm_detail::cuda_ok;
    p_->device = gpu.cid();  // the CUDA ordinal (id() is the index in the device set)
    p_->sm_count = gpu.sm_count();
    cuda_ok(cudaSetDevice(p_->device), "cudaSetDevice");
    size_t per_group[2] = {0, 0};
    for (const auto &s : slots)
        if (++per_group[s.group == msm_group::g2] > MAX_SLOTS_PER_GROUP)
            throw cuda_error{-(int)cudaErrorInvalidValue,
                             std::string("cuda-prover MSM: too many slots of one group")};
    p_->bytes = msm_context_bytes(slots, p_->sm_count);
    p_->slots.resize(slots.size());
    for (auto &s : p_->slots) {
        cuda_ok(cudaStreamCreateWithFlags(&s.stream, cudaStreamNonBlocking), "cudaStreamCreate");
        cuda_ok(cudaEventCreate(&s.start), "cudaEventCreate");
        cuda_ok(cudaEventCreate(&s.stop), "cudaEventCreate");
        cuda_ok(cudaEventCreateWithFlags(&s.sorted, cudaEventDisableTiming), "cudaEventCreate");
        cuda_ok(cudaEventCreateWithFlags(&s.released, cudaEventDisableTiming), "cudaEventCreate");
    }
    cuda_ok(cudaMallocHost((void **)&p_->pinned, std::max<size_t>(slots.size(), 1) *
                                                     sizeof(pinned_t)),
            "cudaMallocHost");
    // From the device's default pool, so the pool's high-water mark (the
    // device part's peak) sees it.
    const cudaStream_t s0 = p_->slots.empty() ? (cudaStream_t)gpu : p_->slots[0].stream;
    cuda_ok(cudaMallocAsync(&p_->base, p_->bytes, s0), "cudaMallocAsync (MSM buffers)");
    cuda_ok(cudaStreamSynchronize(s0), "cudaStreamSynchronize");
    char *at = (char *)p_->base;
    uint32_t sid[2] = {0, 0};
    for (size_t i = 0; i < slots.size(); i++) {
        auto &s = p_->slots[i];
        s.spec = slots[i];
        const bool g2 = s.spec.group == msm_group::g2;
        if (g2)
            s.e2.reset(new g2_engine(at, s.spec.n_max, p_->sm_count, sid[1]++, s.spec.table,
                                     s.spec.batch_max, s.spec.overlap_sort));
        else
            s.e1.reset(new g1_engine(at, s.spec.n_max, p_->sm_count, sid[0]++, s.spec.table,
                                     s.spec.batch_max, s.spec.overlap_sort));
        at += msm_detail::align256(slot_bytes(s.spec, p_->sm_count));
        if (s.spec.overlap_sort) {
            auto &l = s.lane;
            cuda_ok(cudaStreamCreateWithFlags(&l.stream, cudaStreamNonBlocking),
                    "cudaStreamCreate");
            for (cudaEvent_t *e : l.events())
                cuda_ok(cudaEventCreateWithFlags(e, cudaEventDisableTiming), "cudaEventCreate");
            if (g2)
                s.e2->sort_on(l);
            else
                s.e1->sort_on(l);
        }
    }
}

msm_context::~msm_context() = default;

size_t msm_context::bytes() const { return p_->bytes; }

size_t msm_context::slot_count() const { return p_->slots.size(); }

bool msm_context::fits(const std::vector<msm_slot_spec> &slots) const {
    if (slots.size() != p_->slots.size())
        return false;
    for (size_t i = 0; i < slots.size(); i++)
        if (slots[i].group != p_->slots[i].spec.group ||
            slots[i].n_max > p_->slots[i].spec.n_max ||
            (slots[i].table && !p_->slots[i].spec.table) ||
            (slots[i].overlap_sort && !p_->slots[i].spec.overlap_sort) ||
            msm_detail::batch_scalars(slots[i].batch_max) >
                msm_detail::batch_scalars(p_->slots[i].spec.batch_max))
            return false;
    return true;
}

cudaStream_t msm_context::stream(size_t slot) const { return p_->at(slot).stream; }

void msm_context::profile(size_t slot, msm_profile *p) {
    auto &sl = p_->at(slot);
    sl.profile = p;
    if (sl.e2)
        sl.e2->profile(p);
    else
        sl.e1->profile(p);
}

void msm_context::window_bits(size_t slot, uint32_t wbits) {
    auto &sl = p_->at(slot);
    if (sl.e2)
        sl.e2->force_window_bits(wbits);
    else
        sl.e1->force_window_bits(wbits);
}

void msm_context::tune(size_t slot, const msm_tuning &t) {
    auto &sl = p_->at(slot);
    if (sl.e2)
        sl.e2->tune(t);
    else
        sl.e1->tune(t);
}

const char *msm_phase_name(int phase) {
    static const char *const names[msm_phase_count] = {
        "classify", "ones", "breakdown", "sort", "batch_add",
        "accumulate", "integrate", "finish", "combine"};
    return phase >= 0 && phase < msm_phase_count ? names[phase] : "?";
}

void msm_context::classify(size_t slot, cudaStream_t s, const void *d_points,
                           const void *d_scalars, size_t n) {
    p_->classify(slot, s, d_points, d_scalars, n, true);
}

void msm_context::impl::classify(size_t slot, cudaStream_t s, const void *d_points,
                                 const void *d_scalars, size_t n, bool gather, size_t dense) {
    auto &sl = at(slot);
    uint32_t *counts = pinned[slot].counts;
    sl.gathered = gather;
    // Diagnostics: CP_MSM_NO_DENSE_HEAD set classifies every scalar, as
    // before msm_job::dense (read once).
    static const bool no_head = std::getenv("CP_MSM_NO_DENSE_HEAD") != nullptr;
    const size_t cap = sl.e2 ? sl.e2->tail_cap() : sl.e1->tail_cap();
    sl.dense = !no_head && gather && dense < n && dense > cap ? dense : 0;
    const fr_t *sc = (const fr_t *)d_scalars + sl.dense;
    if (sl.e2)
        sl.e2->classify(s, (const g2_engine::affine_h *)d_points + sl.dense, sc, n - sl.dense,
                        counts, gather);
    else
        sl.e1->classify(s, (const g1_engine::affine_h *)d_points + sl.dense, sc, n - sl.dense,
                        counts, gather);
}

// One MSM on engine e: over the table when there is one that e holds and
// it pays (with the digits `from` another slot sorted, if given; else
// recording `sorted` after its own sort, *table_run set), else with or
// without the 0/1 split (gathering the split's rest first when the
// classification only counted: `gathered` false).
template <class engine_t>
uint32_t launch_on(engine_t &e, cudaStream_t s, const void *d_points, const fr_t *sc, size_t n,
                   bool split01, uint32_t table_wbits, pinned_t &pin, bool gathered,
                   const msm_detail::sorted_digits *from, cudaEvent_t sorted, cudaEvent_t gate,
                   bool *table_run, size_t dense) {
    auto *pts = (const typename engine_t::affine_h *)d_points;
    *table_run = false;
    if (table_wbits && e.fits_table(n, table_wbits) && table_pays(split01, n, pin.counts, dense)) {
        *table_run = !from;
        return e.run_table(s, pts, sc, n, table_wbits, from, sorted, gate);
    }
    if (!split01)
        return e.run(s, pts, sc, n);
    if (dense)  // classified past the dense head, and gathered
        return e.run_split_after(s, pts, sc, n, dense, pin.counts[0], pin.counts[1]);
    if (!gathered)
        e.classify(s, pts, sc, n, pin.recounts, true);
    return e.run_split(s, pts, sc, n, pin.counts[0], pin.counts[1]);
}

void msm_context::launch(size_t slot, cudaStream_t s, const void *d_points,
                         const void *d_scalars, size_t n, bool split01, uint32_t table_wbits) {
    auto &sl = p_->at(slot);
    if (sl.e2)
        sl.e2->crowd(1);
    else
        sl.e1->crowd(1);
    p_->launch(slot, s, d_points, d_scalars, n, split01, table_wbits, nullptr, nullptr);
}

void msm_context::impl::launch(size_t slot, cudaStream_t s, const void *d_points,
                               const void *d_scalars, size_t n, bool split01,
                               uint32_t table_wbits, slot_t *donor, cudaEvent_t gate) {
    auto &sl = at(slot);
    pinned_t &pin = pinned[slot];
    const fr_t *sc = (const fr_t *)d_scalars;
    const void *wsum;
    size_t bytes;
    sl.wants_table = split01 && table_pays(true, n, pin.counts, sl.dense);
    // The donor's sorted digits, once its sort is done; its stream then
    // waits for this MSM before it runs again (its digits stay until then).
    msm_detail::sorted_digits from;
    if (donor) {
        msm_detail::cuda_ok(cudaStreamWaitEvent(s, donor->sorted, 0), "cudaStreamWaitEvent");
        from = donor->e2 ? donor->e2->sorted() : donor->e1->sorted();
    }
    const msm_detail::sorted_digits *fp = donor ? &from : nullptr;
    bool table_run = false;
    if (sl.e2) {
        pin.windows_and_wbits = launch_on(*sl.e2, s, d_points, sc, n, split01, table_wbits, pin,
                                          sl.gathered, fp, sl.sorted, gate, &table_run,
                                          sl.dense);
        wsum = sl.e2->window_sums();
        bytes = sizeof(g2_engine::bucket_h);
    } else {
        pin.windows_and_wbits = launch_on(*sl.e1, s, d_points, sc, n, split01, table_wbits, pin,
                                          sl.gathered, fp, sl.sorted, gate, &table_run,
                                          sl.dense);
        wsum = sl.e1->window_sums();
        bytes = sizeof(g1_engine::bucket_h);
    }
    sl.table_run = table_run;
    if (donor) {
        msm_detail::cuda_ok(cudaEventRecord(sl.released, s), "cudaEventRecord");
        msm_detail::cuda_ok(cudaStreamWaitEvent(donor->stream, sl.released, 0),
                            "cudaStreamWaitEvent");
    }
    // The window sums, packed at the device's stride, into rows of the
    // largest bucket's size.
    msm_detail::cuda_ok(cudaMemcpy2DAsync(pin.wsum, sizeof(pin.wsum[0]), wsum, bytes, bytes,
                                          msm_detail::WSUM_SLOTS, cudaMemcpyDeviceToHost, s),
                        "copy of the window sums");
}

bool msm_context::wants_table(size_t slot) const { return p_->at(slot).wants_table; }

void msm_context::read(size_t slot, g1_proj_raw &out) const {
    auto &sl = p_->at(slot);
    if (!sl.e1)
        throw cuda_error{-(int)cudaErrorInvalidValue,
                         std::string("cuda-prover MSM: slot is not G1")};
    combine_windows<g1_bucket, g1_point>(p_->pinned[slot], sl.profile, out);
}

void msm_context::read(size_t slot, g2_proj_raw &out) const {
    auto &sl = p_->at(slot);
    if (!sl.e2)
        throw cuda_error{-(int)cudaErrorInvalidValue,
                         std::string("cuda-prover MSM: slot is not G2")};
    combine_windows<g2_bucket, g2_point>(p_->pinned[slot], sl.profile, out);
}

void msm_context::run(const msm_job *jobs, size_t njobs, cudaEvent_t ready, uint64_t *gpu_ns) {
    start(jobs, njobs, ready);
    finish(jobs, njobs, gpu_ns);
}

void msm_context::start(const msm_job *jobs, size_t njobs, cudaEvent_t ready) {
    using msm_detail::cuda_ok;
    // Each job on its slot's stream: the classifications first, all of them
    // in flight before the first count is read back.
    for (size_t i = 0; i < njobs; i++) {
        auto &sl = p_->at(jobs[i].slot);
        if (ready)
            cuda_ok(cudaStreamWaitEvent(sl.stream, ready, 0), "cudaStreamWaitEvent");
        cuda_ok(cudaEventRecord(sl.start, sl.stream), "cudaEventRecord");
        p_->classify(jobs[i].slot, sl.stream, jobs[i].d_points, jobs[i].d_scalars, jobs[i].n,
                     jobs[i].table_wbits == 0, jobs[i].table_wbits ? 0 : jobs[i].dense);
    }
    // The table runs among the jobs join those still in flight (a proof's
    // pass starts A and B, then H + L beside them): an engine chooses its
    // accumulation by the crowd it runs in (msm_engine::affine).
    for (size_t i = 0; i < njobs; i++) {
        auto &sl = p_->at(jobs[i].slot);
        cuda_ok(cudaStreamSynchronize(sl.stream), "MSM classification");
        if (jobs[i].table_wbits && !sl.in_crowd &&
            table_pays(true, jobs[i].n, p_->pinned[jobs[i].slot].counts)) {
            sl.in_crowd = true;
            p_->tables_in_flight++;
        }
    }
    for (size_t i = 0; i < njobs; i++) {
        auto &sl = p_->at(jobs[i].slot);
        if (sl.e2)
            sl.e2->crowd(p_->tables_in_flight);
        else
            sl.e1->crowd(p_->tables_in_flight);
    }
    // A table run over the same scalars, count and width as an earlier
    // job's table run (B in G1 and in G2) takes that job's sorted digits.
    for (size_t i = 0; i < njobs; i++) {
        auto &sl = p_->at(jobs[i].slot);
        impl::slot_t *donor = nullptr;
        for (size_t k = 0; k < i && jobs[i].table_wbits && !donor; k++) {
            auto &dk = p_->at(jobs[k].slot);
            if (dk.table_run && jobs[k].d_scalars == jobs[i].d_scalars &&
                jobs[k].n == jobs[i].n && jobs[k].table_wbits == jobs[i].table_wbits &&
                jobs[k].slot != jobs[i].slot)
                donor = &dk;
        }
        p_->launch(jobs[i].slot, sl.stream, jobs[i].d_points, jobs[i].d_scalars, jobs[i].n,
                   true, jobs[i].table_wbits, donor, jobs[i].gate);
        cuda_ok(cudaEventRecord(sl.stop, sl.stream), "cudaEventRecord");
    }
}

void msm_context::finish(const msm_job *jobs, size_t njobs, uint64_t *gpu_ns) {
    using msm_detail::cuda_ok;
    for (size_t i = 0; i < njobs; i++) {
        auto &sl = p_->at(jobs[i].slot);
        if (sl.in_crowd) {
            sl.in_crowd = false;
            p_->tables_in_flight--;
        }
        cuda_ok(cudaStreamSynchronize(sl.stream), "MSM");
        if (gpu_ns) {
            float ms = 0;
            cuda_ok(cudaEventElapsedTime(&ms, sl.start, sl.stop), "cudaEventElapsedTime");
            gpu_ns[i] = (uint64_t)(ms * 1e6);
        }
    }
}

void msm_context::drain() noexcept {
    for (auto &sl : p_->slots) {
        (void)cudaStreamSynchronize(sl.stream);
        sl.in_crowd = false;
    }
    p_->tables_in_flight = 0;
    (void)cudaGetLastError();
}

void msm_g1_device(const gpu_t &gpu, g1_proj_raw &out, const void *d_points,
                   const void *d_scalars, size_t n) {
    msm_context ctx(gpu, {{msm_group::g1, n}});
    msm_job job{0, d_points, d_scalars, n};
    ctx.run(&job, 1, nullptr, nullptr);
    ctx.read(0, out);
}

void msm_g2_device(const gpu_t &gpu, g2_proj_raw &out, const void *d_points,
                   const void *d_scalars, size_t n) {
    msm_context ctx(gpu, {{msm_group::g2, n}});
    msm_job job{0, d_points, d_scalars, n};
    ctx.run(&job, 1, nullptr, nullptr);
    ctx.read(0, out);
}

}  // namespace cp_cuda
