#pragma once
// A grammar run over tokens: the state after the bytes accepted so far, the tokens whose bytes
// the grammar can take next (one walk of the vocabulary's trie, remembered per state), and the
// bytes and tokens the grammar forces from here.
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "constrain/grammar_matcher.hpp"
#include "constrain/token_trie.hpp"
#include "stormo/error.hpp"

namespace stormo::constrain {

class GrammarConstraint {
public:
    GrammarConstraint(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const TokenTrie> vocabulary);

    // One bit per token id of the vocabulary (bit i of word i / 64): its bytes can come next.
    const std::vector<uint64_t>& allowed();
    static bool test(const std::vector<uint64_t>& bits, int32_t id) {
        return (bits[static_cast<size_t>(id) >> 6] >> (static_cast<size_t>(id) & 63)) & 1;
    }
    // Feeds the token's bytes; a token the grammar refuses is an error naming it.
    Expected<void> accept(int32_t token);
    bool accepts() const { return matcher_.accepts(state_); }
    bool can_continue() const { return matcher_.can_continue(state_); }
    bool started() const { return bytes_accepted_ > 0; }

    // The bytes every continuation starts with (until a choice or an accepting point), at most `limit`.
    std::string forced_bytes(size_t limit);
    // Those bytes cut into vocabulary tokens, each the longest token matching what is left (a
    // forced tail no token covers exactly is left out), at most `limit` tokens.
    std::vector<int32_t> forced_tokens(size_t limit);

    const TokenTrie& vocabulary() const { return *vocabulary_; }

private:
    std::vector<uint64_t> compute_mask(GrammarMatcher::State state);

    std::shared_ptr<const TokenTrie> vocabulary_;
    GrammarMatcher matcher_;
    GrammarMatcher::State state_;
    size_t bytes_accepted_ = 0;
    std::unordered_map<GrammarMatcher::State, std::vector<uint64_t>> masks_;
};

}  // namespace stormo::constrain
