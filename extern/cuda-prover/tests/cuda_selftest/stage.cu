// `cuda_selftest stage`: host to device upload rates, and the staging
// ring (device/staging.hpp) checked against its source.
#include "common.hpp"
#include "device/staging.hpp"

// Host to device upload rates (GB/s) of a witness-sized pageable buffer:
// the ceilings (one DMA from pinned memory, the pool's copy into pinned
// memory alone, cudaMemcpy from pageable memory), then the staging ring
// (device/staging.hpp) at several buffer and piece sizes, its result
// checked against the source.
void stage_bench(const gpu_t &gpu) {
    std::printf("INFO host threads in the gpu's pool: %zu\n", gpu.ncpus());
    for (size_t bytes : {size_t(32) << 20, size_t(83200000)}) {
        std::vector<unsigned char> host(bytes);
        for (size_t i = 0; i < bytes; i++)
            host[i] = (unsigned char)(i * 131 + (i >> 12));
        void *dev = nullptr, *pin = nullptr;
        ck(cudaMalloc(&dev, bytes), "cudaMalloc");
        ck(cudaHostAlloc(&pin, bytes, cudaHostAllocDefault), "cudaHostAlloc");
        std::memcpy(pin, host.data(), bytes);
        cudaStream_t s;
        ck(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "stream");
        const double mb = bytes / 1e6;
        auto rate = [&](const char *what, auto &&f) {
            f();
            const int reps = 5;
            const double t0 = now_s();
            for (int r = 0; r < reps; r++)
                f();
            const double ms = (now_s() - t0) / reps * 1e3;
            std::printf("TIME stage %.0f MB %s: %.2f ms, %.1f GB/s\n", mb, what, ms,
                        bytes / ms / 1e6);
        };
        rate("DMA from pinned", [&] {
            ck(cudaMemcpyAsync(dev, pin, bytes, cudaMemcpyHostToDevice, s), "DMA");
            ck(cudaStreamSynchronize(s), "sync");
        });
        rate("pool copy into pinned (512 KiB pieces)", [&] {
            const size_t piece = 512 * 1024, pieces = (bytes + piece - 1) / piece;
            gpu.par_map(pieces, 1, [&](size_t i) {
                const size_t off = i * piece;
                std::memcpy((char *)pin + off, host.data() + off, std::min(piece, bytes - off));
            });
        });
        rate("cudaMemcpy from pageable", [&] {
            ck(cudaMemcpy(dev, host.data(), bytes, cudaMemcpyHostToDevice), "cudaMemcpy");
        });
        struct cfg_t { size_t chunk, piece; } cfgs[] = {
            {8 << 20, 512 << 10}, {8 << 20, 1 << 20}, {16 << 20, 1 << 20}, {16 << 20, 2 << 20},
            {32 << 20, 1 << 20}, {32 << 20, 2 << 20}, {4 << 20, 256 << 10}, {2 << 20, 256 << 10}};
        for (const auto &c : cfgs) {
            cp::cuda_dev::stager st;
            st.tune(c.chunk, c.piece);
            st.ensure();
            char label[96];
            std::snprintf(label, sizeof label, "staged, buffers of %zu KiB, pieces of %zu KiB",
                          c.chunk >> 10, c.piece >> 10);
            ck(cudaMemset(dev, 0, bytes), "memset");
            rate(label, [&] {
                st.stage(gpu, dev, host.data(), bytes);
                ck(cudaStreamSynchronize(st.stream()), "sync");
            });
            std::vector<unsigned char> back(bytes);
            ck(cudaMemcpy(back.data(), dev, bytes, cudaMemcpyDeviceToHost), "DtoH");
            report(back == host, std::string("stage ") + label + " copies the bytes");
            st.release();
        }
        cudaStreamDestroy(s);
        cudaFreeHost(pin);
        cudaFree(dev);
    }
}
