// The witness pool (witness_pool.hpp): lend, reuse, the cap, a failed
// allocation, every buffer freed with the pool.
#include <cstdlib>

#include "common.hpp"
#include "witness_pool.hpp"

using namespace cp;

// ---------------------------------------------------------------- witness pool

static int g_pool_allocs = 0, g_pool_frees = 0;
static bool g_pool_fail = false;
static void *pool_alloc(size_t bytes) {
    if (g_pool_fail) return nullptr;
    g_pool_allocs++;
    return std::malloc(bytes);
}
static void pool_free(void *p) {
    g_pool_frees++;
    std::free(p);
}

void test_witness_pool() {
    std::printf("witness pool (lend, reuse, cap, failed allocation)\n");
    const size_t big = witness_pool::bytes_for(3, 1000);
    CHECK(big == 256 + 1000 * sizeof(blst_fr), "bytes_for(3, 1000) = %zu", big);
    {
        witness_pool pool(pool_alloc, pool_free, 2 * big + 100);
        auto a = pool.lend(3, 1000);
        CHECK(a && g_pool_allocs == 1, "first lease allocates");
        if (a) {
            CHECK((char *)a->aux() - (char *)a->inputs() == 256, "aux at the 256-byte boundary");
            a->aux()[999] = rnd_fr();  // the whole buffer is writable
        }
        auto b = pool.lend(3, 1000);
        CHECK(b && g_pool_allocs == 2 && pool.held() == 2 * big, "second lease allocates");
        CHECK(!pool.lend(3, 1000), "a third lease is over the cap");
        const void *pa = a ? a->inputs() : nullptr;
        a.reset();
        auto c = pool.lend(1, 10);
        CHECK(c && c->inputs() == pa && g_pool_allocs == 2, "a smaller lease reuses the idle buffer");
        c.reset();
        b.reset();
        // Both idle, too small for this one: they are freed to make room.
        auto d = pool.lend(3, 3000);
        CHECK(!d && g_pool_frees == 0, "over the cap alone: nothing lent, nothing freed");
        auto e = pool.lend(3, 1500);
        CHECK(e && g_pool_frees == 2 && g_pool_allocs == 3, "idle buffers freed for a larger one");
        e.reset();
        CHECK(pool.release_idle() == witness_pool::bytes_for(3, 1500) && pool.held() == 0,
              "release_idle frees the idle buffer");
        g_pool_fail = true;
        CHECK(!pool.lend(1, 10) && pool.held() == 0, "a failed allocation lends nothing");
        g_pool_fail = false;
        auto f = pool.lend(1, 10);
        CHECK(f && pool.held() > 0, "lends again");
    }
    CHECK(g_pool_allocs == g_pool_frees, "every buffer freed with the pool (%d allocated, %d freed)",
          g_pool_allocs, g_pool_frees);
}
