// Lent witness buffers (witness_pool.hpp).
#include "witness_pool.hpp"

#include <algorithm>

namespace cp {

witness_buffer::witness_buffer(witness_pool &pool, void *p, size_t bytes, size_t num_inputs)
    : pool_(pool), p_(p), bytes_(bytes) {
    inputs_ = static_cast<blst_fr *>(p);
    aux_ = reinterpret_cast<blst_fr *>(static_cast<char *>(p) +
                                       witness_pool::bytes_for(num_inputs, 0));
}

witness_buffer::~witness_buffer() { pool_.give_back(p_, bytes_); }

size_t witness_pool::bytes_for(size_t num_inputs, size_t num_aux) {
    const size_t in = (num_inputs * sizeof(blst_fr) + 255) / 256 * 256;
    return in + num_aux * sizeof(blst_fr);
}

witness_pool::witness_pool(alloc_fn alloc, free_fn release, uint64_t cap_bytes)
    : alloc_(alloc), free_(release), cap_(cap_bytes) {}

witness_pool::~witness_pool() { release_idle(); }

std::unique_ptr<witness_buffer> witness_pool::lend(size_t num_inputs, size_t num_aux) {
    const size_t need = std::max<size_t>(bytes_for(num_inputs, num_aux), 256);
    if (need > cap_)
        return nullptr;
    std::vector<buffer> drop;
    {
        std::lock_guard<std::mutex> lk(mu_);
        // The smallest idle buffer that fits.
        size_t best = idle_.size();
        for (size_t i = 0; i < idle_.size(); i++)
            if (idle_[i].bytes >= need && (best == idle_.size() || idle_[i].bytes < idle_[best].bytes))
                best = i;
        if (best < idle_.size()) {
            const buffer b = idle_[best];
            // The wrapper first: if it cannot be made, the buffer stays idle.
            std::unique_ptr<witness_buffer> w(new witness_buffer(*this, b.p, b.bytes, num_inputs));
            idle_.erase(idle_.begin() + static_cast<long>(best));
            return w;
        }
        // Room for a new one: idle buffers (all too small) go first.
        while (held_ + need > cap_ && !idle_.empty()) {
            drop.push_back(idle_.back());
            held_ -= idle_.back().bytes;
            idle_.pop_back();
        }
        if (held_ + need > cap_)
            return nullptr;  // the rest is lent
        held_ += need;  // reserved; allocated below, outside the lock
    }
    for (const buffer &b : drop)
        free_(b.p);
    void *p = alloc_(need);
    if (!p) {
        std::lock_guard<std::mutex> lk(mu_);
        held_ -= need;
        return nullptr;
    }
    try {
        return std::unique_ptr<witness_buffer>(new witness_buffer(*this, p, need, num_inputs));
    } catch (...) {
        // No wrapper (out of host memory): the buffer and its reservation go.
        free_(p);
        std::lock_guard<std::mutex> lk(mu_);
        held_ -= need;
        throw;
    }
}

void witness_pool::give_back(void *p, size_t bytes) {
    std::lock_guard<std::mutex> lk(mu_);
    idle_.push_back(buffer{p, bytes});
}

uint64_t witness_pool::release_idle() {
    std::vector<buffer> drop;
    {
        std::lock_guard<std::mutex> lk(mu_);
        drop.swap(idle_);
        for (const buffer &b : drop)
            held_ -= b.bytes;
    }
    uint64_t freed = 0;
    for (const buffer &b : drop) {
        free_(b.p);
        freed += b.bytes;
    }
    return freed;
}

uint64_t witness_pool::held() const {
    std::lock_guard<std::mutex> lk(mu_);
    return held_;
}

}  // namespace cp
