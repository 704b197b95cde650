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
#include "tokenizer/flat_tables.hpp"
#include "util/utf8.hpp"

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
    std::vector<int32_t> ids, prev, next;  // a merged-away symbol's id is -1
    std::vector<uint32_t> starts;          // each symbol's first byte in the word
    std::vector<Candidate> heap;
    // A longer word is encoded a window at a time, so its buffers stay this size (bpe.cpp says
    // why the ids are the same); tests make it small to cross many windows.
    size_t window_bytes = size_t{1} << 18;
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
    struct Frontier;
    // The word's characters as ids, unknown ones as unk (fused if asked) or dropped without unk.
    void initial_symbols(std::string_view word, std::vector<int32_t>& ids, std::vector<uint32_t>& starts) const;
    void merge(std::string_view word, BpeCache& scratch, std::vector<int32_t>& out) const;
    // Merges the symbols in `scratch` (all of them, or tracking `frontier` when given).
    void run_merges(BpeCache& scratch, Frontier* frontier) const;
    // Encodes the symbols of `word`'s first `window` bytes up to where the rest of the word could
    // change them; returns the bytes encoded (0 when the window settles nothing).
    size_t merge_settled(std::string_view word, size_t window, BpeCache& scratch, std::vector<int32_t>& out) const;
    void encode_long_word(std::string_view word, BpeCache& scratch, std::vector<int32_t>& out) const;
    // The id of the character at `at` (read as `st`), if the vocabulary has one.
    std::optional<int32_t> char_id(std::string_view word, size_t at, const utf8::Step& st) const;
    // Whether a symbol spelling `token_text` could begin `text`: its characters' tokens (an
    // unknown run's unk, nothing for a dropped one) begin with it.
    bool may_begin(std::string_view token_text, std::string_view text) const;
    // The lowest rank of a merge of `left` with a token that begins with `prefix` and could begin
    // `text` (INT32_MAX if none).
    int32_t lowest_merge_before(int32_t left, std::string_view prefix, std::string_view text) const;
    void index_right_merges(const std::vector<std::pair<int32_t, int32_t>>& pairs);

    std::vector<std::string> id_to_token_;
    TokenIndex token_to_id_;  // refers to id_to_token_'s buffer: Bpe is moved, never copied
    MergeTable merges_;
    std::vector<int32_t> small_char_id_;  // ids of one-character tokens below U+0800 (-1: none)
    std::optional<int32_t> unk_id_;
    bool fuse_unk_ = false;
    bool ignore_merges_ = false;
    // The merges each token is the left side of, by rank: those of token t are
    // right_merges_[right_merge_start_[t] .. right_merge_start_[t + 1]).
    struct RightMerge {
        int32_t rank, right;
    };
    std::vector<uint32_t> right_merge_start_;
    std::vector<RightMerge> right_merges_;
};

}  // namespace stormo::text
