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
#include "text/flat_tables.hpp"

namespace stormo::text {

struct BpeConfig {
    std::vector<std::string> id_to_token;  // the vocabulary by id (gaps are empty strings)
    // In rank order; the views point into the caller's parsed file, alive while build() runs.
    std::vector<std::pair<std::string_view, std::string_view>> merges;
    std::optional<std::string> unk_token;
    bool fuse_unk = false;
    bool ignore_merges = false;
};

// Per-call state of encoding (owned by the caller so the model itself stays immutable): the
// memoised encodings of the words seen (BPE dominates the time; natural text repeats its words)
// and the merge loop's buffers, reused from word to word instead of allocated each time.
struct BpeCache {
    // Transparent hashing: a word is looked up by view, without building a string.
    struct Hash {
        using is_transparent = void;
        size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
    };
    std::unordered_map<std::string, std::vector<int32_t>, Hash, std::equal_to<>> words;

    struct Candidate {
        int32_t rank, pos, new_id;
    };
    std::vector<int32_t> ids, prev, next;
    std::vector<uint32_t> lens;
    std::vector<Candidate> heap;
};

class Bpe {
public:
    Bpe() = default;
    Bpe(Bpe&&) noexcept = default;
    Bpe& operator=(Bpe&&) noexcept = default;
    Bpe(const Bpe&) = delete;
    Bpe& operator=(const Bpe&) = delete;

    // `where` prefixes errors (file and field). A merge naming a token the vocabulary lacks is an error.
    static Expected<Bpe> build(BpeConfig config, const std::string& where);

    // Appends the ids of one pre-tokenized word.
    void encode_word(std::string_view word, BpeCache& cache, std::vector<int32_t>& out) const;

    std::optional<int32_t> id(std::string_view token) const;
    // The token of an id; empty when the vocabulary has no such id.
    std::string_view token(int32_t id) const;
    size_t size() const { return id_to_token_.size(); }
    // The id unknown characters become, if any (without one they are dropped), and whether a run
    // of them becomes one.
    std::optional<int32_t> unk_id() const { return unk_id_; }
    bool fuse_unk() const { return fuse_unk_; }

private:
    // The word's characters as ids, unknown ones as unk (fused if asked) or dropped without unk.
    void initial_symbols(std::string_view word, std::vector<int32_t>& ids, std::vector<uint32_t>& lens) const;
    void merge(std::string_view word, BpeCache& scratch, std::vector<int32_t>& out) const;

    std::vector<std::string> id_to_token_;
    TokenIndex token_to_id_;  // refers to id_to_token_'s buffer: Bpe is moved, never copied
    MergeTable merges_;
    std::vector<int32_t> small_char_id_;  // ids of one-character tokens below U+0800 (-1: none)
    std::optional<int32_t> unk_id_;
    bool fuse_unk_ = false;
    bool ignore_merges_ = false;
};

}  // namespace stormo::text
