#pragma once
// Walks a Grammar one byte at a time. The matcher's state is the set of parse stacks still alive
// (a pushdown automaton run nondeterministically, as llama.cpp's grammar sampler does), and every
// stack and every set of stacks is interned, so a state is a small integer and the step from a
// state on a byte is computed once and then looked up: repeated states (inside a string, between
// array items) cost a table read. One matcher serves one request (it grows with what it meets).
#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "constrain/grammar.hpp"

namespace stormo::constrain {

class GrammarMatcher {
public:
    using State = int32_t;
    static constexpr State kDead = 0;  // no stack alive: nothing can follow

    explicit GrammarMatcher(std::shared_ptr<const Grammar> grammar);

    State start() const { return start_; }
    State step(State state, uint8_t byte);
    // `bytes` from `state`: kDead as soon as one byte is refused.
    State walk(State state, std::string_view bytes);
    // The text so far is a whole sentence of the grammar.
    bool accepts(State state) const;
    // Some byte may still follow.
    bool can_continue(State state) const;
    // The one byte that must come next: none when the state accepts, is dead, or admits several.
    std::optional<uint8_t> only_byte(State state);

    const Grammar& grammar() const { return *grammar_; }

private:
    struct Stack {
        int32_t parent;  // the stack below the top, 0 for the empty stack
        int32_t pos;     // the top: the item to match next
    };
    using Row = std::array<State, 256>;

    int32_t push(int32_t parent, int32_t pos);
    // The stacks `stack` becomes when its top rule references are opened down to byte items (the
    // empty stack, 0, stands for acceptance).
    const std::vector<int32_t>& expand(int32_t stack);
    void expand_into(int32_t stack, std::vector<int32_t>& out);
    // The stack after the top item matched.
    int32_t advance(int32_t stack);
    State intern(std::vector<int32_t> stacks);

    std::shared_ptr<const Grammar> grammar_;
    std::vector<Stack> stacks_;
    std::unordered_map<uint64_t, int32_t> stack_ids_;
    std::vector<std::optional<std::vector<int32_t>>> expanded_;
    std::vector<std::vector<int32_t>> sets_;
    std::map<std::vector<int32_t>, State> set_ids_;
    std::vector<std::unique_ptr<Row>> rows_;
    State start_ = kDead;
};

}  // namespace stormo::constrain
