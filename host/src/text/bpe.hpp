#pragma once
// The BPE model: a word's characters become vocabulary ids, then adjacent pairs merge by rank
// (lowest first, leftmost among equals) until no listed merge applies, as the reference does.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "stormo/error.hpp"

namespace stormo::text {

struct BpeConfig {
    std::vector<std::string> id_to_token;  // the vocabulary by id (gaps are empty strings)
    std::vector<std::pair<std::string, std::string>> merges;  // in rank order
    std::optional<std::string> unk_token;
    bool fuse_unk = false;
    bool ignore_merges = false;
};

// Memoised encodings of the words seen during one encode call (BPE dominates the time; natural
// text repeats its words). Owned by the caller so the model itself stays immutable.
struct BpeCache {
    // Transparent hashing: a word is looked up by view, without building a string.
    struct Hash {
        using is_transparent = void;
        size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
    };
    std::unordered_map<std::string, std::vector<int32_t>, Hash, std::equal_to<>> words;
};

class Bpe {
public:
    // `where` prefixes errors (file and field). A merge naming a token the vocabulary lacks is an error.
    static Expected<Bpe> build(BpeConfig config, const std::string& where);

    // Appends the ids of one pre-tokenized word.
    void encode_word(std::string_view word, BpeCache& cache, std::vector<int32_t>& out) const;

    std::optional<int32_t> id(std::string_view token) const;
    // The token of an id; empty when the vocabulary has no such id.
    std::string_view token(int32_t id) const;
    size_t size() const { return id_to_token_.size(); }

private:
    struct Merge {
        int32_t rank;
        int32_t new_id;
    };
    static uint64_t pair_key(int32_t a, int32_t b) {
        return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
    }
    // The word's characters as ids, unknown ones as unk (fused if asked) or dropped without unk.
    void initial_symbols(std::string_view word, std::vector<int32_t>& ids, std::vector<uint32_t>& lens) const;
    void merge(std::string_view word, std::vector<int32_t>& out) const;

    std::vector<std::string> id_to_token_;
    std::unordered_map<std::string_view, int32_t> token_to_id_;  // views into id_to_token_
    std::unordered_map<uint64_t, Merge> merges_;
    std::vector<int32_t> small_char_id_;  // ids of one-character tokens below U+0800 (-1: none)
    std::optional<int32_t> unk_id_;
    bool fuse_unk_ = false;
    bool ignore_merges_ = false;
};

}  // namespace stormo::text
