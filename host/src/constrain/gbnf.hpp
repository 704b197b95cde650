#pragma once
// llama.cpp's GBNF grammars: `name ::= alternatives` rules, "literals", [character classes]
// (ranges, ^ negation, escapes), `.` (any character), ( groups ), alternation with |, and the
// repetitions *, +, ?, {m}, {m,}, {m,n}; # comments. A rule ends at the end of its line unless a
// group is open or the line ends after ::= or |. The start rule is `root`.
#include <string_view>

#include "constrain/grammar.hpp"
#include "stormo/error.hpp"

namespace stormo::constrain {

// An error names the line and column (1-based) where the text stops making sense:
// "grammar line 3, column 12: expected ')'".
Expected<Grammar> parse_gbnf(std::string_view text);

}  // namespace stormo::constrain
