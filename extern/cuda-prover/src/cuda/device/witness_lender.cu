// Lent witness buffers and early uploads (witness_lender.hpp).
#include "device/witness_lender.hpp"

#include "device/errors.hpp"

#include <cstdlib>
#include <vector>

namespace cp {
namespace cuda_dev {

namespace {

// Portable pinned memory: any device may read it. nullptr when the runtime
// cannot pin more.
void *pinned_alloc(size_t bytes) {
    void *p = nullptr;
    if (cudaHostAlloc(&p, bytes, cudaHostAllocPortable) != cudaSuccess) {
        (void)cudaGetLastError();
        return nullptr;
    }
    return p;
}
void pinned_free(void *p) { (void)cudaFreeHost(p); }

// Whether a witness of num_aux values may go packed (its early copy is
// allowed and it is large enough); CP_WITNESS_UNPACKED (measurements):
// none does.
bool may_pack(size_t num_aux, bool early) {
    static const bool off = std::getenv("CP_WITNESS_UNPACKED") != nullptr;
    return early && num_aux >= PACK_MIN_AUX && !off;
}

}  // namespace

class cuda_witness_lease final : public witness_lease {
public:
    // b: the pinned buffer for the whole witness, or nullptr for a witness
    // that may go packed (its buffer is chosen by fill).
    cuda_witness_lease(witness_lender &lender, std::unique_ptr<witness_buffer> b, size_t bytes,
                       bool early)
        : lender_(lender), b_(std::move(b)), bytes_(bytes), early_(early) {}

    ~cuda_witness_lease() override {
        if (d_) {
            // The early copy reads the pinned buffer, which goes back to
            // the pool (for another witness) once this lease ends: wait for
            // it, in case the device part failed before it waited itself.
            // The free is stream-ordered after that copy; the pass that read
            // the device copy has ended (the lease outlives the device part).
            if (ev_)
                (void)cudaEventSynchronize(ev_.get());
            (void)cudaFreeAsync(d_, lender_.stream_.get());
            lender_.unreserve(bytes_);
        }
        (void)cudaGetLastError();
    }

    void fill(circuit_job &job, int threads) override {
        if (!b_) {
            if (pack(job, threads))
                return;
            b_ = lender_.pinned_.lend(job.num_inputs, job.num_aux);
            if (!b_)
                return;  // the pass reads the witness where it is
            bytes_ = witness_pool::bytes_for(job.num_inputs, job.num_aux);
        }
        copy_witness_into(*b_, job, threads);
    }

    void filled(circuit_job &job) override {
        if (packed_) {
            const cudaStream_t s = lender_.stream_.get();
            ev_.create();
            cuda_check(cudaMemcpyAsync(d_, b_->inputs(), layout_.bytes, cudaMemcpyHostToDevice, s),
                       "early upload of the packed witness");
            cuda_check(cudaEventRecord(ev_.get(), s), "cudaEventRecord");
            up_.d_packed = d_;
            up_.packed = &layout_;
            up_.done = ev_.get();
            job.early_upload = &up_;
            return;
        }
        if (!b_ || !early_ || !lender_.ensure_early() || !lender_.reserve(bytes_))
            return;
        const cudaStream_t s = lender_.stream_.get();
        if (cudaMallocFromPoolAsync(&d_, bytes_, lender_.pool_, s) != cudaSuccess) {
            (void)cudaGetLastError();
            d_ = nullptr;
            lender_.unreserve(bytes_);
            return;  // no room: the pass uploads from the pinned buffer
        }
        ev_.create();
        cuda_check(cudaMemcpyAsync(d_, b_->inputs(), bytes_, cudaMemcpyHostToDevice, s),
                   "early upload of the witness");
        cuda_check(cudaEventRecord(ev_.get(), s), "cudaEventRecord");
        up_.d_inputs = d_;
        up_.d_aux = (const char *)d_ + ((const char *)b_->aux() - (const char *)b_->inputs());
        up_.done = ev_.get();
        job.early_upload = &up_;
    }

private:
    // The witness packed into pinned memory, with room for its early copy
    // on the device taken: false (and nothing held) when packing does not
    // pay or there is no room for either. The job's inputs and aux stay
    // where they are (the pass reads the early copy).
    bool pack(const circuit_job &job, int threads) {
        // A witness of the size whose packing did not pay last time is
        // taken as dense again (one pass over its values saved).
        if (lender_.dense_aux_.load() == job.num_aux)
            return false;
        const witness_split split = split_witness(job.aux, job.num_aux, threads);
        const packed_witness_layout L = packed_layout(job.num_inputs, job.num_aux, split.others);
        if (!packing_pays(L)) {
            lender_.dense_aux_.store(job.num_aux);
            return false;
        }
        if (!lender_.ensure_early() || !lender_.reserve(L.bytes))
            return false;
        // Room for a packed witness up to an eighth larger, so that the
        // next partitions reuse this pinned buffer (pinning takes tens of
        // ms a few hundred MB).
        const size_t room = L.bytes + L.bytes / 8;
        std::unique_ptr<witness_buffer> b =
            lender_.pinned_.lend(0, (room + sizeof(blst_fr) - 1) / sizeof(blst_fr));
        void *d = nullptr;
        if (!b || cudaMallocFromPoolAsync(&d, L.bytes, lender_.pool_, lender_.stream_.get()) !=
                      cudaSuccess) {
            (void)cudaGetLastError();
            lender_.unreserve(L.bytes);
            return false;
        }
        pack_witness(job.inputs, job.aux, split, L, b->inputs(), threads);
        b_ = std::move(b);
        d_ = d;
        bytes_ = L.bytes;
        layout_ = L;
        packed_ = true;
        return true;
    }

    witness_lender &lender_;
    std::unique_ptr<witness_buffer> b_;
    size_t bytes_;
    bool early_;
    bool packed_ = false;
    packed_witness_layout layout_;
    void *d_ = nullptr;
    cuda_event ev_;
    early_upload up_;
};

witness_lender::witness_lender(int cuda_id)
    : cuda_id_(cuda_id), pinned_(pinned_alloc, pinned_free, PINNED_WITNESS_POOL_BYTES) {}

witness_lender::~witness_lender() {
    // The device's destructor binds the thread first when holds_anything().
    pinned_.release_idle();
    stream_.reset();
    if (pool_)
        (void)cudaMemPoolDestroy(pool_);
}

std::unique_ptr<witness_lease> witness_lender::lend(size_t num_inputs, size_t num_aux,
                                                    bool early) {
    if (may_pack(num_aux, early))
        return std::unique_ptr<witness_lease>(new cuda_witness_lease(*this, nullptr, 0, early));
    auto b = pinned_.lend(num_inputs, num_aux);
    if (!b)
        return nullptr;
    const size_t bytes = witness_pool::bytes_for(num_inputs, num_aux);
    return std::unique_ptr<witness_lease>(new cuda_witness_lease(*this, std::move(b), bytes, early));
}

void witness_lender::warm(size_t num_inputs, size_t num_aux, unsigned count, bool early) {
    // A large witness that may go packed takes a buffer of its packed
    // size, known once it is filled: no buffer of the whole witness held
    // idle for it (at the 32 GiB C2's size, 3.9 GiB of pinned memory).
    if (may_pack(num_aux, early) && dense_aux_.load() != num_aux &&
        witness_pool::bytes_for(num_inputs, num_aux) > PACKED_WARM_LIMIT)
        return;
    std::vector<std::unique_ptr<witness_buffer>> held;
    for (unsigned i = 0; i < count; i++) {
        auto b = pinned_.lend(num_inputs, num_aux);
        if (!b)
            break;
        held.push_back(std::move(b));
    }
    if (!early || held.empty() || !ensure_early())
        return;
    // The pool keeps what is freed (release threshold): allocate and free
    // what these proofs' early uploads take.
    const size_t bytes = witness_pool::bytes_for(num_inputs, num_aux);
    const cudaStream_t s = stream_.get();
    std::vector<void *> ptrs;
    for (size_t i = 0; i < held.size() && (ptrs.size() + 1) * bytes <= EARLY_UPLOAD_BYTES; i++) {
        void *p = nullptr;
        if (cudaMallocFromPoolAsync(&p, bytes, pool_, s) != cudaSuccess) {
            (void)cudaGetLastError();
            break;
        }
        ptrs.push_back(p);
    }
    for (void *p : ptrs)
        (void)cudaFreeAsync(p, s);
    (void)cudaStreamSynchronize(s);
    (void)cudaGetLastError();
}

bool witness_lender::ensure_early() {
    std::lock_guard<std::mutex> lk(mu_);
    if (pool_)
        return true;
    if (early_failed_)
        return false;
    cudaMemPoolProps props = {};
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = cuda_id_;
    if (cudaMemPoolCreate(&pool_, &props) != cudaSuccess) {
        (void)cudaGetLastError();
        pool_ = nullptr;
        early_failed_ = true;
        return false;
    }
    // Keep freed memory for the next proofs (trim gives it back).
    uint64_t keep = UINT64_MAX;
    (void)cudaMemPoolSetAttribute(pool_, cudaMemPoolAttrReleaseThreshold, &keep);
    stream_.create("cudaStreamCreate(early upload)");
    return true;
}

bool witness_lender::reserve(uint64_t bytes) {
    uint64_t now = early_bytes_.load();
    do {
        if (now + bytes > EARLY_UPLOAD_BYTES)
            return false;
    } while (!early_bytes_.compare_exchange_weak(now, now + bytes));
    return true;
}

void witness_lender::trim() {
    pinned_.release_idle();
    std::lock_guard<std::mutex> lk(mu_);
    if (pool_) {
        if (stream_)
            (void)cudaStreamSynchronize(stream_.get());
        (void)cudaMemPoolTrimTo(pool_, 0);
    }
    (void)cudaGetLastError();
}

bool witness_lender::holds_anything() const { return pinned_.held() != 0 || pool_ != nullptr; }

}  // namespace cuda_dev
}  // namespace cp
