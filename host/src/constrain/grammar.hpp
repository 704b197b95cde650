#pragma once
// A context-free grammar over bytes, as the matcher walks it: rules of alternatives, each a
// sequence of items (a set of bytes, or a reference to a rule), closed by an end item. Character
// classes over code points are compiled to their UTF-8 byte sequences (utf8_ranges.hpp), so a
// token's bytes are matched as they are, whole characters or not.
#include <bitset>
#include <cstdint>
#include <string>
#include <vector>

namespace stormo::constrain {

using ByteSet = std::bitset<256>;

struct GrammarItem {
    enum class Kind : uint8_t { bytes, rule, end };
    Kind kind = Kind::end;
    int32_t index = 0;  // bytes: into Grammar::byte_sets; rule: the rule's id
};

struct Grammar {
    std::vector<GrammarItem> items;                   // every alternative's items, each closed by an end item
    std::vector<std::vector<int32_t>> alternatives;   // per rule: where each of its alternatives starts in `items`
    std::vector<ByteSet> byte_sets;
    std::vector<std::string> rule_names;
    int32_t root = 0;
};

}  // namespace stormo::constrain
