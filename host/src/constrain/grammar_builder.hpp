#pragma once
// Assembles a Grammar rule by rule: named rules (defined once, referenced anywhere), rules made
// up for groups and repetitions, and the checks a finished grammar must pass (every rule
// referenced is defined, a root exists, no rule reaches itself before consuming a byte, which
// would make the matcher loop).
#include <map>
#include <string>
#include <vector>

#include "constrain/grammar.hpp"
#include "stormo/error.hpp"

namespace stormo::constrain {

using ItemSequence = std::vector<GrammarItem>;

class GrammarBuilder {
public:
    // The id of the rule called `name`, created (undefined) at its first mention; `where` says
    // where, for the error if it is never defined.
    int32_t named(const std::string& name, const std::string& where);
    // A rule of its own, named after the rule it was made for ("value-3").
    int32_t fresh(const std::string& base);
    // Gives a rule its alternatives; a named rule defined twice is an error naming `where`.
    Expected<void> define(int32_t rule, std::vector<ItemSequence> alternatives, const std::string& where);

    GrammarItem bytes(const ByteSet& set);
    static GrammarItem ref(int32_t rule) { return {GrammarItem::Kind::rule, rule}; }
    // `atom` repeated between min and max times (max < 0: without bound), as items to splice in.
    ItemSequence repeat(ItemSequence atom, int min, int max, const std::string& base);

    Expected<Grammar> finish(const std::string& root);

private:
    Expected<void> check_left_recursion(const Grammar& g) const;

    std::vector<std::string> names_;
    std::vector<std::vector<ItemSequence>> rules_;
    std::vector<bool> defined_;
    std::vector<std::string> first_mention_;
    std::map<std::string, int32_t> by_name_;
    std::map<std::string, int> fresh_count_;
    std::vector<ByteSet> byte_sets_;
    std::map<std::string, int32_t> byte_set_ids_;
};

}  // namespace stormo::constrain
