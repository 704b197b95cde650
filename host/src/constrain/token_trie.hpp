#pragma once
// The vocabulary's byte strings, once per tokenizer, as a trie laid out in pre-order (the order
// of the sorted strings): node i's subtree is nodes [i, end), so a walk that finds a byte refused
// skips the whole subtree in one jump. A token mask is one such walk carrying the grammar's
// state per depth, not a decode of every token per step.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "stormo/error.hpp"

namespace stormo::text {
class Tokenizer;
}

namespace stormo::constrain {

class TokenTrie {
public:
    struct Node {
        uint8_t byte = 0;
        uint32_t depth = 0;         // 1 for a string's first byte
        uint32_t end = 0;           // one past the last node of this subtree
        uint32_t tokens_begin = 0;  // the ids whose bytes end here: token_ids()[tokens_begin, tokens_end)
        uint32_t tokens_end = 0;
    };

    // (id, bytes) pairs; an empty string is left out (it would let a step make no progress).
    static TokenTrie build(std::vector<std::pair<int32_t, std::string>> tokens, size_t vocab_size);
    // Every token of the tokenizer but the special ones (they structure a reply; generation
    // decides about them, not the grammar), with the bytes it decodes to. `vocab_size` is the
    // model's, which may have rows past the tokenizer's ids (never allowed by a grammar).
    static Expected<std::shared_ptr<const TokenTrie>> from_tokenizer(const text::Tokenizer& tokenizer, size_t vocab_size);

    const std::vector<Node>& nodes() const { return nodes_; }
    const std::vector<int32_t>& token_ids() const { return token_ids_; }
    uint32_t max_depth() const { return max_depth_; }
    size_t vocab_size() const { return vocab_size_; }
    // The bytes of `id`, empty for a token not in the trie (special, empty, past the tokenizer).
    std::string_view bytes(int32_t id) const;
    // The ids whose bytes are all '\n' (a reply's separators before an answer).
    const std::vector<int32_t>& newline_tokens() const { return newline_tokens_; }

private:
    std::vector<Node> nodes_;
    std::vector<int32_t> token_ids_;
    std::vector<std::string> bytes_;  // per id
    std::vector<int32_t> newline_tokens_;
    uint32_t max_depth_ = 0;
    size_t vocab_size_ = 0;
};

}  // namespace stormo::constrain
