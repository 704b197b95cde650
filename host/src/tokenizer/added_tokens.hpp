#pragma once
// Added tokens (tokenizer.json "added_tokens"): found in the text before the model sees it,
// leftmost match first and the longest among those starting there, as the reference's
// leftmost-longest Aho-Corasick does. The text between matches goes through the normal pipeline.
#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace stormo::text {

struct AddedToken {
    int32_t id = 0;
    std::string content;
    bool special = false;
    bool normalized = false;  // matched in the normalized text instead of the raw text
};

class AddedTokenMatcher {
public:
    AddedTokenMatcher() = default;
    explicit AddedTokenMatcher(std::vector<AddedToken> tokens);

    // Walks `text`: calls token(id) for each match and gap(text) for each stretch between them.
    void split(std::string_view text, const std::function<void(std::string_view)>& gap,
               const std::function<void(int32_t)>& token) const;
    bool empty() const { return tokens_.empty(); }

private:
    std::vector<AddedToken> tokens_;
    // For each first byte, the tokens starting with it, longest first.
    std::array<std::vector<uint32_t>, 256> by_first_byte_;
};

}  // namespace stormo::text
