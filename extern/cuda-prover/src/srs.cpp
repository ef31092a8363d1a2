// Owns: proving keys (cp_srs): construction from in-memory parts, parsing
// bellperson 0.27's Parameters::write format from a file or a buffer
// (parallel point decoding with on-curve and not-infinity checks), and the
// shape / verifying-key / memory-estimate queries.
//
// Note: points are checked to be on the curve, canonically encoded,
// uncompressed and not the point at infinity; the (expensive) prime-order
// subgroup check is not done.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <limits>
#include <mutex>

#include "core.hpp"
#include "host/host_device.hpp"
#include "parallel.hpp"
#include "status.hpp"

namespace cp {
namespace {

const char *blst_error_text(BLST_ERROR e) {
    switch (e) {
        case BLST_SUCCESS: return "success";
        case BLST_BAD_ENCODING: return "bad encoding";
        case BLST_POINT_NOT_ON_CURVE: return "point not on curve";
        case BLST_POINT_NOT_IN_GROUP: return "point not in group";
        default: return "invalid point";
    }
}

// Decodes one uncompressed point; returns an empty string or the reason.
template <class Affine>
const char *decode_point(Affine *out, const uint8_t *in);

template <>
const char *decode_point<blst_p1_affine>(blst_p1_affine *out, const uint8_t *in) {
    if (in[0] & 0x80) return "compressed encoding where an uncompressed point is expected";
    if (in[0] & 0x40) return "point at infinity";
    BLST_ERROR e = blst_p1_deserialize(out, in);
    if (e != BLST_SUCCESS) return blst_error_text(e);
    if (blst_p1_affine_is_inf(out)) return "point at infinity";
    return nullptr;
}

template <>
const char *decode_point<blst_p2_affine>(blst_p2_affine *out, const uint8_t *in) {
    if (in[0] & 0x80) return "compressed encoding where an uncompressed point is expected";
    if (in[0] & 0x40) return "point at infinity";
    BLST_ERROR e = blst_p2_deserialize(out, in);
    if (e != BLST_SUCCESS) return blst_error_text(e);
    if (blst_p2_affine_is_inf(out)) return "point at infinity";
    return nullptr;
}

constexpr size_t G1_BYTES = 96;
constexpr size_t G2_BYTES = 192;

struct cursor {
    const uint8_t *data;
    size_t len;
    size_t off = 0;

    void need(const char *section, uint64_t n) const {
        if (n > len - off)
            fail(CP_ERR_PARAMS_FORMAT, "params: truncated: section " + std::string(section) +
                                           " needs " + std::to_string(n) + " bytes at offset " +
                                           std::to_string(off) + ", file has " +
                                           std::to_string(len));
    }
    uint32_t u32(const char *section) {
        need(section, 4);
        const uint8_t *p = data + off;
        off += 4;
        return (uint32_t(p[0]) << 24) | (uint32_t(p[1]) << 16) | (uint32_t(p[2]) << 8) | p[3];
    }
};

// A section of points located in the buffer, decoded later.
struct section_ref {
    const char *name;
    size_t offset;
    size_t count;
};

template <class Affine>
section_ref locate(cursor &cur, const char *name, size_t elem) {
    uint32_t n = cur.u32(name);
    cur.need(name, uint64_t(n) * elem);  // fits in 64 bits: n < 2^32, elem <= 192
    section_ref s{name, cur.off, n};
    cur.off += size_t(n) * elem;
    return s;
}

template <class Affine>
void decode_section(const uint8_t *data, const section_ref &s, std::vector<Affine> &out, int threads) {
    const size_t elem = sizeof(Affine) == sizeof(blst_p1_affine) ? G1_BYTES : G2_BYTES;
    out.resize(s.count);
    std::mutex mu;
    size_t bad_index = std::numeric_limits<size_t>::max();
    const char *bad_why = nullptr;
    parallel_for(s.count, threads, 1024, [&](size_t b, size_t e, size_t) {
        for (size_t i = b; i < e; i++) {
            const char *why = decode_point<Affine>(&out[i], data + s.offset + i * elem);
            if (why) {
                std::lock_guard<std::mutex> lk(mu);
                if (i < bad_index) {
                    bad_index = i;
                    bad_why = why;
                }
                return;
            }
        }
    });
    if (bad_why)
        fail(CP_ERR_PARAMS_FORMAT, "params: section " + std::string(s.name) + " point " +
                                       std::to_string(bad_index) + " (offset " +
                                       std::to_string(s.offset + bad_index * elem) +
                                       "): " + bad_why);
}

template <class Affine>
void decode_single(const uint8_t *data, size_t offset, const char *name, Affine *out) {
    const char *why = decode_point<Affine>(out, data + offset);
    if (why)
        fail(CP_ERR_PARAMS_FORMAT, "params: vk point " + std::string(name) + " (offset " +
                                       std::to_string(offset) + "): " + why);
}

void parse_params(const uint8_t *data, size_t len, srs &key) {
    if (data == nullptr && len != 0) fail(CP_ERR_INVALID_ARGUMENT, "cp_srs_from_bytes: data is NULL");
    cursor cur{data, len};
    // Verifying key: six fixed points.
    const size_t vk_fixed = 3 * G1_BYTES + 3 * G2_BYTES;
    cur.need("vk", vk_fixed);
    size_t o = 0;
    decode_single(data, o, "alpha_g1", &key.alpha_g1), o += G1_BYTES;
    decode_single(data, o, "beta_g1", &key.beta_g1), o += G1_BYTES;
    decode_single(data, o, "beta_g2", &key.beta_g2), o += G2_BYTES;
    decode_single(data, o, "gamma_g2", &key.gamma_g2), o += G2_BYTES;
    decode_single(data, o, "delta_g1", &key.delta_g1), o += G1_BYTES;
    decode_single(data, o, "delta_g2", &key.delta_g2), o += G2_BYTES;
    cur.off = o;
    // Locate every section before allocating anything.
    section_ref ic = locate<blst_p1_affine>(cur, "ic", G1_BYTES);
    section_ref h = locate<blst_p1_affine>(cur, "h", G1_BYTES);
    section_ref l = locate<blst_p1_affine>(cur, "l", G1_BYTES);
    section_ref a = locate<blst_p1_affine>(cur, "a", G1_BYTES);
    section_ref b1 = locate<blst_p1_affine>(cur, "b_g1", G1_BYTES);
    section_ref b2 = locate<blst_p2_affine>(cur, "b_g2", G2_BYTES);
    if (cur.off != len)
        fail(CP_ERR_PARAMS_FORMAT, "params: " + std::to_string(len - cur.off) +
                                       " trailing bytes after the b_g2 section (offset " +
                                       std::to_string(cur.off) + ", file has " +
                                       std::to_string(len) + ")");
    const int threads = hardware_threads();
    decode_section(data, ic, key.ic, threads);
    decode_section(data, h, key.h, threads);
    decode_section(data, l, key.l, threads);
    decode_section(data, a, key.a, threads);
    decode_section(data, b1, key.b_g1, threads);
    decode_section(data, b2, key.b_g2, threads);
}

// A read-only mapping of a whole file.
struct mapped_file {
    int fd = -1;
    void *addr = nullptr;
    size_t len = 0;
    ~mapped_file() {
        if (addr && addr != MAP_FAILED) munmap(addr, len);
        if (fd >= 0) close(fd);
    }
};

[[noreturn]] void io_fail(const char *what, const char *path, int err) {
    fail(CP_ERR_PARAMS_IO,
         std::string("params file '") + path + "': " + what + ": " + std::strerror(err));
}

template <class T>
void copy_array(std::vector<T> &dst, const void *src, size_t n, const char *name) {
    if (n && !src) fail(CP_ERR_INVALID_ARGUMENT, std::string("cp_srs_from_parts: ") + name + " is NULL with length " + std::to_string(n));
    dst.resize(n);
    if (n) std::memcpy(dst.data(), src, n * sizeof(T));
}

const cp::srs &key_of(const cp_srs *s) { return s->key; }

}  // namespace
}  // namespace cp

using namespace cp;

extern "C" {

cp_status cp_srs_from_parts(const cp_srs_parts *parts, cp_srs **out) {
    return guard("cp_srs_from_parts", [&] {
        if (!parts || !out) fail(CP_ERR_INVALID_ARGUMENT, "cp_srs_from_parts: NULL argument");
        *out = nullptr;
        std::unique_ptr<cp_srs> s(new cp_srs);
        srs &k = s->key;
        std::memcpy(&k.alpha_g1, &parts->alpha_g1, sizeof k.alpha_g1);
        std::memcpy(&k.beta_g1, &parts->beta_g1, sizeof k.beta_g1);
        std::memcpy(&k.beta_g2, &parts->beta_g2, sizeof k.beta_g2);
        std::memcpy(&k.gamma_g2, &parts->gamma_g2, sizeof k.gamma_g2);
        std::memcpy(&k.delta_g1, &parts->delta_g1, sizeof k.delta_g1);
        std::memcpy(&k.delta_g2, &parts->delta_g2, sizeof k.delta_g2);
        copy_array(k.ic, parts->ic, parts->ic_len, "ic");
        copy_array(k.h, parts->h, parts->h_len, "h");
        copy_array(k.l, parts->l, parts->l_len, "l");
        copy_array(k.a, parts->a, parts->a_len, "a");
        copy_array(k.b_g1, parts->b_g1, parts->b_g1_len, "b_g1");
        copy_array(k.b_g2, parts->b_g2, parts->b_g2_len, "b_g2");
        *out = s.release();
    });
}

cp_status cp_srs_from_bytes(const uint8_t *data, size_t len, cp_srs **out) {
    return guard("cp_srs_from_bytes", [&] {
        if (!out) fail(CP_ERR_INVALID_ARGUMENT, "cp_srs_from_bytes: out is NULL");
        *out = nullptr;
        std::unique_ptr<cp_srs> s(new cp_srs);
        parse_params(data, len, s->key);
        *out = s.release();
    });
}

cp_status cp_srs_from_file(const char *path, cp_srs **out) {
    return guard("cp_srs_from_file", [&] {
        if (!path || !out) fail(CP_ERR_INVALID_ARGUMENT, "cp_srs_from_file: NULL argument");
        *out = nullptr;
        mapped_file f;
        f.fd = open(path, O_RDONLY | O_CLOEXEC);
        if (f.fd < 0) io_fail("cannot open", path, errno);
        struct stat st;
        if (fstat(f.fd, &st) != 0) io_fail("cannot stat", path, errno);
        if (!S_ISREG(st.st_mode)) io_fail("not a regular file", path, EINVAL);
        f.len = static_cast<size_t>(st.st_size);
        static const uint8_t empty = 0;
        const uint8_t *data = &empty;
        if (f.len) {
            f.addr = mmap(nullptr, f.len, PROT_READ, MAP_PRIVATE, f.fd, 0);
            if (f.addr == MAP_FAILED) io_fail("cannot map", path, errno);
            madvise(f.addr, f.len, MADV_SEQUENTIAL);
            data = static_cast<const uint8_t *>(f.addr);
        }
        std::unique_ptr<cp_srs> s(new cp_srs);
        try {
            parse_params(data, f.len, s->key);
        } catch (error &e) {
            e.message += std::string(" [file '") + path + "']";
            throw;
        }
        *out = s.release();
    });
}

void cp_srs_free(cp_srs *srs) {
    guard_void([&] { delete srs; });
}

cp_status cp_srs_shape_get(const cp_srs *s, cp_srs_shape *out) {
    return guard("cp_srs_shape_get", [&] {
        if (!s || !out) fail(CP_ERR_INVALID_ARGUMENT, "cp_srs_shape_get: NULL argument");
        const srs &k = key_of(s);
        out->ic_len = k.ic.size();
        out->h_len = k.h.size();
        out->l_len = k.l.size();
        out->a_len = k.a.size();
        out->b_g1_len = k.b_g1.size();
        out->b_g2_len = k.b_g2.size();
    });
}

cp_status cp_srs_vk_get(const cp_srs *s, cp_srs_parts *vk, cp_g1_affine *ic_out, size_t ic_cap) {
    return guard("cp_srs_vk_get", [&] {
        if (!s || !vk) fail(CP_ERR_INVALID_ARGUMENT, "cp_srs_vk_get: NULL argument");
        const srs &k = key_of(s);
        std::memset(vk, 0, sizeof *vk);
        std::memcpy(&vk->alpha_g1, &k.alpha_g1, sizeof vk->alpha_g1);
        std::memcpy(&vk->beta_g1, &k.beta_g1, sizeof vk->beta_g1);
        std::memcpy(&vk->beta_g2, &k.beta_g2, sizeof vk->beta_g2);
        std::memcpy(&vk->gamma_g2, &k.gamma_g2, sizeof vk->gamma_g2);
        std::memcpy(&vk->delta_g1, &k.delta_g1, sizeof vk->delta_g1);
        std::memcpy(&vk->delta_g2, &k.delta_g2, sizeof vk->delta_g2);
        // Lengths are reported; array pointers are left NULL.
        vk->ic_len = k.ic.size();
        vk->h_len = k.h.size();
        vk->l_len = k.l.size();
        vk->a_len = k.a.size();
        vk->b_g1_len = k.b_g1.size();
        vk->b_g2_len = k.b_g2.size();
        if (ic_out == nullptr && ic_cap == 0) return;  // a query for ic_len
        if (ic_out == nullptr || ic_cap < k.ic.size())
            fail(CP_ERR_INVALID_ARGUMENT, "cp_srs_vk_get: ic_out holds " + std::to_string(ic_cap) +
                                              " points, the key has " +
                                              std::to_string(k.ic.size()));
        if (!k.ic.empty()) std::memcpy(ic_out, k.ic.data(), k.ic.size() * sizeof(cp_g1_affine));
        vk->ic = ic_out;
    });
}

cp_status cp_memory_estimate_get(const cp_srs *s, uint64_t num_constraints, cp_memory_estimate *out) {
    return guard("cp_memory_estimate_get", [&] {
        if (!s || !out) fail(CP_ERR_INVALID_ARGUMENT, "cp_memory_estimate_get: NULL argument");
        *out = host::estimate(key_of(s), num_constraints);
    });
}

}  // extern "C"
