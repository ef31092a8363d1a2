// The working cache of one proof shape, carved from one device allocation
// that is reused between proofs and grown when a larger shape comes:
//   abc   a, b, c evaluations over the domain (m each); H ends up in a
//   hl    scalars of the merged H+L MSM: H's m-1 coefficients, then aux
//   in    the input assignment
//   sa    scalars of A: inputs, then aux filtered by a_aux_density
//   sb    scalars of B: inputs filtered by b_input_density, then aux
//         filtered by b_aux_density
//   bits  the three density bitmaps (64-bit words)
//   pre   per bitmap word, the set bits in the words before it (uint32)
//   bad   the first unsatisfied row of a shape's evaluation
// A phased pass (compact_layout_for) lays the MSM scalars over a, b, c once
// H is computed.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "backend.hpp"
#include "device/budget.hpp"
#include "device/raii.hpp"

namespace cp {
namespace cuda_dev {

struct cache_layout {
    size_t m, n_hl, ni, na, n_a, n_b, w_in, w_aux;
    size_t abc, hl, in, sa, sb, bits, pre, bad, total;
    bool compact = false;     // compact_layout_for or shape_rows_layout_for
    bool shape_rows = false;  // shape_rows_layout_for
};

cache_layout layout_for(const proving_key &key, size_t m);

// The layout of a phased pass (a streamed key with a, b, c sent up from the
// host): a, b, c first; once H is computed in a, hl starts where a did (H's
// m - 1 coefficients stay where the NTT left them, aux follows over b and
// c), then sa and sb. The parts share max(3 m, n_hl + n_a + n_b) scalars
// instead of their sum; in, bits, pre and bad come after.
cache_layout compact_layout_for(const proving_key &key, size_t m);

// The layout of a phased pass that evaluates a, b, c on the device from
// the shape's rows streamed through it: a, b, c, then aux (read by the
// evaluation). Once H is computed in a, its m - 1 coefficients are copied
// to the end of c, just before aux, where hl starts; sa and sb are laid
// over a and b. total 0 when A's and B's scalars do not fit in 2 m + 1.
cache_layout shape_rows_layout_for(const proving_key &key, size_t m);

// The MSM slots of a proof: h + l, a, b_g1 (G1) and b_g2 (G2), run at the
// same time (msm_context); with room for runs over the key's tables when
// it has them. wide: h + l in batches of WIDE_HL_BATCH where it has at
// least WIDE_HL_MIN scalars (and no tables); with CP_MSM_OVERLAP_SORT set
// (diagnostics, to measure), those batches are each sorted while the one
// before accumulates (msm_slot_spec::overlap_sort).
std::vector<cp_cuda::msm_slot_spec> msm_slots(const cache_layout &L, bool tables = false,
                                              bool wide = false);

// H + L's Pippenger in batches of 2^25 scalars at 19-bit windows (14
// windows) instead of 2^22 at 16 (16 windows): the 32 GiB C2's H + L
// shape (2^28 scalars) took 1,039 ms against 1,147 on an H100 (2^26
// batches at 20 bits: 1,027; extern/cuda-prover/tests/results/h100-msm-big-
// 2e27-batches.txt); in the 32 GiB C2 on an H200 0.966 s a partition
// against 1.069, the device part 1.60 s against 1.70 (filecoin/benches/
// results/h200-c2-32gib-2026-12-06-wide/), for about 3.4 GiB more in its
// MSM slot. Only where
// H + L has 2^26 scalars or more; the memory plan decides (key_placement).
constexpr size_t WIDE_HL_BATCH = size_t(1) << 25;
constexpr size_t WIDE_HL_MIN = size_t(1) << 26;

// The device bytes of the MSM context for the layout's slots.
size_t temp_bytes(const cache_layout &L, int sm_count, bool tables = false);

// The smallest power of two >= n (n <= 2^MAX_LG_DOMAIN from the callers;
// the loop stops at 2^62 whatever it is given).
size_t domain_for(uint64_t n);

struct working_cache {
    device_buffer buf;
    std::atomic<uint64_t> bytes{0};
    std::atomic<uint64_t> allocations{0};

    // Bytes a cache of `working` bytes would add to what is held now.
    size_t need(size_t working) const { return bytes.load() >= working ? 0 : working; }

    // Holds at least `working` bytes, with `temp` more left free for
    // sppark's temporaries (kept mapped in the default pool between MSMs).
    void ensure(int cuda_id, const memory_budget &budget, size_t working, size_t temp);

    // Frees the cache; returns the bytes released.
    uint64_t release();
};

}  // namespace cuda_dev
}  // namespace cp
