#include "constrain/grammar_matcher.hpp"

#include <algorithm>

namespace stormo::constrain {
namespace {

constexpr GrammarMatcher::State kUnknown = -1;

}  // namespace

GrammarMatcher::GrammarMatcher(std::shared_ptr<const Grammar> grammar) : grammar_(std::move(grammar)) {
    stacks_.push_back({0, -1});  // the empty stack
    expanded_.emplace_back();
    sets_.emplace_back();        // the dead state: no stack
    set_ids_[{}] = kDead;
    rows_.emplace_back();
    std::vector<int32_t> first;
    for (int32_t at : grammar_->alternatives[static_cast<size_t>(grammar_->root)]) {
        if (grammar_->items[static_cast<size_t>(at)].kind == GrammarItem::Kind::end) first.push_back(0);
        else expand_into(push(0, at), first);
    }
    start_ = intern(std::move(first));
}

int32_t GrammarMatcher::push(int32_t parent, int32_t pos) {
    const uint64_t key = (static_cast<uint64_t>(static_cast<uint32_t>(parent)) << 32) | static_cast<uint32_t>(pos);
    auto [it, added] = stack_ids_.try_emplace(key, static_cast<int32_t>(stacks_.size()));
    if (added) {
        stacks_.push_back({parent, pos});
        expanded_.emplace_back();
    }
    return it->second;
}

void GrammarMatcher::expand_into(int32_t stack, std::vector<int32_t>& out) {
    const std::vector<int32_t>& e = expand(stack);
    out.insert(out.end(), e.begin(), e.end());
}

const std::vector<int32_t>& GrammarMatcher::expand(int32_t stack) {
    if (expanded_[static_cast<size_t>(stack)]) return *expanded_[static_cast<size_t>(stack)];
    std::vector<int32_t> out;
    if (stack == 0) {
        out.push_back(0);
    } else {
        const Stack s = stacks_[static_cast<size_t>(stack)];
        const GrammarItem& item = grammar_->items[static_cast<size_t>(s.pos)];
        if (item.kind == GrammarItem::Kind::bytes) {
            out.push_back(stack);
        } else {
            // Open the rule: each alternative on top of what follows the reference (left out
            // when nothing does, so a trailing self-reference does not deepen the stack).
            const int32_t rest = advance(stack);
            for (int32_t at : grammar_->alternatives[static_cast<size_t>(item.index)]) {
                if (grammar_->items[static_cast<size_t>(at)].kind == GrammarItem::Kind::end) expand_into(rest, out);
                else expand_into(push(rest, at), out);
            }
        }
    }
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    // `expanded_` may have grown (and moved) during the recursion: index it only now.
    expanded_[static_cast<size_t>(stack)] = std::move(out);
    return *expanded_[static_cast<size_t>(stack)];
}

int32_t GrammarMatcher::advance(int32_t stack) {
    const Stack s = stacks_[static_cast<size_t>(stack)];
    const int32_t next = s.pos + 1;
    if (grammar_->items[static_cast<size_t>(next)].kind == GrammarItem::Kind::end) return s.parent;
    return push(s.parent, next);
}

GrammarMatcher::State GrammarMatcher::intern(std::vector<int32_t> stacks) {
    std::sort(stacks.begin(), stacks.end());
    stacks.erase(std::unique(stacks.begin(), stacks.end()), stacks.end());
    auto [it, added] = set_ids_.try_emplace(stacks, static_cast<State>(sets_.size()));
    if (added) {
        sets_.push_back(std::move(stacks));
        rows_.emplace_back();
    }
    return it->second;
}

GrammarMatcher::State GrammarMatcher::step(State state, uint8_t byte) {
    if (state == kDead) return kDead;
    auto& row = rows_[static_cast<size_t>(state)];
    if (!row) {
        row = std::make_unique<Row>();
        row->fill(kUnknown);
    }
    if (State known = (*row)[byte]; known != kUnknown) return known;
    std::vector<int32_t> next;
    const std::vector<int32_t> stacks = sets_[static_cast<size_t>(state)];  // a copy: interning may grow sets_
    for (int32_t stack : stacks) {
        if (stack == 0) continue;
        const GrammarItem& item = grammar_->items[static_cast<size_t>(stacks_[static_cast<size_t>(stack)].pos)];
        if (!grammar_->byte_sets[static_cast<size_t>(item.index)].test(byte)) continue;
        expand_into(advance(stack), next);
    }
    const State result = intern(std::move(next));
    (*rows_[static_cast<size_t>(state)])[byte] = result;
    return result;
}

GrammarMatcher::State GrammarMatcher::walk(State state, std::string_view bytes) {
    for (char c : bytes) {
        state = step(state, static_cast<uint8_t>(c));
        if (state == kDead) break;
    }
    return state;
}

bool GrammarMatcher::accepts(State state) const {
    const auto& s = sets_[static_cast<size_t>(state)];
    return !s.empty() && s.front() == 0;
}

bool GrammarMatcher::can_continue(State state) const {
    const auto& s = sets_[static_cast<size_t>(state)];
    return !s.empty() && s.back() != 0;
}

std::optional<uint8_t> GrammarMatcher::only_byte(State state) {
    if (state == kDead || accepts(state)) return std::nullopt;
    ByteSet possible;
    for (int32_t stack : sets_[static_cast<size_t>(state)])
        possible |= grammar_->byte_sets[static_cast<size_t>(grammar_->items[static_cast<size_t>(stacks_[static_cast<size_t>(stack)].pos)].index)];
    if (possible.count() != 1) return std::nullopt;
    for (unsigned b = 0; b < 256; ++b)
        if (possible.test(b)) return static_cast<uint8_t>(b);
    return std::nullopt;
}

}  // namespace stormo::constrain
