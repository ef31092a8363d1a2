// The pinned staging ring (staging.hpp).
#include "device/staging.hpp"

#include <algorithm>
#include <cstring>

namespace cp {
namespace cuda_dev {

void stager::ensure() {
    copy_.create("cudaStreamCreate(copy)");
    for (int i = 0; i < STAGE_BUFS; i++) {
        if (!bufs_[i])
            bufs_[i].allocate(chunk_, "staging buffer");
        evs_[i].create();
    }
}

void stager::release() {
    for (int i = 0; i < STAGE_BUFS; i++) {
        evs_[i].reset();
        bufs_[i].reset();
    }
    next_ = 0;
}

void stager::tune(size_t chunk, size_t piece) {
    release();
    chunk_ = chunk ? chunk : STAGE_CHUNK;
    piece_ = piece ? piece : STAGE_PIECE;
}

bool stager::holds_anything() const {
    if (copy_)
        return true;
    for (int i = 0; i < STAGE_BUFS; i++)
        if (bufs_[i] || evs_[i])
            return true;
    return false;
}

void stager::stage(const gpu_t &gpu, void *dst, const void *src, size_t bytes) {
    const char *s = (const char *)src;
    char *d = (char *)dst;
    while (bytes) {
        const size_t len = std::min(bytes, chunk_);
        const unsigned b = next_++ % STAGE_BUFS;
        cuda_check(cudaEventSynchronize(evs_[b].get()), "staging buffer");
        char *h = (char *)bufs_[b].get();
        if (len <= 2 * piece_) {
            std::memcpy(h, s, len);
        } else {
            const size_t pieces = (len + piece_ - 1) / piece_;
            gpu.par_map(pieces, 1, [&](size_t i) {
                const size_t off = i * piece_;
                std::memcpy(h + off, s + off, std::min(piece_, len - off));
            });
        }
        cuda_check(cudaMemcpyAsync(d, h, len, cudaMemcpyHostToDevice, copy_.get()), "upload");
        cuda_check(cudaEventRecord(evs_[b].get(), copy_.get()), "cudaEventRecord");
        s += len;
        d += len;
        bytes -= len;
    }
}

}  // namespace cuda_dev
}  // namespace cp
