#pragma once
// A list of names for a one-line error: the first few quoted, then how many more.
#include <string>
#include <vector>

#include "stormo/quote.hpp"

namespace stormo {

inline std::string quoted_list(const std::vector<std::string>& names, size_t shown = 3) {
    std::string out;
    for (size_t i = 0; i < names.size() && i < shown; ++i) {
        if (i > 0) out += ", ";
        out += in_quotes(names[i]);
    }
    if (names.size() > shown) out += " and " + std::to_string(names.size() - shown) + " more";
    return out;
}

}  // namespace stormo
