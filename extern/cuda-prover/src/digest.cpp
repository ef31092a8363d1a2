// Owns: params digests and verified records (see digest.hpp).
#include "digest.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "blst.h"
#include "record_key.hpp"

namespace cp {
namespace {

// Bumped whenever the checks a record vouches for change.
const char RECORD_HEADER[] = "cuda-prover verified params v2\n";
const char DIGEST_TAG[] = "cuda-prover params digest v1";

std::string hex(const uint8_t *p, size_t n) {
    static const char d[] = "0123456789abcdef";
    std::string s(2 * n, '0');
    for (size_t i = 0; i < n; i++) {
        s[2 * i] = d[p[i] >> 4];
        s[2 * i + 1] = d[p[i] & 15];
    }
    return s;
}

// The record: what it vouches for, then its HMAC under the machine's
// record key (record_key.hpp), so only a holder of that key can make one.
std::string record_text(const record_key &key, uint64_t size, const std::string &digest_hex) {
    const std::string body = std::string(RECORD_HEADER) + "size " + std::to_string(size) +
                             "\nsha256-leaves " + digest_hex + "\n";
    return body + "hmac-sha256 " + hmac_hex(key, body) + "\n";
}

}  // namespace

leaf_hash hash_leaf(const uint8_t *data, size_t len) {
    leaf_hash h;
    blst_sha256(h.h, data, len);
    return h;
}

std::string file_digest_hex(uint64_t size, const std::vector<leaf_hash> &leaves) {
    std::vector<uint8_t> msg(sizeof DIGEST_TAG + 8 + 32 * leaves.size());
    uint8_t *p = msg.data();
    std::memcpy(p, DIGEST_TAG, sizeof DIGEST_TAG);  // with its NUL
    p += sizeof DIGEST_TAG;
    for (int i = 0; i < 8; i++) *p++ = uint8_t(size >> (56 - 8 * i));
    for (const leaf_hash &l : leaves) {
        std::memcpy(p, l.h, 32);
        p += 32;
    }
    uint8_t out[32];
    blst_sha256(out, msg.data(), msg.size());
    return hex(out, 32);
}

std::string verified_record_path(const char *params_path) {
    return std::string(params_path) + ".verified";
}

bool verified_record_matches(int dirfd, const std::string &record_path, uint64_t size,
                             const std::string &digest_hex) {
    record_key key;
    std::string why;
    if (!load_record_key(false, &key, &why)) return false;
    const int fd = ::openat(dirfd, record_path.c_str(),
                            O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW);
    if (fd < 0) return false;
    const std::string want = record_text(key, size, digest_hex);
    char buf[512];
    size_t got = 0;
    bool ok = false;
    struct stat st;
    if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
        static_cast<uint64_t>(st.st_size) == want.size() && want.size() <= sizeof buf) {
        for (;;) {
            const ssize_t r = ::read(fd, buf + got, sizeof buf - got);
            if (r < 0 && errno == EINTR) continue;
            if (r <= 0) break;
            got += static_cast<size_t>(r);
            if (got == sizeof buf) break;
        }
        ok = got == want.size() && std::memcmp(buf, want.data(), got) == 0;
    }
    ::close(fd);
    return ok;
}

std::string write_verified_record(int dirfd, const std::string &record_path, uint64_t size,
                                  const std::string &digest_hex) {
    static std::atomic<uint64_t> counter{0};
    const std::string tmp = record_path + ".tmp" + std::to_string(::getpid()) + "-" +
                            std::to_string(counter.fetch_add(1));
    record_key key;
    std::string no_key;
    if (!load_record_key(true, &key, &no_key))
        return "verified record '" + record_path + "' not written: " + no_key;
    const std::string text = record_text(key, size, digest_hex);
    auto why = [&](const char *what, int err) {
        return "verified record '" + record_path + "' not written: " + what + ": " +
               std::strerror(err);
    };
    const int fd =
        ::openat(dirfd, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0) return why("cannot create a temporary file", errno);
    size_t done = 0;
    while (done < text.size()) {
        const ssize_t r = ::write(fd, text.data() + done, text.size() - done);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) {
            const int e = r < 0 ? errno : EIO;
            ::close(fd);
            ::unlinkat(dirfd, tmp.c_str(), 0);
            return why("write failed", e);
        }
        done += static_cast<size_t>(r);
    }
    if (::fsync(fd) != 0) {
        const int e = errno;
        ::close(fd);
        ::unlinkat(dirfd, tmp.c_str(), 0);
        return why("fsync failed", e);
    }
    ::close(fd);
    if (::renameat(dirfd, tmp.c_str(), dirfd, record_path.c_str()) != 0) {
        const int e = errno;
        ::unlinkat(dirfd, tmp.c_str(), 0);
        return why("rename failed", e);
    }
    return std::string();
}

}  // namespace cp
