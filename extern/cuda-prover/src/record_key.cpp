// Owns: the record key's location, creation and checks, and the HMAC
// (see record_key.hpp).
#include "record_key.hpp"

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "blst.h"

namespace cp {
namespace {

std::string env(const char *name) {
    const char *v = std::getenv(name);
    return v && *v ? std::string(v) : std::string();
}

// The key's folder, or empty when no variable names one.
std::string key_dir() {
    std::string d = env("CUDA_PROVER_STATE_DIR");
    if (!d.empty()) return d;
    d = env("XDG_STATE_HOME");
    if (!d.empty()) return d + "/cuda-prover";
    d = env("HOME");
    if (!d.empty()) return d + "/.local/state/cuda-prover";
    return std::string();
}

// mkdir -p with mode 0700 for the folders it makes.
bool make_dirs(const std::string &dir) {
    for (size_t i = 1; i <= dir.size(); i++) {
        if (i == dir.size() || dir[i] == '/') {
            const std::string part = dir.substr(0, i);
            if (::mkdir(part.c_str(), 0700) != 0 && errno != EEXIST) return false;
        }
    }
    return true;
}

std::string err(const std::string &what, int e) { return what + ": " + std::strerror(e); }

bool read_key(int fd, const std::string &path, record_key *out, std::string *why) {
    struct stat st;
    if (::fstat(fd, &st) != 0) return *why = err("cannot stat " + path, errno), false;
    if (!S_ISREG(st.st_mode)) return *why = path + " is not a regular file", false;
    if (st.st_uid != ::geteuid()) return *why = path + " belongs to another user", false;
    if (st.st_mode & 077) return *why = path + " may be read or written by others (mode must be 0600)", false;
    if (st.st_size != 32) return *why = path + " does not hold 32 bytes", false;
    size_t got = 0;
    while (got < 32) {
        const ssize_t r = ::read(fd, out->k + got, 32 - got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return *why = path + ": short read", false;
        got += static_cast<size_t>(r);
    }
    return true;
}

bool fill_random(uint8_t *p, size_t n) {
    size_t got = 0;
    while (got < n) {
        const ssize_t r = ::getrandom(p + got, n - got, 0);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return false;
        got += static_cast<size_t>(r);
    }
    return true;
}

}  // namespace

bool load_record_key(bool create, record_key *out, std::string *why) {
    const std::string dir = key_dir();
    if (dir.empty()) return *why = "no record key: none of CUDA_PROVER_STATE_DIR, XDG_STATE_HOME, HOME is set", false;
    const std::string path = dir + "/record.key";
    for (int attempt = 0; attempt < 2; attempt++) {
        const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        if (fd >= 0) {
            const bool ok = read_key(fd, path, out, why);
            ::close(fd);
            return ok;
        }
        if (errno != ENOENT) return *why = err("cannot open the record key " + path, errno), false;
        if (!create) return *why = "no record key at " + path, false;
        if (!make_dirs(dir)) return *why = err("cannot make " + dir, errno), false;
        const std::string tmp = path + ".tmp" + std::to_string(::getpid());
        const int w = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (w < 0) return *why = err("cannot create " + tmp, errno), false;
        record_key k;
        bool ok = fill_random(k.k, 32) && ::write(w, k.k, 32) == 32 && ::fsync(w) == 0;
        const int e = errno;
        ::close(w);
        // link(2) fails when another process made the key first: then its
        // key is read on the next attempt.
        ok = ok && (::link(tmp.c_str(), path.c_str()) == 0 || errno == EEXIST);
        ::unlink(tmp.c_str());
        if (!ok) return *why = err("cannot write the record key " + path, e), false;
    }
    return *why = "the record key " + path + " vanished while it was made", false;
}

std::string hmac_hex(const record_key &key, const std::string &msg) {
    uint8_t pad[64];
    std::vector<uint8_t> inner(64 + msg.size());
    for (int i = 0; i < 64; i++) pad[i] = (i < 32 ? key.k[i] : 0) ^ 0x36;
    std::memcpy(inner.data(), pad, 64);
    std::memcpy(inner.data() + 64, msg.data(), msg.size());
    uint8_t outer[64 + 32];
    for (int i = 0; i < 64; i++) outer[i] = (i < 32 ? key.k[i] : 0) ^ 0x5c;
    blst_sha256(outer + 64, inner.data(), inner.size());
    uint8_t mac[32];
    blst_sha256(mac, outer, sizeof outer);
    static const char d[] = "0123456789abcdef";
    std::string s(64, '0');
    for (int i = 0; i < 32; i++) {
        s[2 * i] = d[mac[i] >> 4];
        s[2 * i + 1] = d[mac[i] & 15];
    }
    return s;
}

}  // namespace cp
