#pragma once
// Oniguruma regexes as the tokenizer compiles them (UTF-8, Oniguruma's default syntax, no
// options), owned and freed in one place; Oniguruma's library-wide setup is done before the first.
#include <oniguruma.h>

#include <memory>
#include <string>
#include <string_view>

#include "stormo/error.hpp"

namespace stormo::text {

struct OnigFree {
    void operator()(regex_t* r) const { onig_free(r); }
};
using OnigRegex = std::unique_ptr<regex_t, OnigFree>;

// The compiled pattern, or Oniguruma's message (initialisation failures included).
Expected<OnigRegex> compile_onig(std::string_view pattern);

}  // namespace stormo::text
