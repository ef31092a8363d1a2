// The device operations of the CUDA backend: H via NTTs and the MSMs, on
// device buffers of one GPU. This header sees neither blst.h nor sppark's
// field types (the two define limb_t differently), so values cross it as raw
// limbs with blst's memory layout (Montgomery form, little-endian limbs).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include <util/gpu_t.cuh>

namespace cp_cuda {

struct fr_raw { uint64_t l[4]; };
struct g1_affine_raw { uint64_t l[12]; };   // blst_p1_affine
struct g2_affine_raw { uint64_t l[24]; };   // blst_p2_affine
struct g1_proj_raw { uint64_t l[18]; };     // blst_p1 (Jacobian X, Y, Z)
struct g2_proj_raw { uint64_t l[36]; };     // blst_p2
struct shape_entry_raw { uint32_t col, coeff; };  // cp_shape_entry

// ---------------------------------------------------------------- MSM
// sum scalars[i] * points[i] over points and scalars on the device (scalars
// in Montgomery form), with sppark's kernels under our orchestration
// (msm_engine.cuh). An msm_context holds, per slot, one Pippenger engine
// sized for up to n_max points of one group, its own stream and a pinned
// buffer for its window sums: all of it is allocated when the context is
// built and reused, so an MSM allocates nothing. Its bucket and window sums
// are finished on the device; the window sums (at most 33 points) come back
// and read() combines them on the host. Slots run concurrently on
// their streams. Scalars 0 and 1 are split off on the device: the 1s are
// summed by a batch addition, only the rest (gathered) goes through
// Pippenger; when more than 3/4 of the scalars (or more than 2^23) are
// neither, Pippenger runs over all points. A job whose bases come with a
// table of multiples (msm_build_table) and whose scalars are not mostly 0
// and 1 runs over the table instead: all windows in one bucket set, fewer
// and wider windows. Errors throw cuda_error (sppark's exception type).

enum class msm_group : int { g1, g2 };

struct msm_slot_spec {
    msm_group group;
    size_t n_max;        // most points one MSM of this slot takes
    bool table = false;  // room for runs over a table of multiples of n_max bases
    // Most scalars one Pippenger batch takes (0: msm_layout.cuh's
    // MAX_BATCH, 2^22). Larger batches run at wider windows (2^25: 19
    // bits, 14 windows instead of 16) and cost 72 bytes a scalar of the
    // batch for the digits (one row per window) and their sort.
    size_t batch_max = 0;
    // Room and a second stream for sorting one Pippenger batch while the
    // one before it accumulates (msm_engine_pippenger.cuh): a second set
    // of a batch's digits, temps (where the accumulation's carries live)
    // and histogram: 3,178 MiB more at batches of 2^25. Only runs of
    // several batches use it.
    bool overlap_sort = false;
};

// A table of multiples of n bases: rows w < msm_table_windows(wbits), row w
// holding 2^(w wbits) times every base (row 0: the bases themselves), each
// row n affine points (blst layout), one after the other.
// msm_table_window_bits: the width a table of n bases is built with.
uint32_t msm_table_window_bits(size_t n);
uint32_t msm_table_windows(uint32_t wbits);
// Fills rows 1.. of a table whose row 0 holds the n bases, on `stream`
// (asynchronous), on the device the stream belongs to.
void msm_build_table(cudaStream_t stream, msm_group group, void *d_table, size_t n,
                     uint32_t wbits);

// Exactly the device memory an msm_context with these slots allocates (one
// block): per slot the buckets and histogram of the widest window
// (~n_max/12 buckets at 2^20), the digits of one Pippenger batch (26 x 4
// bytes per scalar of a batch of at most 2^22), the 0/1 bitmap and room for
// min(3/4 n_max, 2^23) gathered scalars and points (the split's rest). For
// 2^20 points that is about 250 MiB in G1, 350 MiB in G2; a slot with room
// for table runs also holds their bucket set (2^19 buckets at 2^20) and
// sort buffers (12 x 13 bytes per base at 2^20), about 150 MiB more.
size_t msm_context_bytes(const std::vector<msm_slot_spec> &slots, int sm_count);

// Where one MSM's time goes, for measurements only (msm_context::profile):
// host wall time per phase, each phase synchronized on its stream, so a
// profiled MSM is slower than a plain one and never overlaps another.
enum msm_phase : int {
    msm_phase_classify,    // the 0/1 split and the gather of the rest
    msm_phase_ones,        // batch addition of the points whose scalar is 1
    msm_phase_breakdown,   // scalars into signed window digits
    msm_phase_sort,        // digits sorted by bucket, per window
    msm_phase_batch_add,   // points whose digit is 1
    msm_phase_accumulate,  // bucket sums
    msm_phase_integrate,   // bucket sums into window sums (per batch)
    msm_phase_finish,      // window sums finished
    msm_phase_combine,     // windows combined into one point (on the host, in read)
    msm_phase_count
};
const char *msm_phase_name(int phase);

struct msm_profile {
    double ms[msm_phase_count] = {};
    uint32_t wbits = 0, windows = 0, batches = 0;
    size_t pippenger_points = 0;  // scalars that went through Pippenger
};

// Variants of a run, for measurements and tests only (msm_context::tune);
// 0 or -1 keeps the default (msm_engine_launch.cuh: table_chunk,
// window_chunk; msm_engine.cuh: weigh_sbits).
struct msm_tuning {
    uint32_t table_chunk = 0;  // target digits per lane in a chunk of the accumulation
    int fit_waves = -1;        // 0: chunks of the target length, not fitted to whole waves
    int weigh = -1;            // 0: sppark's integrate and our finish, not msm_weigh.cuh
    uint32_t weigh_sbits = 0;  // log2 of the weighted sum's first segments (2..6)
    uint32_t window_chunk = 0; // target digits per lane in a chunk of Pippenger's windows
    uint32_t acc_block = 0;    // threads per block of the accumulation (64, 128, 256; 0: 384)
    // An accumulation that fills less than one wave of blocks: bit 0, in
    // blocks of 128 threads; bit 1, in shorter chunks (msm_engine_launch.cuh);
    // -1: the default (neither; msm_engine_launch.cuh says why).
    int small_runs = -1;
    // The accumulation's addition: 0, sppark's xyzz_t::add; 1, madd_dot
    // (msm_madd.cuh: one reduction less per addition); -1, the default
    // (madd_dot in G1, sppark's in G2: msm_engine.cuh says why).
    int dot_add = -1;
    // The weighted sum's levels after the first: 0, in levels of 2
    // (msm_weigh_level); -1, the default, by the bits of the weights
    // (msm_weigh_bits).
    int weigh_tail = -1;
    // A table run's accumulation: 1, in affine rounds of pairs (one
    // inversion per thread and round: msm_affine.cuh); 0, in chunks of
    // mixed xyzz additions (msm_accumulate.cuh); -2, affine in G2 only;
    // -1, the default (affine in G2, and in G1 beside two more table runs:
    // msm_engine_table.cuh says why).
    int affine = -1;
    uint32_t affine_pairs = 0;      // most pairs per thread in an affine round (0: the default)
    uint32_t affine_pairs_min = 0;  // least pairs per thread in an affine round (0: the default)
    // A Pippenger run of several batches: 0, each batch integrates its own
    // buckets (as before msm_engine's carried buckets); -1, the default
    // (the batches add into one carried bucket set per window, integrated
    // once).
    int carry_buckets = -1;
    // Most scalars per Pippenger batch (0: msm_engine's MAX_BATCH), so
    // that tests cut small runs into several batches.
    uint32_t batch_cap = 0;
};

struct msm_job {
    size_t slot;
    const void *d_points;   // n affine points (blst layout)
    const void *d_scalars;  // n scalars
    size_t n;               // <= the slot's n_max
    // Nonzero: d_points is a table of multiples built with this width
    // (msm_build_table), for a slot with room for table runs.
    uint32_t table_wbits = 0;
    // Not null: a table run's batch addition and accumulation wait for this
    // event (the Groth16 pass gives A and B the end of H's NTTs: dense table
    // runs would otherwise hold every SM and starve the NTTs, leaving H + L
    // to run alone at the end). Its breakdown and sort do not wait.
    cudaEvent_t gate = nullptr;
    // Leading scalars known to be dense (H's in H + L). Without a table,
    // when there are more of them than the 0/1 split can gather, only the
    // scalars past them are split into 0s, 1s and the rest, and Pippenger
    // runs over these in place (msm_engine::run_split_after); otherwise it
    // changes nothing.
    size_t dense = 0;
};

class msm_context {
public:
    // Allocates everything on gpu's device (the caller's current device).
    msm_context(const gpu_t &gpu, const std::vector<msm_slot_spec> &slots);
    ~msm_context();
    msm_context(const msm_context &) = delete;
    msm_context &operator=(const msm_context &) = delete;

    size_t bytes() const;  // msm_context_bytes of its slots
    size_t slot_count() const;
    // Whether these slots fit this context (same groups, no larger n_max).
    bool fits(const std::vector<msm_slot_spec> &slots) const;

    // Runs the jobs (distinct slots) at the same time, each on its slot's
    // stream after `ready` (an event of the producer's stream, or null), and
    // waits for them; gpu_ns[i] (if not null): job i's time on its stream.
    // Results: read(job.slot, ...).
    void run(const msm_job *jobs, size_t njobs, cudaEvent_t ready, uint64_t *gpu_ns);
    // run in two halves, so that more work can be queued while the MSMs
    // run: start returns once the jobs are launched (it waits for their
    // classifications, so for `ready`); finish waits for them. A job over
    // a table with the same scalars (pointer), count and width as an
    // earlier job's table run (B in G1 and in G2) takes that job's sorted
    // digits instead of sorting its own; that slot's next MSM waits for it.
    void start(const msm_job *jobs, size_t njobs, cudaEvent_t ready);
    void finish(const msm_job *jobs, size_t njobs, uint64_t *gpu_ns);
    // Waits for whatever the slots' streams hold, errors ignored (for
    // failure paths: the buffers an MSM reads must outlive it).
    void drain() noexcept;

    // The asynchronous steps of run, on any stream s the caller owns (one
    // MSM per slot in flight): classify enqueues the 0/1 split and the copy
    // of its counts; after s has reached that point (synchronize s),
    // launch enqueues the MSM (split01: use those counts, else Pippenger
    // over all points) and the copy of its result; after s has finished,
    // read converts the result (blst's Jacobian layout). table_wbits:
    // d_points is a table of multiples (msm_job::table_wbits).
    void classify(size_t slot, cudaStream_t s, const void *d_points, const void *d_scalars,
                  size_t n);
    void launch(size_t slot, cudaStream_t s, const void *d_points, const void *d_scalars,
                size_t n, bool split01, uint32_t table_wbits = 0);
    // Whether the slot's last MSM had scalars that pay for a table run
    // (mostly long ones), table or not: a key's tables are built for these.
    bool wants_table(size_t slot) const;
    void read(size_t slot, g1_proj_raw &out) const;
    void read(size_t slot, g2_proj_raw &out) const;
    cudaStream_t stream(size_t slot) const;  // the slot's own stream

    // Measurements only. profile: the slot's next MSMs add their phase
    // times to *p (null stops). window_bits: Pippenger's window width for
    // the slot's next MSMs, clamped to what its buffers hold (0: the
    // automatic choice for n points). tune: the variants of the slot's
    // next runs (a table-run variant that does not fit its buffers makes
    // the run take the split path instead).
    void profile(size_t slot, msm_profile *p);
    void window_bits(size_t slot, uint32_t wbits);
    void tune(size_t slot, const msm_tuning &t);

private:
    struct impl;
    std::unique_ptr<impl> p_;
};

// One MSM through a context built for it (allocates; for tests and one-off
// use): in G1 and in G2. Synchronous.
void msm_g1_device(const gpu_t &gpu, g1_proj_raw &out, const void *d_points,
                   const void *d_scalars, size_t n);
void msm_g2_device(const gpu_t &gpu, g2_proj_raw &out, const void *d_points,
                   const void *d_scalars, size_t n);

// d_a, d_b, d_c: evaluations over the domain of size 2^lg (device). On return
// d_a holds the coefficients of H = (a*b - c)/Z on the coset g*<omega>, g = 7,
// brought back to the standard basis; d_b and d_c are clobbered.
// Asynchronous on the gpu's default stream (a, b and c transformed on its
// three other streams in between); call gpu_sync_default after.
void compute_h_async(const gpu_t &gpu, void *d_a, void *d_b, void *d_c, uint32_t lg,
                     const fr_raw &z_inv);
void gpu_sync_default(const gpu_t &gpu);

// Makes sppark's NTT twiddle tables (made once per process, on every GPU
// at once, from each device's default pool) and waits for them.
void ntt_tables_ready();

// d_out[i] = sum of coeff * w[col] over row i of a CSR matrix, for rows
// [0, rows), where w is d_inputs (columns < num_inputs) followed by d_aux;
// entry coeff 0 is +1, 1 is -1, k >= 2 is d_coeffs[k - 2]. Row i's entries
// are d_entries[d_row_ptr[i] - first_entry, d_row_ptr[i + 1] - first_entry)
// (first_entry: the offset of a slice of rows). Asynchronous on the gpu's
// default stream.
void eval_rows_async(const gpu_t &gpu, fr_raw *d_out, const uint64_t *d_row_ptr,
                     const shape_entry_raw *d_entries, const fr_raw *d_coeffs,
                     const fr_raw *d_inputs, uint32_t num_inputs, const fr_raw *d_aux,
                     size_t rows, uint64_t first_entry = 0);

// *d_bad = the first row i < rows with a[i] * b[i] != c[i], or UINT64_MAX.
// Asynchronous on the gpu's default stream.
void check_rows_async(const gpu_t &gpu, const fr_raw *d_a, const fr_raw *d_b, const fr_raw *d_c,
                      size_t rows, uint64_t *d_bad);

}  // namespace cp_cuda
