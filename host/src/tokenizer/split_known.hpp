#pragma once
// The split regexes real tokenizers use (GPT-2's, Llama 3's and GLM's, Qwen2's, o200k's), matched
// by hand with O(1) state a character instead of Oniguruma's backtracking stack, which holds about
// 32 bytes per character of one match (a 100 MB word took 3.4 GB). Same pieces as Oniguruma's
// leftmost-first search, bit for bit: the character classes and the case-insensitive contractions
// are asked of Oniguruma itself, and each alternative follows the order in which a backtracking
// engine tries its choices (derivations in split_known.cpp). Tested against Oniguruma on the
// references and on random text over every class (tests/unit/test_split_known.cpp).
#include <functional>
#include <memory>
#include <string_view>

namespace stormo::text {

class KnownSplitter {
public:
    // A splitter for `pattern` when it is one of the known ones, else nullptr.
    static std::unique_ptr<KnownSplitter> recognize(std::string_view pattern);
    virtual ~KnownSplitter();
    // Every match, in order, as piece(match); false (nothing called) when the text is not valid
    // UTF-8, where the caller falls back to Oniguruma.
    virtual bool split(std::string_view text, const std::function<void(std::string_view)>& piece) const = 0;
};

}  // namespace stormo::text
