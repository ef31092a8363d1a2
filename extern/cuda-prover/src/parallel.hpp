// Owns: a minimal fork-join parallel_for over std::thread. The calling thread
// runs chunk 0; exceptions from any chunk are rethrown after every chunk has
// been joined.
#pragma once

#include <algorithm>
#include <cstddef>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace cp {

inline int hardware_threads() {
    unsigned n = std::thread::hardware_concurrency();
    return n == 0 ? 1 : static_cast<int>(n);
}

// Number of chunks parallel_for uses for n items with at least `grain` items
// per chunk.
inline size_t chunk_count(size_t n, int threads, size_t grain = 1) {
    if (n == 0) return 0;
    size_t t = static_cast<size_t>(std::max(threads, 1));
    if (grain < 1) grain = 1;
    size_t by_grain = (n + grain - 1) / grain;
    return std::max<size_t>(1, std::min(t, by_grain));
}

// Calls f(begin, end, chunk) for contiguous chunks covering [0, n).
template <class F>
void parallel_for(size_t n, int threads, size_t grain, F &&f) {
    size_t t = chunk_count(n, threads, grain);
    if (t == 0) return;
    if (t == 1) {
        f(size_t(0), n, size_t(0));
        return;
    }
    std::exception_ptr err;
    std::mutex mu;
    auto run = [&](size_t tid) {
        size_t b = n * tid / t, e = n * (tid + 1) / t;
        try {
            f(b, e, tid);
        } catch (...) {
            std::lock_guard<std::mutex> lk(mu);
            if (!err) err = std::current_exception();
        }
    };
    std::vector<std::thread> workers;
    workers.reserve(t - 1);
    try {
        for (size_t tid = 1; tid < t; tid++) workers.emplace_back(run, tid);
    } catch (...) {
        for (auto &w : workers) w.join();
        throw;
    }
    run(0);
    for (auto &w : workers) w.join();
    if (err) std::rethrow_exception(err);
}

}  // namespace cp
