// Owns: keys made in memory from their scalars (cp_key_builder): the
// verifying key given, every other point the generator of its group times
// a scalar, computed on a device of a context (the CUDA kernels of
// cuda/point_batch.cu, or the host backend's threads), and the key written
// in bellperson's params format with its verified record.
//
// A built key's section points are multiples of the generators, so they lie
// in the prime-order subgroups by construction; the verifying key's points
// and ic (a few points) are checked like a loaded key's. That is why the
// file written here may carry a `.verified` record (digest.hpp): it is
// true of every point.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "core.hpp"
#include "digest.hpp"
#include "dispatch.hpp"
#include "parallel.hpp"
#include "params_layout.hpp"
#include "points.hpp"
#include "status.hpp"

struct cp_key_builder {
    std::unique_ptr<cp_key> key;
    uint64_t filled[5] = {};  // points filled so far, by cp_key_section
};

namespace cp {
namespace {

constexpr size_t MAX_SECTION = 0xffffffffull;
// Points encoded per step of the writer.
constexpr size_t WRITE_STEP = size_t(1) << 20;

const char *section_label(int s) {
    static const char *names[5] = {"h", "l", "a", "b_g1", "b_g2"};
    return s >= 0 && s < 5 ? names[s] : "?";
}

uint64_t section_len(const proving_key &k, int s) {
    switch (s) {
        case CP_SECTION_H: return k.h.size();
        case CP_SECTION_L: return k.l.size();
        case CP_SECTION_A: return k.a.size();
        case CP_SECTION_B_G1: return k.b_g1.size();
        default: return k.b_g2.size();
    }
}

void *section_data(proving_key &k, int s) {
    switch (s) {
        case CP_SECTION_H: return k.h.data();
        case CP_SECTION_L: return k.l.data();
        case CP_SECTION_A: return k.a.data();
        case CP_SECTION_B_G1: return k.b_g1.data();
        default: return k.b_g2.data();
    }
}

// A file written whole or not at all: `<path>.partial`, fsync, rename.
class atomic_file {
public:
    explicit atomic_file(const std::string &path) : path_(path), tmp_(path + ".partial") {
        fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd_ < 0) io_fail("cannot create");
    }
    ~atomic_file() {
        if (fd_ >= 0) {
            ::close(fd_);
            ::unlink(tmp_.c_str());
        }
    }
    void put(const uint8_t *p, size_t n) {
        while (n > 0) {
            const ssize_t w = ::write(fd_, p, n);
            if (w < 0 && errno == EINTR) continue;
            if (w <= 0) io_fail("cannot write");
            p += w;
            n -= static_cast<size_t>(w);
        }
    }
    void commit() {
        if (::fsync(fd_) != 0) io_fail("cannot sync");
        if (::close(fd_) != 0) {
            fd_ = -1;
            io_fail("cannot close");
        }
        fd_ = -1;
        if (::rename(tmp_.c_str(), path_.c_str()) != 0) {
            const std::string why = std::strerror(errno);
            ::unlink(tmp_.c_str());
            fail(CP_ERR_PARAMS_IO, "cannot rename '" + tmp_ + "' to '" + path_ + "': " + why);
        }
    }

private:
    [[noreturn]] void io_fail(const char *what) {
        fail(CP_ERR_PARAMS_IO, std::string(what) + " '" + tmp_ + "': " + std::strerror(errno));
    }
    std::string path_, tmp_;
    int fd_ = -1;
};

void put_be32(std::vector<uint8_t> &b, uint32_t v) {
    const uint8_t c[4] = {uint8_t(v >> 24), uint8_t(v >> 16), uint8_t(v >> 8), uint8_t(v)};
    b.insert(b.end(), c, c + 4);
}

// Writes one section (length field, then its points, uncompressed) and
// hashes its leaves as the parser reads them.
template <class Affine>
void write_section(atomic_file &f, const point_vector<Affine> &pts,
                   std::vector<leaf_hash> &leaves, std::vector<uint8_t> &buf) {
    constexpr bool g2 = sizeof(Affine) == sizeof(blst_p2_affine);
    constexpr size_t elem = g2 ? G2_BYTES : G1_BYTES;
    buf.clear();
    put_be32(buf, static_cast<uint32_t>(pts.size()));
    leaves.push_back(hash_leaf(buf.data(), 4));
    f.put(buf.data(), 4);
    buf.resize(std::min(pts.size(), WRITE_STEP) * elem);
    for (size_t done = 0; done < pts.size(); done += WRITE_STEP) {
        const size_t n = std::min(WRITE_STEP, pts.size() - done);
        const size_t nleaves = (n + LEAF_POINTS - 1) / LEAF_POINTS;
        const size_t first_leaf = leaves.size();
        leaves.resize(first_leaf + nleaves);
        parallel_for(nleaves, hardware_threads(), 1, [&](size_t lb, size_t le, size_t) {
            for (size_t l = lb; l < le; l++) {
                const size_t b = l * LEAF_POINTS, e = std::min(n, b + LEAF_POINTS);
                for (size_t i = b; i < e; i++) {
                    if constexpr (g2)
                        blst_p2_affine_serialize(buf.data() + i * elem, &pts[done + i]);
                    else
                        blst_p1_affine_serialize(buf.data() + i * elem, &pts[done + i]);
                }
                leaves[first_leaf + l] = hash_leaf(buf.data() + b * elem, (e - b) * elem);
            }
        });
        f.put(buf.data(), n * elem);
    }
}

// Writes `k` to `path` and its verified record; returns the record's note
// ("" when written).
std::string write_key(const proving_key &k, const std::string &path) {
    std::vector<leaf_hash> leaves;
    std::vector<uint8_t> buf(VK_BYTES);
    uint8_t *o = buf.data();
    blst_p1_affine_serialize(o, &k.alpha_g1);
    blst_p1_affine_serialize(o + 96, &k.beta_g1);
    blst_p2_affine_serialize(o + 192, &k.beta_g2);
    blst_p2_affine_serialize(o + 384, &k.gamma_g2);
    blst_p1_affine_serialize(o + 576, &k.delta_g1);
    blst_p2_affine_serialize(o + 672, &k.delta_g2);
    leaves.push_back(hash_leaf(buf.data(), VK_BYTES));
    atomic_file f(path);
    f.put(buf.data(), VK_BYTES);
    uint64_t size = VK_BYTES;
    for (const auto *v : {&k.ic, &k.h, &k.l, &k.a, &k.b_g1}) {
        write_section(f, *v, leaves, buf);
        size += 4 + v->size() * G1_BYTES;
    }
    write_section(f, k.b_g2, leaves, buf);
    size += 4 + k.b_g2.size() * G2_BYTES;
    f.commit();
    return write_verified_record(AT_FDCWD, verified_record_path(path.c_str()), size,
                                 file_digest_hex(size, leaves));
}

}  // namespace
}  // namespace cp

using namespace cp;

extern "C" {

cp_status cp_key_builder_new(const cp_key_parts *vk, cp_key_builder **out) {
    return guard("cp_key_builder_new", [&] {
        if (!vk || !out) fail(CP_ERR_INVALID_ARGUMENT, "cp_key_builder_new: NULL argument");
        *out = nullptr;
        const uint64_t lens[6] = {vk->ic_len, vk->h_len, vk->l_len,
                                  vk->a_len, vk->b_g1_len, vk->b_g2_len};
        for (int i = 0; i < 6; i++)
            if (lens[i] > MAX_SECTION)
                fail(CP_ERR_INVALID_ARGUMENT,
                     "cp_key_builder_new: a section of " + std::to_string(lens[i]) +
                         " points (the params format holds at most 2^32 - 1)");
        if (((vk->h_len + 1) & vk->h_len) != 0)
            fail(CP_ERR_INVALID_ARGUMENT, "cp_key_builder_new: h_len " +
                                              std::to_string(vk->h_len) +
                                              " is not 2^k - 1 (a domain's size less one)");
        if (vk->b_g1_len != vk->b_g2_len)
            fail(CP_ERR_INVALID_ARGUMENT, "cp_key_builder_new: b_g1_len " +
                                              std::to_string(vk->b_g1_len) + " and b_g2_len " +
                                              std::to_string(vk->b_g2_len) + " differ");
        if (vk->ic_len && !vk->ic)
            fail(CP_ERR_INVALID_ARGUMENT, "cp_key_builder_new: ic is NULL with length " +
                                              std::to_string(vk->ic_len));
        std::unique_ptr<cp_key_builder> b(new cp_key_builder);
        b->key.reset(new cp_key);
        proving_key &k = b->key->key;
        k.set_vk_points(*vk);
        k.ic.resize(vk->ic_len);
        if (vk->ic_len) std::memcpy(k.ic.data(), vk->ic, vk->ic_len * sizeof(blst_p1_affine));
        // The verifying key's points and ic are the caller's: checked as a
        // loaded key's are. The sections are empty yet.
        std::vector<point_span> spans = key_spans(k, nullptr);
        check_points(spans, point_check::encoding, hardware_threads());
        check_points(spans, point_check::subgroup, hardware_threads());
        try {
            k.h.resize(vk->h_len);
            k.l.resize(vk->l_len);
            k.a.resize(vk->a_len);
            k.b_g1.resize(vk->b_g1_len);
            k.b_g2.resize(vk->b_g2_len);
        } catch (const std::bad_alloc &) {
            fail(CP_ERR_OUT_OF_MEMORY, "cp_key_builder_new: no host memory for a key of " +
                                           std::to_string(vk->h_len + vk->l_len + vk->a_len +
                                                          vk->b_g1_len + vk->b_g2_len) +
                                           " points");
        }
        *out = b.release();
    });
}

cp_status cp_key_builder_fill(cp_context *ctx, int32_t ordinal, cp_key_builder *b,
                              int32_t section, uint64_t start, const cp_fr *scalars, size_t n) {
    return guard("cp_key_builder_fill", [&] {
        if (!ctx || !b) fail(CP_ERR_INVALID_ARGUMENT, "cp_key_builder_fill: NULL argument");
        if (!b->key) fail(CP_ERR_INVALID_ARGUMENT, "cp_key_builder_fill: the builder is finished");
        if (section < CP_SECTION_H || section > CP_SECTION_B_G2)
            fail(CP_ERR_INVALID_ARGUMENT,
                 "cp_key_builder_fill: unknown section " + std::to_string(section));
        if (n && !scalars) fail(CP_ERR_INVALID_ARGUMENT, "cp_key_builder_fill: scalars is NULL");
        check_ordinal(ctx, ordinal, "cp_key_builder_fill");
        proving_key &k = b->key->key;
        const uint64_t len = section_len(k, section);
        if (start != b->filled[section])
            fail(CP_ERR_INVALID_ARGUMENT,
                 std::string("cp_key_builder_fill: section ") + section_label(section) +
                     " is filled in order: the next point is " +
                     std::to_string(b->filled[section]) + ", not " + std::to_string(start));
        if (n > len - start)
            fail(CP_ERR_INVALID_ARGUMENT,
                 std::string("cp_key_builder_fill: section ") + section_label(section) +
                     " holds " + std::to_string(len) + " points; " + std::to_string(start) +
                     " + " + std::to_string(n) + " is past its end");
        if (n == 0) return;
        // A zero scalar would make the point at infinity, which no key
        // holds (a key file cannot encode it).
        for (size_t i = 0; i < n; i++) {
            const uint64_t *l = scalars[i].l;
            if ((l[0] | l[1] | l[2] | l[3]) == 0)
                fail(CP_ERR_INVALID_ARGUMENT,
                     std::string("cp_key_builder_fill: the scalar of section ") +
                         section_label(section) + " point " + std::to_string(start + i) +
                         " is zero (a key's points are never the point at infinity)");
        }
        const bool g2 = section == CP_SECTION_B_G2;
        uint8_t *dst = static_cast<uint8_t *>(section_data(k, section)) +
                       start * (g2 ? sizeof(blst_p2_affine) : sizeof(blst_p1_affine));
        device_slot &slot = ctx->slot(ordinal);
        {
            std::lock_guard<std::mutex> lk(slot.own);
            bind_scope scope(*ctx, ordinal);
            slot.dev->groth16().generator_multiples(g2, reinterpret_cast<const blst_fr *>(scalars), n, dst);
        }
        b->filled[section] += n;
    });
}

cp_status cp_key_builder_finish(cp_key_builder *b, const char *path, cp_key **out) {
    std::string note;
    cp_status st = guard("cp_key_builder_finish", [&] {
        if (!b || !out) fail(CP_ERR_INVALID_ARGUMENT, "cp_key_builder_finish: NULL argument");
        *out = nullptr;
        if (!b->key) fail(CP_ERR_INVALID_ARGUMENT, "cp_key_builder_finish: already finished");
        const proving_key &k = b->key->key;
        for (int s = CP_SECTION_H; s <= CP_SECTION_B_G2; s++)
            if (b->filled[s] != section_len(k, s))
                fail(CP_ERR_INVALID_ARGUMENT,
                     std::string("cp_key_builder_finish: section ") + section_label(s) +
                         " has " + std::to_string(b->filled[s]) + " of its " +
                         std::to_string(section_len(k, s)) + " points");
        if (path) note = write_key(k, path);
        *out = b->key.release();
    });
    if (st.code == CP_OK && !note.empty()) return make_status(CP_OK, note.c_str());
    return st;
}

void cp_key_builder_free(cp_key_builder *b) {
    guard_void([&] { delete b; });
}

}  // extern "C"
