// Streamed keys (stream_plan.hpp): plan_stream with temporaries that jump
// with the chunk, shared streamed passes (plan_shared, where sharing pays),
// and the chunk sequence of a streamed pass (stream_sequence).
#include <algorithm>

#include "common.hpp"
#include "stream_plan.hpp"

using namespace cp;

// Temporaries that jump with the chunk (a larger MSM window) do not push
// the plan down to the smallest buffers when a mid-sized one fits.
void test_plan_stream_steep_temp() {
    std::printf("plan_stream with temporaries in steps\n");
    msm_sizes ms;
    ms.n_hl = 200u << 20;
    ms.n_a = 100u << 20;
    ms.n_b = 30u << 20;
    // 1 GiB of temporaries from 4M G1 points a chunk on, 8 bytes a point below.
    auto temp = [](uint64_t g1, uint64_t) {
        return g1 >= (4u << 20) ? (uint64_t(1) << 30) : g1 * 8;
    };
    const uint64_t fixed = uint64_t(13) << 30, avail = fixed + (uint64_t(1200) << 20);
    stream_plan p;
    CHECK(plan_stream(p, avail, fixed, ms, temp), "fits");
    CHECK(p.total_bytes <= avail, "within avail");
    CHECK(p.buffer_bytes > (uint64_t(256) << 20),
          "buffers of %llu bytes: not the largest that fits", (unsigned long long)p.buffer_bytes);
    // One grain more does not fit (or the cap was reached).
    const uint64_t next = p.buffer_bytes + STREAM_GRAIN;
    const uint64_t next_total = fixed + 2 * next + temp(next / STREAM_G1_BYTES, 0);
    CHECK(next_total > avail || p.buffer_bytes >= ms.n_hl * STREAM_G1_BYTES,
          "a larger buffer fitted");
}

// Shared streamed passes (plan_shared): proofs join while the buffers stay
// at least half of one proof's, never more than STREAM_MAX_SHARED or than
// wanted; the plan counts each joining proof's scalars.
void test_plan_shared() {
    std::printf("plan_shared\n");
    msm_sizes ms;
    ms.n_hl = 30000;
    ms.n_a = 15000;
    ms.n_b = 12000;
    auto temp = [](uint64_t g1, uint64_t) { return g1 * 8; };
    const uint64_t fixed = 1 << 20, set = 300 << 10;
    int cases = 0;
    for (uint64_t avail = fixed + (64 << 10); avail < (uint64_t(24) << 20); avail += 97 << 10)
        for (size_t wanted : {size_t(1), size_t(2), size_t(5), size_t(64)}) {
            stream_plan single, p;
            if (!plan_stream(single, avail, fixed, ms, temp)) continue;
            const size_t n = plan_shared(p, single, wanted, avail, fixed, set, ms, temp);
            CHECK(n >= 1 && n <= std::min(wanted, STREAM_MAX_SHARED), "avail %llu: %zu of %zu",
                  (unsigned long long)avail, n, wanted);
            CHECK(p.total_bytes <= avail, "avail %llu: the shared plan needs %llu",
                  (unsigned long long)avail, (unsigned long long)p.total_bytes);
            CHECK(n == 1 || (p.buffer_bytes * 2 >= single.buffer_bytes &&
                             p.total_bytes >= fixed + (n - 1) * set + 2 * p.buffer_bytes),
                  "avail %llu: %zu proofs, buffers %llu of %llu", (unsigned long long)avail, n,
                  (unsigned long long)p.buffer_bytes, (unsigned long long)single.buffer_bytes);
            CHECK(n > 1 || (p.buffer_bytes == single.buffer_bytes), "alone: the single plan");
            // One more would not fit, or would halve the buffers.
            if (n < std::min(wanted, STREAM_MAX_SHARED)) {
                stream_plan q;
                const bool fits = plan_stream(q, avail, fixed + n * set, ms, temp);
                CHECK(!fits || q.buffer_bytes * 2 < single.buffer_bytes,
                      "avail %llu: a proof more would have fitted", (unsigned long long)avail);
            }
            cases++;
        }
    std::printf("  %d cases\n", cases);
    // Where sharing pays (CP_SHARE_AUTO): while the key's copy outlasts one
    // proof's sums, up to copy / sum proofs, only for the measured key.
    const int k1 = 0, k2 = 0;
    const stream_cost none, fast{&k1, 10, 100}, even{&k1, 100, 100}, slow{&k1, 350, 100},
        slowest{&k1, 100000, 1};
    CHECK(stream_share_pays(none, &k1) == 1, "no measurement: alone");
    CHECK(stream_share_pays(fast, &k1) == 1 && stream_share_pays(even, &k1) == 1,
          "sums at least as long as the copy: alone");
    CHECK(stream_share_pays(slow, &k1) == 4, "copy 3.5 sums: 4 (%zu)", stream_share_pays(slow, &k1));
    CHECK(stream_share_pays(slowest, &k1) == STREAM_MAX_SHARED, "at most STREAM_MAX_SHARED");
    CHECK(stream_share_pays(slow, &k2) == 1, "another key's measurement: alone");
    CHECK(stream_share_wanted(CP_SHARE_ALWAYS, none, &k1, 5) == 5 &&
              stream_share_wanted(CP_SHARE_NEVER, slow, &k1, 5) == 1 &&
              stream_share_wanted(CP_SHARE_AUTO, slow, &k1, 3) == 3 &&
              stream_share_wanted(CP_SHARE_AUTO, slow, &k1, 9) == 4,
          "modes");
}

// ------------------------------------------------------- stream sequence

// A streamed pass's chunks (stream_plan.hpp): each MSM's bases cut in
// order, contiguous, none lost or repeated, at most a chunk's worth each, an
// empty MSM one chunk of none; as many as the plan counts.
void test_stream_sequence() {
    std::printf("stream sequence\n");
    const uint64_t sizes[] = {0, 1, 63, 64, 65, 1000, 4097};
    const uint64_t g1_pers[] = {1, 3, 64, 1000};
    const uint64_t g2_pers[] = {1, 2, 32, 500};
    const bool g2[4] = {false, false, false, true};
    int cases = 0;
    for (uint64_t hl : sizes)
        for (uint64_t a : sizes)
            for (uint64_t b : sizes)
                for (uint64_t p1 : g1_pers)
                    for (uint64_t p2 : g2_pers) {
                        const uint64_t n[4] = {hl, a, b, b};
                        std::vector<stream_extent> ex;
                        for (size_t j = 0; j < 4; j++) ex.push_back({n[j], g2[j] ? p2 : p1});
                        const std::vector<stream_chunk> seq = stream_sequence(ex);
                        size_t k = 0;
                        for (size_t j = 0; j < 4; j++) {
                            const uint64_t per = g2[j] ? p2 : p1;
                            uint64_t next = 0, chunks = 0;
                            bool ok = true;
                            for (; k < seq.size() && seq[k].msm == j; k++, chunks++) {
                                ok = ok && seq[k].first == next && seq[k].count <= per &&
                                     (seq[k].count > 0 || n[j] == 0);
                                next += seq[k].count;
                            }
                            CHECK(ok && next == n[j] && chunks == stream_chunks_of(n[j], per),
                                  "n %llu per %llu: %llu bases in %llu chunks",
                                  (unsigned long long)n[j], (unsigned long long)per,
                                  (unsigned long long)next, (unsigned long long)chunks);
                        }
                        CHECK(k == seq.size(), "%zu chunks after the last MSM's", seq.size() - k);
                        cases++;
                    }
    // The plan's count, for plans of several sizes.
    msm_sizes ms;
    ms.n_hl = 3000;
    ms.n_a = 1500;
    ms.n_b = 1200;
    for (uint64_t avail : {uint64_t(2) << 10, uint64_t(64) << 10, uint64_t(300) << 10,
                           uint64_t(1) << 30}) {
        stream_plan plan;
        if (!plan_stream(plan, avail, 0, ms, [](uint64_t, uint64_t) { return uint64_t(0); }))
            continue;
        const size_t got = stream_sequence({{ms.n_hl, plan.g1_per_chunk},
                                            {ms.n_a, plan.g1_per_chunk},
                                            {ms.n_b, plan.g1_per_chunk},
                                            {ms.n_b, plan.g2_per_chunk}})
                               .size();
        CHECK(got == plan.chunks, "avail %llu: %zu chunks, the plan says %llu",
              (unsigned long long)avail, got, (unsigned long long)plan.chunks);
        cases++;
    }
    std::printf("  %d cases\n", cases);
}
