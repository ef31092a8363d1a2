// Owns: cp_status allocation and cp_string_free.
#include "status.hpp"

#include <cstdlib>
#include <cstring>

namespace cp {

cp_status make_status(cp_code code, const char *p0, const char *p1, const char *p2) noexcept {
    cp_status s{code, nullptr};
    const char *parts[3] = {p0, p1, p2};
    size_t len[3] = {0, 0, 0}, total = 0;
    for (int i = 0; i < 3; i++) {
        if (parts[i]) len[i] = std::strlen(parts[i]);
        total += len[i];
    }
    if (code == CP_OK && total == 0) return s;
    char *m = static_cast<char *>(std::malloc(total + 1));
    if (!m) return s;  // the code survives; the message is lost
    size_t o = 0;
    for (int i = 0; i < 3; i++) {
        if (len[i]) std::memcpy(m + o, parts[i], len[i]);
        o += len[i];
    }
    m[total] = '\0';
    s.message = m;
    return s;
}

}  // namespace cp

extern "C" void cp_string_free(char *message) { std::free(message); }
