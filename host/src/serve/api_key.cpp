#include "serve/api_key.hpp"

#include <algorithm>
#include <cstddef>

namespace stormo::serve {

bool constant_time_equal(std::string_view a, std::string_view b) {
    // Every byte of the longer one is visited whatever the contents; a length difference is
    // folded into the same accumulator instead of returning early.
    const size_t n = std::max(a.size(), b.size());
    unsigned diff = a.size() == b.size() ? 0u : 1u;
    for (size_t i = 0; i < n; ++i) {
        const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
        const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
        diff |= static_cast<unsigned>(x ^ y);
    }
    // Read through a volatile so the compiler cannot turn the loop into an early exit.
    volatile unsigned result = diff;
    return result == 0;
}

bool bearer_matches(std::string_view authorization, std::string_view key) {
    constexpr std::string_view kScheme = "Bearer ";
    if (authorization.size() < kScheme.size()) return false;
    const std::string_view scheme = authorization.substr(0, kScheme.size());
    bool scheme_ok = true;
    for (size_t i = 0; i < kScheme.size(); ++i)
        scheme_ok &= (scheme[i] | 0x20) == (kScheme[i] | 0x20);  // the scheme is case-insensitive
    const bool key_ok = constant_time_equal(authorization.substr(kScheme.size()), key);
    return scheme_ok && key_ok;
}

}  // namespace stormo::serve
