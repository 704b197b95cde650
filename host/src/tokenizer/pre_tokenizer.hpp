#pragma once
// The pre-tokenizer: splits normalized text into the pieces BPE encodes one at a time. Supported
// steps (run in order, each on every piece the previous one produced): Split with a regex or a
// literal, behavior Isolated (every match is a piece, and so is the text between matches), and
// ByteLevel (optional prefix space, optional GPT-2 split regex, then bytes spelled in the
// byte-level alphabet). Regexes run on Oniguruma, the engine the reference library uses, so
// `\p{L}`, `(?i:...)` and `(?!\S)` mean exactly what they mean there.
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "stormo/error.hpp"

namespace stormo::text {

// A compiled Oniguruma regex (UTF-8, Ruby syntax as the reference's onig crate uses), searched
// repeatedly over one string without copying it.
class SplitRegex {
public:
    static Expected<SplitRegex> compile(std::string_view pattern, const std::string& where);
    SplitRegex(SplitRegex&&) noexcept;
    SplitRegex& operator=(SplitRegex&&) noexcept;
    ~SplitRegex();

    // Calls piece(begin, end) for every match and every stretch between matches, in order; empty
    // matches split nothing. A known pattern (split_known.hpp) is matched by hand in O(1) memory a
    // character, with Oniguruma's pieces; any other pattern, or text that is not valid UTF-8, by
    // Oniguruma (split_isolated_by_regex).
    void split_isolated(std::string_view text, const std::function<void(std::string_view)>& piece) const;
    // Oniguruma's search: the definition the known patterns' splitters are tested against. Its
    // backtracking stack takes about 32 bytes per character of one match.
    void split_isolated_by_regex(std::string_view text, const std::function<void(std::string_view)>& piece) const;
    bool known_pattern() const;

private:
    struct Impl;
    explicit SplitRegex(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

struct PreTokenizerStep {
    enum class Kind { split_regex, split_literal, byte_level } kind = Kind::split_regex;
    std::shared_ptr<const SplitRegex> regex;  // split_regex, and byte_level with use_regex
    std::string literal;                      // split_literal
    bool add_prefix_space = false;            // byte_level
};

class PreTokenizer {
public:
    PreTokenizer() = default;
    explicit PreTokenizer(std::vector<PreTokenizerStep> steps) : steps_(std::move(steps)) {}

    // Calls `word` with each final piece of `text`.
    void run(std::string_view text, const std::function<void(std::string_view)>& word) const;
    bool byte_level() const;

private:
    void run_from(size_t step, std::string_view text, const std::function<void(std::string_view)>& word) const;
    std::vector<PreTokenizerStep> steps_;
};

// GPT-2's split regex, which ByteLevel uses when use_regex is true.
inline constexpr std::string_view kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
// The split regexes of the other real tokenizers: Llama 3's (also GLM's: digits in groups of up
// to three), Qwen2's (digits one at a time) and o200k's (GPT-4o, GPT-OSS).
inline constexpr std::string_view kLlama3Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
inline constexpr std::string_view kQwen2Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
inline constexpr std::string_view kO200kPattern =
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

}  // namespace stormo::text
