#include "tokenizer/split_known.hpp"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "tokenizer/onig_regex.hpp"
#include "tokenizer/pre_tokenizer.hpp"
#include "util/utf8.hpp"

namespace stormo::text {
namespace {

// Every alternative of these patterns starts with a character class that is a union of whole
// classes below; the search never skips a character (every character starts some alternative), and
// no alternative matches empty text.
enum Class : uint8_t {
    kLetter = 1,      // \p{L}
    kNumber = 2,      // \p{N}
    kSpace = 4,       // \s
    kUpper = 8,       // [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}] (o200k)
    kLower = 16,      // [\p{Ll}\p{Lm}\p{Lo}\p{M}] (o200k)
};

// Oniguruma's own answer for each class, so the classes are the reference engine's (its Unicode
// version, its \s) and not another table's.
class Classes {
public:
    Classes() {
        compile(R"(\p{L})", kLetter);
        compile(R"(\p{N})", kNumber);
        compile(R"(\s)", kSpace);
        compile(R"([\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}])", kUpper);
        compile(R"([\p{Ll}\p{Lm}\p{Lo}\p{M}])", kLower);
        for (char32_t cp = 0; cp < small_.size(); ++cp) small_[cp] = ask(cp);
    }
    bool ok() const { return ok_; }

    // `cache` holds the answers for characters past the table, one per split call (no shared state).
    uint8_t of(char32_t cp, std::unordered_map<char32_t, uint8_t>& cache) const {
        if (cp < small_.size()) return small_[cp];
        const auto it = cache.find(cp);
        if (it != cache.end()) return it->second;
        return cache.emplace(cp, ask(cp)).first->second;
    }

private:
    void compile(const char* pattern, uint8_t bit) {
        auto r = compile_onig(pattern);
        if (!r) {
            ok_ = false;
            return;
        }
        regexes_.push_back(std::move(*r));
        bits_.push_back(bit);
    }

    uint8_t ask(char32_t cp) const {
        std::string bytes;
        utf8::append(bytes, cp);
        const auto* b = reinterpret_cast<const OnigUChar*>(bytes.data());
        uint8_t flags = 0;
        for (size_t i = 0; i < regexes_.size(); ++i)
            if (onig_match(regexes_[i].get(), b, b + bytes.size(), b, nullptr, ONIG_OPTION_NONE) > 0) flags |= bits_[i];
        return flags;
    }

    std::vector<OnigRegex> regexes_;
    std::vector<uint8_t> bits_;
    std::array<uint8_t, 0x800> small_{};  // every one- and two-byte character
    bool ok_ = true;
};

// A contraction list ('s|'t|'re|'ve|'m|'ll|'d, case-insensitive or not), matched by Oniguruma at
// one position: the match is at most three characters, so its stack stays small, and Unicode case
// folding (U+017F folds to s) is Oniguruma's.
class Contractions {
public:
    explicit Contractions(bool case_insensitive) {
        auto r = compile_onig(case_insensitive ? "(?i:'s|'t|'re|'ve|'m|'ll|'d)" : "'s|'t|'re|'ve|'m|'ll|'d");
        if (r) regex_ = std::move(*r);
    }
    bool ok() const { return regex_ != nullptr; }

    // The bytes a contraction takes at `at`, or 0.
    size_t at(std::string_view text, size_t at) const {
        const auto* b = reinterpret_cast<const OnigUChar*>(text.data());
        const int n = onig_match(regex_.get(), b, b + text.size(), b + at, nullptr, ONIG_OPTION_NONE);
        return n > 0 ? static_cast<size_t>(n) : 0;
    }

private:
    OnigRegex regex_;
};

// The text being split, read a character at a time.
struct Cursor {
    std::string_view text;
    const Classes& classes;
    mutable std::unordered_map<char32_t, uint8_t> cache;

    bool at_end(size_t i) const { return i >= text.size(); }
    size_t next(size_t i) const { return i + utf8::read(text, i).length; }
    char32_t cp(size_t i) const { return utf8::read(text, i).cp; }
    uint8_t cls(size_t i) const { return classes.of(cp(i), cache); }
    bool is(size_t i, uint8_t c) const { return !at_end(i) && (cls(i) & c) != 0; }
    bool newline(size_t i) const { return !at_end(i) && (text[i] == '\r' || text[i] == '\n'); }
    // [^\r\n\p{L}\p{N}]
    bool prefix_char(size_t i) const { return !at_end(i) && !newline(i) && (cls(i) & (kLetter | kNumber)) == 0; }
    // [^\s\p{L}\p{N}]
    bool other(size_t i) const { return !at_end(i) && (cls(i) & (kLetter | kNumber | kSpace)) == 0; }
    // The end of the longest run from i whose characters satisfy `in`.
    template <class In>
    size_t run(size_t i, In in) const {
        while (!at_end(i) && in(i)) i = next(i);
        return i;
    }
    size_t run_of(size_t i, uint8_t c) const {
        return run(i, [&](size_t k) { return is(k, c); });
    }
};

using Match = std::optional<size_t>;  // the end of a match, when the alternative matches

// ` ?X+` with X a class: the space is tried first (greedy), and without it X+ must start at p.
template <class In>
Match spaced_run(const Cursor& c, size_t p, In in) {
    if (!c.at_end(p) && c.text[p] == ' ' && !c.at_end(p + 1) && in(p + 1)) return c.run(p + 1, in);
    if (!c.at_end(p) && in(p)) return c.run(p, in);
    return std::nullopt;
}

// `[^\r\n\p{L}\p{N}]?` then `body` from where that leaves: with the prefix character first
// (greedy), then without it.
template <class Body>
Match prefixed(const Cursor& c, size_t p, Body body) {
    if (c.prefix_char(p))
        if (const Match m = body(c.next(p))) return m;
    return body(p);
}

// `\s*[\r\n]+`: \s* takes the whole run of spaces and gives characters back until [\r\n]+ can
// start, i.e. at the run's last \r or \n; [\r\n]+ then takes that one (what follows it in the run
// is no \r or \n, and past the run nothing is a space).
Match spaces_then_newline(const Cursor& c, size_t p) {
    std::optional<size_t> last;
    size_t i = p;
    for (; c.is(i, kSpace); i = c.next(i))
        if (c.newline(i)) last = i;
    if (!last) return std::nullopt;
    return *last + 1;
}

// `\s+(?!\S)`: the run of spaces, at the end of the text; else the run but its last character
// (giving that one back makes the lookahead see a space), when the run has two or more.
Match spaces_not_before_non_space(const Cursor& c, size_t p) {
    if (!c.is(p, kSpace)) return std::nullopt;
    size_t last = p, i = c.next(p);
    for (; c.is(i, kSpace); i = c.next(i)) last = i;
    if (c.at_end(i)) return i;
    if (last == p) return std::nullopt;
    return last;
}

// `X+` for a class X (`\s+`, `\p{L}+`).
Match class_run(const Cursor& c, size_t p, uint8_t x) {
    if (!c.is(p, x)) return std::nullopt;
    return c.run_of(p, x);
}

// `\p{N}{1,max}`.
Match digits(const Cursor& c, size_t p, int max) {
    size_t i = p;
    for (int k = 0; k < max && c.is(i, kNumber); ++k) i = c.next(i);
    return i == p ? Match{} : Match{i};
}

// `X+T*` with T the characters of `trailer` (each a one-byte character).
template <class In>
Match spaced_run_then(const Cursor& c, size_t p, In in, std::string_view trailer) {
    const Match m = spaced_run(c, p, in);
    if (!m || trailer.empty()) return m;
    size_t i = *m;
    while (!c.at_end(i) && trailer.find(c.text[i]) != std::string_view::npos) ++i;
    return i;
}

// The search: at each position the first alternative that matches; every character starts one.
template <class Alternatives>
bool split_with(std::string_view text, const Classes& classes, Alternatives first_match,
                const std::function<void(std::string_view)>& piece) {
    if (!utf8::is_valid(text)) return false;
    Cursor c{text, classes, {}};
    size_t emitted = 0, p = 0;
    while (p < text.size()) {
        const Match m = first_match(c, p);
        if (!m || *m <= p) {  // no alternative starts here: the search moves on a character
            p = c.next(p);
            continue;
        }
        if (p > emitted) piece(text.substr(emitted, p - emitted));
        piece(text.substr(p, *m - p));
        emitted = p = *m;
    }
    if (emitted < text.size()) piece(text.substr(emitted));
    return true;
}

const Classes& classes() {
    static const Classes c;  // immutable once built
    return c;
}

// GPT-2's: 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
class Gpt2 final : public KnownSplitter {
public:
    Gpt2() : contractions_(false) {}
    bool usable() const { return contractions_.ok() && classes().ok(); }
    bool split(std::string_view text, const std::function<void(std::string_view)>& piece) const override {
        return split_with(text, classes(), [this](const Cursor& c, size_t p) -> Match {
            if (const size_t n = contractions_.at(c.text, p)) return p + n;
            if (Match m = spaced_run(c, p, [&](size_t k) { return c.is(k, kLetter); })) return m;
            if (Match m = spaced_run(c, p, [&](size_t k) { return c.is(k, kNumber); })) return m;
            if (Match m = spaced_run(c, p, [&](size_t k) { return c.other(k); })) return m;
            if (Match m = spaces_not_before_non_space(c, p)) return m;
            return class_run(c, p, kSpace);
        }, piece);
    }

private:
    Contractions contractions_;
};

// Llama 3's and GLM's (digits up to 3) and Qwen2's (digits one at a time):
// (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,D}| ?[^\s\p{L}\p{N}]+[\r\n]*|
// \s*[\r\n]+|\s+(?!\S)|\s+
class Llama final : public KnownSplitter {
public:
    explicit Llama(int max_digits) : contractions_(true), max_digits_(max_digits) {}
    bool usable() const { return contractions_.ok() && classes().ok(); }
    bool split(std::string_view text, const std::function<void(std::string_view)>& piece) const override {
        return split_with(text, classes(), [this](const Cursor& c, size_t p) -> Match {
            if (const size_t n = contractions_.at(c.text, p)) return p + n;
            if (Match m = prefixed(c, p, [&](size_t q) { return class_run(c, q, kLetter); })) return m;
            if (Match m = digits(c, p, max_digits_)) return m;
            if (Match m = spaced_run_then(c, p, [&](size_t k) { return c.other(k); }, "\r\n")) return m;
            if (Match m = spaces_then_newline(c, p)) return m;
            if (Match m = spaces_not_before_non_space(c, p)) return m;
            return class_run(c, p, kSpace);
        }, piece);
    }

private:
    Contractions contractions_;
    int max_digits_;
};

// o200k's (GPT-4o, GPT-OSS), with U = [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}], W = [\p{Ll}\p{Lm}\p{Lo}\p{M}]
// and C = (?i:'s|'t|'re|'ve|'m|'ll|'d):
// [^\r\n\p{L}\p{N}]?U*W+C?|[^\r\n\p{L}\p{N}]?U+W*C?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|
// \s+(?!\S)|\s+
class O200k final : public KnownSplitter {
public:
    O200k() : contractions_(true) {}
    bool usable() const { return contractions_.ok() && classes().ok(); }
    bool split(std::string_view text, const std::function<void(std::string_view)>& piece) const override {
        return split_with(text, classes(), [this](const Cursor& c, size_t p) -> Match {
            if (Match m = prefixed(c, p, [&](size_t q) { return upper_then_lower_plus(c, q); })) return m;
            if (Match m = prefixed(c, p, [&](size_t q) { return upper_plus_then_lower(c, q); })) return m;
            if (Match m = digits(c, p, 3)) return m;
            if (Match m = spaced_run_then(c, p, [&](size_t k) { return c.other(k); }, "\r\n/")) return m;
            if (Match m = spaces_then_newline(c, p)) return m;
            if (Match m = spaces_not_before_non_space(c, p)) return m;
            return class_run(c, p, kSpace);
        }, piece);
    }

private:
    size_t with_contraction(const Cursor& c, size_t at) const { return at + contractions_.at(c.text, at); }

    // U*W+C? from q. U* takes its whole run; when W+ can start right after it (a W that is not U),
    // W+ takes its run. Otherwise U* gives characters back, last first, until W+ can start: at the
    // run's last character that is also W, where W+ then takes that one alone (after it the run
    // holds no W, and the character after the run is no W either). No W in the run: no match.
    Match upper_then_lower_plus(const Cursor& c, size_t q) const {
        std::optional<size_t> last_lower;
        size_t i = q;
        for (; c.is(i, kUpper); i = c.next(i))
            if (c.is(i, kLower)) last_lower = i;
        if (c.is(i, kLower)) return with_contraction(c, c.run_of(i, kLower));
        if (!last_lower) return std::nullopt;
        return with_contraction(c, c.next(*last_lower));
    }

    // U+W*C? from q: nothing gives back (W* and C? always succeed).
    Match upper_plus_then_lower(const Cursor& c, size_t q) const {
        const Match upper = class_run(c, q, kUpper);
        if (!upper) return std::nullopt;
        return with_contraction(c, c.run_of(*upper, kLower));
    }

    Contractions contractions_;
};

template <class S, class... Args>
std::unique_ptr<KnownSplitter> if_usable(Args... args) {
    auto s = std::make_unique<S>(args...);
    if (!s->usable()) return nullptr;
    return s;
}

}  // namespace

KnownSplitter::~KnownSplitter() = default;

std::unique_ptr<KnownSplitter> KnownSplitter::recognize(std::string_view pattern) {
    if (pattern == kGpt2Pattern) return if_usable<Gpt2>();
    if (pattern == kLlama3Pattern) return if_usable<Llama>(3);
    if (pattern == kQwen2Pattern) return if_usable<Llama>(1);
    if (pattern == kO200kPattern) return if_usable<O200k>();
    return nullptr;
}

}  // namespace stormo::text
