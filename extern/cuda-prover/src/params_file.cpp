// Owns: safe reads of a params file (see params_file.hpp).
#include "params_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "backend.hpp"

namespace cp {

void params_io_fail(const char *path, const std::string &what, int err) {
    std::string m = std::string("params file '") + path + "': " + what;
    if (err) m += std::string(": ") + std::strerror(err);
    fail(CP_ERR_PARAMS_IO, std::move(m));
}

namespace {

const char *file_kind(mode_t m) {
    if (S_ISDIR(m)) return "a directory";
    if (S_ISFIFO(m)) return "a named pipe";
    if (S_ISSOCK(m)) return "a socket";
    if (S_ISCHR(m)) return "a character device";
    if (S_ISBLK(m)) return "a block device";
    return "not a regular file";
}

}  // namespace

params_file::params_file(const char *path) : path_(path) { open_at(AT_FDCWD, path, false); }

params_file::params_file(int dirfd, const char *name, const char *shown, bool nofollow)
    : path_(shown) {
    open_at(dirfd, name, nofollow);
}

void params_file::open_at(int dirfd, const char *name, bool nofollow) {
    // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a
    // writer forever. The type is checked on the descriptor itself, so the
    // path cannot be swapped between the check and the reads.
    fd_ = ::openat(dirfd, name,
                   O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY | (nofollow ? O_NOFOLLOW : 0));
    if (fd_ < 0) {
        const int e = errno;
        if (nofollow && e == ELOOP)
            params_io_fail(path_,
                           "is a symbolic link (refused: keys are read from inside their "
                           "directory only)",
                           0);
        params_io_fail(path_, e == ENOENT ? "does not exist" : "cannot open", e);
    }
    struct stat st;
    if (::fstat(fd_, &st) != 0) params_io_fail(path_, "cannot stat", errno);
    if (!S_ISREG(st.st_mode))
        params_io_fail(path_, std::string("is ") + file_kind(st.st_mode) + ", not a params file", 0);
    // Regular files ignore O_NONBLOCK; clear it anyway so reads are plain.
    const int fl = ::fcntl(fd_, F_GETFL);
    if (fl >= 0) ::fcntl(fd_, F_SETFL, fl & ~O_NONBLOCK);
    size_ = static_cast<uint64_t>(st.st_size);
}

params_file::~params_file() {
    if (fd_ >= 0) ::close(fd_);
}

void params_file::read_at(uint64_t offset, uint8_t *out, size_t n) const {
    size_t done = 0;
    while (done < n) {
        const ssize_t r = ::pread(fd_, out + done, n - done, static_cast<off_t>(offset + done));
        if (r < 0) {
            if (errno == EINTR) continue;
            params_io_fail(path_, "read failed at offset " + std::to_string(offset + done), errno);
        }
        if (r == 0)
            params_io_fail(path_, "the file shrank while it was loading: it had " +
                                      std::to_string(size_) + " bytes, it ended at " +
                                      std::to_string(offset + done),
                           0);
        done += static_cast<size_t>(r);
    }
}

void params_file::expect_end() const {
    uint8_t b;
    for (;;) {
        const ssize_t r = ::pread(fd_, &b, 1, static_cast<off_t>(size_));
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) params_io_fail(path_, "read failed at offset " + std::to_string(size_), errno);
        if (r > 0)
            params_io_fail(path_, "the file grew while it was loading (it had " +
                                      std::to_string(size_) + " bytes)",
                           0);
        return;
    }
}

uint64_t params_file::next_hole(uint64_t offset) const {
    if (offset >= size_) return size_;
    // lseek moves the descriptor's position, which no read here uses.
    const off_t h = ::lseek(fd_, static_cast<off_t>(offset), SEEK_HOLE);
    if (h < 0) return size_;
    return std::min<uint64_t>(static_cast<uint64_t>(h), size_);
}

}  // namespace cp
