#pragma once
// Normalizers the tokenizer supports: none, or NFC (alone or as the steps of a Sequence).
#include <string>
#include <string_view>

namespace stormo::text {

struct Normalizer {
    bool nfc = false;
    // The text as the model sees it. Text that is not valid UTF-8 is left as it is.
    std::string apply(std::string_view text) const;
    bool identity() const { return !nfc; }
};

}  // namespace stormo::text
