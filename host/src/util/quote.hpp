#pragma once
// Names in error messages are quoted: "model.norm.weight".
#include <string>
#include <string_view>

namespace stormo {

// Appends rather than `"\"" + s`: g++ 12 warns falsely (-Wrestrict) on a literal + std::string.
inline std::string in_quotes(std::string_view s) {
    std::string out;
    out.reserve(s.size() + 2);
    out += '"';
    out += s;
    out += '"';
    return out;
}

}  // namespace stormo
