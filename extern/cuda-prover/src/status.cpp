// Owns: cp_status allocation and cp_string_free.
#include "status.hpp"

#include <cstdlib>
#include <cstring>

namespace cp {

cp_status make_status(cp_code code, const std::string &message) {
    cp_status s{code, nullptr};
    if (code == CP_OK && message.empty()) return s;
    char *m = static_cast<char *>(std::malloc(message.size() + 1));
    if (m) {
        std::memcpy(m, message.data(), message.size());
        m[message.size()] = '\0';
    }
    s.message = m;
    return s;
}

}  // namespace cp

extern "C" void cp_string_free(char *message) { std::free(message); }
