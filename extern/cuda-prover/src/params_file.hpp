// Owns: reading a params file safely. The file is opened without blocking
// (a named pipe or a device at the path is refused, never waited on), must
// be a regular file, and is read with pread(), never mapped: a file
// that shrinks while it loads is an error, not a SIGBUS. Every failure is
// CP_ERR_PARAMS_IO with the path and the system's reason (permission denied
// is never reported as a missing file). Opened by a directory handle and a
// name, a symbolic link at the name is refused, never followed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace cp {

class params_file {
public:
    // Opens `path` for reading; fails unless it is a regular file.
    explicit params_file(const char *path);
    // Opens `name` relative to the directory open as `dirfd` (AT_FDCWD: a
    // path); with `nofollow`, a symbolic link at `name` is refused. `shown`
    // names the file in messages.
    params_file(int dirfd, const char *name, const char *shown, bool nofollow);
    ~params_file();
    params_file(const params_file &) = delete;
    params_file &operator=(const params_file &) = delete;

    const char *path() const { return path_; }
    // Size when opened.
    uint64_t size() const { return size_; }

    // Reads exactly n bytes at `offset` (pread: threads may read at once).
    void read_at(uint64_t offset, uint8_t *out, size_t n) const;
    // Fails when the file holds more bytes than it did when opened.
    void expect_end() const;
    // The offset of the first hole (a range the file system holds no data
    // for, read as zeros) at or after `offset`; size() when there is none or
    // the file system cannot tell.
    uint64_t next_hole(uint64_t offset) const;

private:
    void open_at(int dirfd, const char *name, bool nofollow);

    const char *path_;
    int fd_ = -1;
    uint64_t size_ = 0;
};

// "params file 'PATH': WHAT: strerror(err)", CP_ERR_PARAMS_IO.
[[noreturn]] void params_io_fail(const char *path, const std::string &what, int err);

}  // namespace cp
