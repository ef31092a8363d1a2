// Owns: parsing a params file or buffer into a key on every core (see
// params_read.hpp).
#include "params_read.hpp"

#include <algorithm>
#include <atomic>
#include <exception>
#include <limits>
#include <mutex>
#include <new>
#include <string>

#include "parallel.hpp"
#include "params_file.hpp"
#include "points.hpp"

namespace cp {
namespace {

// Leaves per unit of work: 32768 points, 3 MiB of G1 or 6 MiB of G2 bytes
// in each thread's buffer.
constexpr uint64_t RUN_LEAVES = 8;
constexpr uint64_t RUN_POINTS = RUN_LEAVES * LEAF_POINTS;

// The n bytes at `offset`: in the buffer, or read into `scratch`.
const uint8_t *bytes_at(const params_source &src, uint64_t offset, size_t n,
                        std::vector<uint8_t> &scratch) {
    if (src.buffer) return src.buffer + offset;
    if (scratch.size() < n) scratch.resize(n);
    src.file->read_at(offset, scratch.data(), n);
    return scratch.data();
}

// How many of a section's first `count` points lie before the file's next
// hole at or after point `first` (all of them for a buffer).
uint64_t points_before_hole(const params_source &src, uint64_t data_offset, size_t elem,
                            uint64_t first, uint64_t count) {
    if (!src.file) return count;
    const uint64_t from = data_offset + first * elem;
    const uint64_t hole = src.file->next_hole(from);
    if (hole <= from) return first;
    return std::min<uint64_t>(count, first + (hole - from) / elem);
}

// The first failure in file order among those the threads met: a point
// that does not decode, or a read that failed (its run's first point).
class first_failure {
public:
    uint64_t at() const { return at_.load(std::memory_order_relaxed); }
    void point(uint64_t i, const char *why) {
        std::lock_guard<std::mutex> lk(mu_);
        if (i < at_.load()) at_.store(i), why_ = why, error_ = nullptr;
    }
    void read(uint64_t i, std::exception_ptr e) {
        std::lock_guard<std::mutex> lk(mu_);
        if (i < at_.load()) at_.store(i), why_ = nullptr, error_ = e;
    }
    // Rethrows the read error, if one came first.
    void raise_read_error() const {
        if (error_) std::rethrow_exception(error_);
    }
    // Fails naming the point, if one failed.
    void raise(const char *section, uint64_t data_offset, size_t elem) const {
        raise_read_error();
        if (!why_) return;
        const uint64_t i = at_.load();
        fail(CP_ERR_PARAMS_FORMAT, "params: section " + std::string(section) + " point " +
                                       std::to_string(i) + " (offset " +
                                       std::to_string(data_offset + i * elem) + "): " + why_);
    }

private:
    std::mutex mu_;
    std::atomic<uint64_t> at_{std::numeric_limits<uint64_t>::max()};
    const char *why_ = nullptr;
    std::exception_ptr error_;
};

template <class Affine>
const char *decode(Affine *out, const uint8_t *in, bool defer_curve) {
    if constexpr (sizeof(Affine) == sizeof(blst_p1_affine))
        return defer_curve ? decode_g1_deferred(reinterpret_cast<blst_p1_affine *>(out), in)
                           : decode_g1(reinterpret_cast<blst_p1_affine *>(out), in);
    else
        return defer_curve ? decode_g2_deferred(reinterpret_cast<blst_p2_affine *>(out), in)
                           : decode_g2(reinterpret_cast<blst_p2_affine *>(out), in);
}

// Decodes points [first, end) of a section (first a multiple of
// LEAF_POINTS) into `out`, hashing their leaves into `leaves` (indexed by
// the section's leaf number) when it is not null.
template <class Affine>
void decode_points(const params_source &src, uint64_t data_offset, uint64_t first, uint64_t end,
                   Affine *out, leaf_hash *leaves, bool defer_curve, first_failure &failure,
                   int threads) {
    constexpr size_t elem = sizeof(Affine) == sizeof(blst_p1_affine) ? G1_BYTES : G2_BYTES;
    const uint64_t runs = (end - first + RUN_POINTS - 1) / RUN_POINTS;
    std::atomic<uint64_t> next{0};
    const int workers = static_cast<int>(std::min<uint64_t>(runs, std::max(threads, 1)));
    parallel_for(static_cast<size_t>(workers), workers, 1, [&](size_t, size_t, size_t) {
        std::vector<uint8_t> scratch;
        for (;;) {
            const uint64_t r = next.fetch_add(1);
            if (r >= runs) return;
            const uint64_t b = first + r * RUN_POINTS, e = std::min(end, b + RUN_POINTS);
            // Runs are taken in order: once a failure before this run is
            // known, no later run can come first.
            if (b > failure.at()) return;
            const uint8_t *bytes;
            try {
                bytes = bytes_at(src, data_offset + b * elem, (e - b) * elem, scratch);
            } catch (...) {
                failure.read(b, std::current_exception());
                return;
            }
            if (leaves)
                for (uint64_t lb = b; lb < e; lb += LEAF_POINTS)
                    leaves[lb / LEAF_POINTS] =
                        hash_leaf(bytes + (lb - b) * elem, (std::min(e, lb + LEAF_POINTS) - lb) * elem);
            for (uint64_t i = b; i < e; i++) {
                if (const char *why = decode(out + i, bytes + (i - b) * elem, defer_curve)) {
                    failure.point(i, why);
                    break;
                }
            }
        }
    });
}

// Reads section s into `out`; false when a point failed (`failure` says
// which; a read error is thrown).
template <class Affine>
bool read_section(const params_source &src, const params_layout &L, int s,
                  point_vector<Affine> &out, leaf_hash *leaves, bool defer_curve,
                  first_failure &failure, int threads) {
    constexpr size_t elem = sizeof(Affine) == sizeof(blst_p1_affine) ? G1_BYTES : G2_BYTES;
    const uint64_t count = L.count[s], base = L.data_offset(s);
    out.clear();
    for (uint64_t done = 0; done < count;) {
        // Up to the next hole (whole leaves), and one run past it: the
        // run that reads the hole's zeros fails there.
        const uint64_t before = points_before_hole(src, base, elem, done, count);
        const uint64_t upto =
            std::min(count, std::max(done, before / LEAF_POINTS * LEAF_POINTS) + RUN_POINTS);
        try {
            out.resize(upto);
        } catch (const std::bad_alloc &) {
            fail(CP_ERR_OUT_OF_MEMORY, "params: no host memory for section " +
                                           std::string(section_name(s)) + " (" +
                                           std::to_string(upto) + " of its " +
                                           std::to_string(count) + " points)");
        }
        decode_points(src, base, done, upto, out.data(), leaves, defer_curve, failure, threads);
        failure.raise_read_error();
        if (failure.at() != std::numeric_limits<uint64_t>::max()) return false;
        done = upto;
    }
    return true;
}

}  // namespace

parse_result parse_params(const params_source &src, const params_layout &L, proving_key &key,
                          bool hash, bool defer_curve, int threads) {
    parse_result r;
    // The leaves in file order: the verifying key, then each section's
    // length field and its runs of LEAF_POINTS points.
    size_t first_leaf[NUM_SECTIONS];
    size_t nleaves = 1;
    for (int s = 0; s < NUM_SECTIONS; s++) {
        first_leaf[s] = nleaves + 1;
        nleaves += 1 + (L.count[s] + LEAF_POINTS - 1) / LEAF_POINTS;
    }
    if (hash) r.leaves.resize(nleaves);
    std::vector<uint8_t> scratch;
    const uint8_t *vk = bytes_at(src, 0, VK_BYTES, scratch);
    if (hash) r.leaves[0] = hash_leaf(vk, VK_BYTES);
    struct vk_point {
        const char *name;
        bool g2;
        void *out;
    } vks[6] = {{"alpha_g1", false, &key.alpha_g1}, {"beta_g1", false, &key.beta_g1},
                {"beta_g2", true, &key.beta_g2},    {"gamma_g2", true, &key.gamma_g2},
                {"delta_g1", false, &key.delta_g1}, {"delta_g2", true, &key.delta_g2}};
    size_t o = 0;
    for (int i = 0; i < 6; i++) {
        r.offsets[i] = static_cast<int64_t>(o);
        const char *why = vks[i].g2 ? decode_g2(static_cast<blst_p2_affine *>(vks[i].out), vk + o)
                                    : decode_g1(static_cast<blst_p1_affine *>(vks[i].out), vk + o);
        if (why)
            fail(CP_ERR_PARAMS_FORMAT, "params: vk point " + std::string(vks[i].name) +
                                           " (offset " + std::to_string(o) + "): " + why);
        o += vks[i].g2 ? G2_BYTES : G1_BYTES;
    }
    point_vector<blst_p1_affine> *g1[] = {&key.ic, &key.h, &key.l, &key.a, &key.b_g1};
    for (int s = 0; s < NUM_SECTIONS; s++) {
        r.offsets[6 + s] = static_cast<int64_t>(L.data_offset(s));
        const uint8_t *c = bytes_at(src, L.count_offset[s], 4, scratch);
        if (hash) r.leaves[first_leaf[s] - 1] = hash_leaf(c, 4);
        if (be32(c) != L.count[s])
            fail(CP_ERR_PARAMS_IO, "params: the length field of section " +
                                       std::string(section_name(s)) +
                                       " changed while the file was loading");
        leaf_hash *leaves = hash ? r.leaves.data() + first_leaf[s] : nullptr;
        first_failure failure;
        const bool read = s == SEC_B_G2
                              ? read_section(src, L, s, key.b_g2, leaves, defer_curve, failure, threads)
                              : read_section(src, L, s, *g1[s], leaves, defer_curve, failure, threads);
        if (read) continue;
        if (defer_curve) {
            // A point before this one that is off its curve comes first,
            // as a decoding with the curve check would have found it.
            std::vector<point_span> before = key_spans(key, r.offsets);
            before[6 + s].count = static_cast<size_t>(failure.at());
            for (int later = s + 1; later < NUM_SECTIONS; later++) before[6 + later].count = 0;
            check_points(before, point_check::on_curve, threads);
        }
        failure.raise(section_name(s), L.data_offset(s), section_elem_bytes(s));
    }
    return r;
}

}  // namespace cp
