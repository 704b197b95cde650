#include "constrain/token_trie.hpp"

#include <algorithm>

#include "tokenizer/tokenizer.hpp"

namespace stormo::constrain {

TokenTrie TokenTrie::build(std::vector<std::pair<int32_t, std::string>> tokens, size_t vocab_size) {
    TokenTrie trie;
    trie.vocab_size_ = vocab_size;
    trie.bytes_.resize(vocab_size);
    std::erase_if(tokens, [&](const auto& t) { return t.second.empty() || t.first < 0 || static_cast<size_t>(t.first) >= vocab_size; });
    std::sort(tokens.begin(), tokens.end(), [](const auto& a, const auto& b) { return a.second != b.second ? a.second < b.second : a.first < b.first; });
    std::vector<uint32_t> open;  // the node at each depth of the current path
    std::string_view previous;
    for (const auto& [id, text] : tokens) {
        size_t common = 0;
        while (common < previous.size() && common < text.size() && previous[common] == text[common]) ++common;
        // Close the nodes of the previous path below the shared prefix.
        while (open.size() > common) {
            trie.nodes_[open.back()].end = static_cast<uint32_t>(trie.nodes_.size());
            open.pop_back();
        }
        for (size_t d = common; d < text.size(); ++d) {
            Node node;
            node.byte = static_cast<uint8_t>(text[d]);
            node.depth = static_cast<uint32_t>(d + 1);
            node.tokens_begin = node.tokens_end = static_cast<uint32_t>(trie.token_ids_.size());
            open.push_back(static_cast<uint32_t>(trie.nodes_.size()));
            trie.nodes_.push_back(node);
        }
        Node& last = trie.nodes_[open.back()];
        trie.token_ids_.push_back(id);
        last.tokens_end = static_cast<uint32_t>(trie.token_ids_.size());
        trie.max_depth_ = std::max(trie.max_depth_, static_cast<uint32_t>(text.size()));
        trie.bytes_[static_cast<size_t>(id)] = text;
        if (text.find_first_not_of('\n') == std::string::npos) trie.newline_tokens_.push_back(id);
        previous = trie.bytes_[static_cast<size_t>(id)];
    }
    while (!open.empty()) {
        trie.nodes_[open.back()].end = static_cast<uint32_t>(trie.nodes_.size());
        open.pop_back();
    }
    return trie;
}

Expected<std::shared_ptr<const TokenTrie>> TokenTrie::from_tokenizer(const text::Tokenizer& tokenizer, size_t vocab_size) {
    std::vector<std::pair<int32_t, std::string>> tokens;
    const size_t n = std::min(tokenizer.size(), vocab_size);
    tokens.reserve(n);
    for (size_t i = 0; i < n; ++i) {
        const auto id = static_cast<int32_t>(i);
        if (tokenizer.is_special(id)) continue;
        auto bytes = tokenizer.token_bytes(id);
        if (!bytes) continue;  // a hole in the vocabulary: no text, never allowed
        tokens.emplace_back(id, std::move(*bytes));
    }
    return std::make_shared<const TokenTrie>(build(std::move(tokens), vocab_size));
}

std::string_view TokenTrie::bytes(int32_t id) const {
    if (id < 0 || static_cast<size_t>(id) >= bytes_.size()) return {};
    return bytes_[static_cast<size_t>(id)];
}

}  // namespace stormo::constrain
