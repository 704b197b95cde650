#include "constrain/grammar_builder.hpp"

#include <functional>
#include <optional>

namespace {

// Rules a grammar may have once groups, classes and repetitions are made rules: a bound on what
// one request can make the server build ({0,10000} nested ten deep would be 100000 rules).
constexpr size_t kMaxRules = 200000;

}  // namespace

namespace stormo::constrain {

int32_t GrammarBuilder::named(const std::string& name, const std::string& where) {
    if (auto it = by_name_.find(name); it != by_name_.end()) return it->second;
    const auto id = static_cast<int32_t>(names_.size());
    names_.push_back(name);
    rules_.emplace_back();
    defined_.push_back(false);
    first_mention_.push_back(where);
    by_name_[name] = id;
    return id;
}

int32_t GrammarBuilder::fresh(const std::string& base) {
    std::string name;
    do name = base + "-" + std::to_string(++fresh_count_[base]);
    while (by_name_.contains(name));
    const int32_t id = named(name, {});
    defined_[static_cast<size_t>(id)] = true;
    return id;
}

Expected<void> GrammarBuilder::define(int32_t rule, std::vector<ItemSequence> alternatives, const std::string& where) {
    const auto r = static_cast<size_t>(rule);
    if (defined_[r] && !rules_[r].empty())
        return fail(ErrorKind::invalid_argument, where + "rule '" + names_[r] + "' is defined twice");
    defined_[r] = true;
    rules_[r] = std::move(alternatives);
    return {};
}

GrammarItem GrammarBuilder::bytes(const ByteSet& set) {
    const std::string key = set.to_string();
    auto [it, added] = byte_set_ids_.try_emplace(key, static_cast<int32_t>(byte_sets_.size()));
    if (added) byte_sets_.push_back(set);
    return {GrammarItem::Kind::bytes, it->second};
}

ItemSequence GrammarBuilder::repeat(ItemSequence atom, int min, int max, const std::string& base) {
    // One item stands for the atom, so copies of it are one item each.
    GrammarItem unit = atom.size() == 1 ? atom[0] : GrammarItem{};
    if (atom.size() != 1) {
        const int32_t r = fresh(base);
        rules_[static_cast<size_t>(r)] = {std::move(atom)};
        unit = ref(r);
    }
    ItemSequence out(static_cast<size_t>(min), unit);
    if (max < 0) {  // unit* : R ::= unit R | (nothing); the reference sits last, so the stack does not grow
        const int32_t r = fresh(base);
        rules_[static_cast<size_t>(r)] = {{unit, ref(r)}, {}};
        out.push_back(ref(r));
    } else if (max > min) {  // up to max - min more, nested: R_k ::= unit R_(k-1) | (nothing)
        int32_t inner = -1;
        for (int k = 0; k < max - min; ++k) {
            const int32_t r = fresh(base);
            ItemSequence more{unit};
            if (inner >= 0) more.push_back(ref(inner));
            rules_[static_cast<size_t>(r)] = {std::move(more), {}};
            inner = r;
        }
        out.push_back(ref(inner));
    }
    return out;
}

Expected<Grammar> GrammarBuilder::finish(const std::string& root) {
    if (names_.size() > kMaxRules)
        return fail(ErrorKind::invalid_argument, "the grammar is too large: " + std::to_string(names_.size()) +
                                                     " rules once its repetitions are unrolled, more than " +
                                                     std::to_string(kMaxRules));
    for (size_t r = 0; r < names_.size(); ++r)
        if (!defined_[r]) return fail(ErrorKind::invalid_argument, first_mention_[r] + "undefined rule '" + names_[r] + "'");
    auto root_it = by_name_.find(root);
    if (root_it == by_name_.end()) return fail(ErrorKind::invalid_argument, "the grammar has no rule named '" + root + "'");
    Grammar g;
    g.root = root_it->second;
    g.rule_names = names_;
    g.byte_sets = byte_sets_;
    g.alternatives.resize(rules_.size());
    for (size_t r = 0; r < rules_.size(); ++r)
        for (const ItemSequence& alt : rules_[r]) {
            g.alternatives[r].push_back(static_cast<int32_t>(g.items.size()));
            g.items.insert(g.items.end(), alt.begin(), alt.end());
            g.items.push_back({GrammarItem::Kind::end, 0});
        }
    STORMO_TRY(check_left_recursion(g));
    return g;
}

Expected<void> GrammarBuilder::check_left_recursion(const Grammar& g) const {
    const size_t n = g.alternatives.size();
    // Which rules can match nothing at all (a fixpoint).
    std::vector<bool> nullable(n, false);
    for (bool changed = true; changed;) {
        changed = false;
        for (size_t r = 0; r < n; ++r) {
            if (nullable[r]) continue;
            for (int32_t at : g.alternatives[r]) {
                bool all = true;
                for (auto i = static_cast<size_t>(at); g.items[i].kind != GrammarItem::Kind::end && all; ++i)
                    all = g.items[i].kind == GrammarItem::Kind::rule && nullable[static_cast<size_t>(g.items[i].index)];
                if (all) {
                    nullable[r] = changed = true;
                    break;
                }
            }
        }
    }
    // Rule r can start with rule s without consuming a byte: an edge; a cycle is left recursion.
    std::vector<std::vector<int32_t>> starts(n);
    for (size_t r = 0; r < n; ++r)
        for (int32_t at : g.alternatives[r])
            for (auto i = static_cast<size_t>(at); g.items[i].kind == GrammarItem::Kind::rule; ++i) {
                starts[r].push_back(g.items[i].index);
                if (!nullable[static_cast<size_t>(g.items[i].index)]) break;
            }
    std::vector<int> mark(n, 0);  // 0 unseen, 1 on the path, 2 done
    std::optional<size_t> cycle;
    std::function<void(size_t)> visit = [&](size_t r) {
        mark[r] = 1;
        for (int32_t s : starts[r]) {
            if (cycle) return;
            const auto u = static_cast<size_t>(s);
            if (mark[u] == 1) cycle = u;
            else if (mark[u] == 0) visit(u);
        }
        mark[r] = 2;
    };
    for (size_t r = 0; r < n && !cycle; ++r)
        if (mark[r] == 0) visit(r);
    if (cycle)
        return fail(ErrorKind::invalid_argument, "rule '" + names_[*cycle] +
                                                     "' is left-recursive: it can reach itself before matching a "
                                                     "character (a repetition of something that can be empty does this too)");
    return {};
}

}  // namespace stormo::constrain
