#include "tokenizer/added_tokens.hpp"

#include <algorithm>

namespace stormo::text {

AddedTokenMatcher::AddedTokenMatcher(std::vector<AddedToken> tokens) : tokens_(std::move(tokens)) {
    for (uint32_t i = 0; i < tokens_.size(); ++i)
        if (!tokens_[i].content.empty()) by_first_byte_[static_cast<unsigned char>(tokens_[i].content[0])].push_back(i);
    for (auto& list : by_first_byte_)
        std::stable_sort(list.begin(), list.end(),
                         [&](uint32_t a, uint32_t b) { return tokens_[a].content.size() > tokens_[b].content.size(); });
}

void AddedTokenMatcher::split(std::string_view text, const std::function<void(std::string_view)>& gap,
                              const std::function<void(int32_t)>& token) const {
    size_t emitted = 0;
    for (size_t i = 0; i < text.size();) {
        const auto& candidates = by_first_byte_[static_cast<unsigned char>(text[i])];
        const AddedToken* found = nullptr;
        for (const uint32_t c : candidates) {
            const AddedToken& t = tokens_[c];
            if (text.substr(i).starts_with(t.content)) {
                found = &t;
                break;
            }
        }
        if (!found) {
            ++i;
            continue;
        }
        if (i > emitted) gap(text.substr(emitted, i - emitted));
        token(found->id);
        i += found->content.size();
        emitted = i;
    }
    if (emitted < text.size()) gap(text.substr(emitted));
}

}  // namespace stormo::text
