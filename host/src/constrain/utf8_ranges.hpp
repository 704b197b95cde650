#pragma once
// Code-point ranges as the UTF-8 byte sequences that encode them: a character class becomes a
// few sequences of byte ranges ([a-z] is one; [^"] is seven), so a grammar over code points can
// be matched one byte at a time. Surrogates (U+D800..U+DFFF) are never encoded.
#include <cstdint>
#include <utility>
#include <vector>

namespace stormo::constrain {

struct CodePointRange {
    char32_t first = 0;
    char32_t last = 0;
};

// One sequence: per byte, the inclusive range of values it may take.
using ByteRangeSequence = std::vector<std::pair<uint8_t, uint8_t>>;

// The sequences encoding exactly the scalar values in `ranges` (overlaps allowed).
std::vector<ByteRangeSequence> utf8_sequences(const std::vector<CodePointRange>& ranges);

// Every scalar value not in `ranges`.
std::vector<CodePointRange> complement(std::vector<CodePointRange> ranges);

}  // namespace stormo::constrain
