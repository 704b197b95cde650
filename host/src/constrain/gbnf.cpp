#include "constrain/gbnf.hpp"

#include <cctype>
#include <optional>

#include "constrain/grammar_builder.hpp"
#include "constrain/utf8_ranges.hpp"
#include "util/utf8.hpp"

namespace stormo::constrain {
namespace {

// Repetition counts past this are refused: each one unrolls into a rule.
constexpr int kMaxRepeat = 10000;

bool is_name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_'; }

class GbnfParser {
public:
    explicit GbnfParser(std::string_view text) : src_(text) {}

    Expected<Grammar> parse() {
        skip_space(true);
        while (pos_ < src_.size()) {
            STORMO_TRY(parse_rule());
            skip_space(true);
        }
        return builder_.finish("root");
    }

private:
    std::string position(size_t at) const {
        size_t line = 1, column = 1;
        for (size_t i = 0; i < at && i < src_.size(); ++i) {
            if (src_[i] == '\n') ++line, column = 1;
            else ++column;
        }
        return "line " + std::to_string(line) + ", column " + std::to_string(column);
    }
    std::string where(size_t at) const { return "grammar " + position(at) + ": "; }
    tl::unexpected<Error> error(size_t at, const std::string& message) const {
        return fail(ErrorKind::invalid_argument, where(at) + message);
    }
    bool at_end() const { return pos_ >= src_.size(); }
    char peek() const { return at_end() ? '\0' : src_[pos_]; }

    void skip_space(bool newlines) {
        while (!at_end()) {
            const char c = src_[pos_];
            if (c == '#') {
                while (!at_end() && src_[pos_] != '\n') ++pos_;
            } else if (c == ' ' || c == '\t' || c == '\r' || (newlines && c == '\n')) {
                ++pos_;
            } else {
                break;
            }
        }
    }

    std::string read_name() {
        const size_t start = pos_;
        while (!at_end() && is_name_char(src_[pos_])) ++pos_;
        return std::string(src_.substr(start, pos_ - start));
    }

    Expected<void> parse_rule() {
        const size_t start = pos_;
        const std::string name = read_name();
        if (name.empty()) return error(pos_, "expected a rule name");
        skip_space(false);
        if (src_.substr(pos_, 3) != "::=") return error(pos_, "expected '::=' after rule name '" + name + "'");
        pos_ += 3;
        skip_space(true);
        const int32_t rule = builder_.named(name, where(start));
        STORMO_TRY_ASSIGN(auto alternatives, parse_alternates(name, false));
        if (!at_end() && peek() != '\n') return error(pos_, std::string("unexpected '") + peek() + "'");
        return builder_.define(rule, std::move(alternatives), where(start));
    }

    Expected<std::vector<ItemSequence>> parse_alternates(const std::string& rule, bool nested) {
        std::vector<ItemSequence> alternatives;
        STORMO_TRY_ASSIGN(ItemSequence first, parse_sequence(rule, nested));
        alternatives.push_back(std::move(first));
        while (peek() == '|') {
            ++pos_;
            skip_space(true);
            STORMO_TRY_ASSIGN(ItemSequence next, parse_sequence(rule, nested));
            alternatives.push_back(std::move(next));
        }
        return alternatives;
    }

    Expected<ItemSequence> parse_sequence(const std::string& rule, bool nested) {
        ItemSequence sequence;
        std::optional<size_t> atom_begin;  // where the last atom's items start, for a repetition
        for (;;) {
            skip_space(nested);
            const char c = peek();
            if (at_end() || c == '|' || c == ')' || c == '\n') return sequence;
            const size_t here = pos_;
            if (c == '"') {
                atom_begin = sequence.size();
                STORMO_TRY(parse_literal(sequence));
            } else if (c == '[') {
                atom_begin = sequence.size();
                STORMO_TRY_ASSIGN(auto ranges, parse_class());
                sequence.push_back(class_item(ranges, rule));
            } else if (c == '.') {
                ++pos_;
                atom_begin = sequence.size();
                sequence.push_back(class_item({{0, 0x10FFFF}}, rule));
            } else if (c == '(') {
                ++pos_;
                skip_space(true);
                STORMO_TRY_ASSIGN(auto alternatives, parse_alternates(rule, true));
                if (peek() != ')') return error(pos_, "expected ')' to close the group opened at " + position(here));
                ++pos_;
                const int32_t group = builder_.fresh(rule);
                STORMO_TRY(builder_.define(group, std::move(alternatives), where(here)));
                atom_begin = sequence.size();
                sequence.push_back(GrammarBuilder::ref(group));
            } else if (is_name_char(c)) {
                const std::string name = read_name();
                atom_begin = sequence.size();
                sequence.push_back(GrammarBuilder::ref(builder_.named(name, where(here))));
            } else if (c == '*' || c == '+' || c == '?' || c == '{') {
                if (!atom_begin) return error(pos_, std::string("'") + c + "' must follow something to repeat");
                STORMO_TRY_ASSIGN(auto bounds, parse_repetition());
                ItemSequence atom(sequence.begin() + static_cast<std::ptrdiff_t>(*atom_begin), sequence.end());
                sequence.resize(*atom_begin);
                for (const GrammarItem& item : builder_.repeat(std::move(atom), bounds.first, bounds.second, rule))
                    sequence.push_back(item);
                atom_begin.reset();
            } else {
                return error(pos_, std::string("unexpected '") + c + "'");
            }
        }
    }

    // *, +, ? or {m}, {m,}, {m,n}: (min, max), max -1 for no bound.
    Expected<std::pair<int, int>> parse_repetition() {
        const char c = src_[pos_++];
        if (c == '*') return std::pair{0, -1};
        if (c == '+') return std::pair{1, -1};
        if (c == '?') return std::pair{0, 1};
        const size_t open = pos_ - 1;
        skip_space(false);
        STORMO_TRY_ASSIGN(int min, parse_count());
        skip_space(false);
        int max = min;
        if (peek() == ',') {
            ++pos_;
            skip_space(false);
            if (peek() == '}') max = -1;
            else {
                STORMO_TRY_ASSIGN(max, parse_count());
            }
            skip_space(false);
        }
        if (peek() != '}') return error(pos_, "expected '}' to close the repetition");
        ++pos_;
        if (max >= 0 && max < min) return error(open, "repetition {m,n} needs m <= n");
        return std::pair{min, max};
    }

    Expected<int> parse_count() {
        const size_t start = pos_;
        long value = 0;
        while (!at_end() && std::isdigit(static_cast<unsigned char>(peek()))) {
            value = value * 10 + (src_[pos_++] - '0');
            if (value > kMaxRepeat) return error(start, "repetition count above " + std::to_string(kMaxRepeat));
        }
        if (pos_ == start) return error(pos_, "expected a number in the repetition");
        return static_cast<int>(value);
    }

    Expected<void> parse_literal(ItemSequence& out) {
        const size_t open = pos_++;
        while (peek() != '"') {
            if (at_end() || peek() == '\n') return error(open, "unterminated string literal");
            STORMO_TRY_ASSIGN(char32_t cp, parse_char());
            std::string bytes;
            text::utf8::append(bytes, cp);
            for (unsigned char b : bytes) {
                ByteSet one;
                one.set(b);
                out.push_back(builder_.bytes(one));
            }
        }
        ++pos_;
        return {};
    }

    Expected<std::vector<CodePointRange>> parse_class() {
        const size_t open = pos_++;
        const bool negated = peek() == '^';
        if (negated) ++pos_;
        std::vector<CodePointRange> ranges;
        while (peek() != ']') {
            if (at_end() || peek() == '\n') return error(open, "unterminated character class");
            STORMO_TRY_ASSIGN(char32_t first, parse_char());
            char32_t last = first;
            if (peek() == '-' && pos_ + 1 < src_.size() && src_[pos_ + 1] != ']') {
                ++pos_;
                const size_t at = pos_;
                STORMO_TRY_ASSIGN(last, parse_char());
                if (last < first) return error(at, "character range ends before it starts");
            }
            ranges.push_back({first, last});
        }
        ++pos_;
        return negated ? complement(std::move(ranges)) : ranges;
    }

    // One character of a literal or class: an escape or a UTF-8 character of the grammar text.
    Expected<char32_t> parse_char() {
        const size_t at = pos_;
        if (peek() != '\\') {
            const text::utf8::Step step = text::utf8::read(src_, pos_);
            if (!step.valid) return error(at, "the grammar is not valid UTF-8 here");
            pos_ += step.length;
            return step.cp;
        }
        ++pos_;
        if (at_end()) return error(at, "unfinished escape");
        const char e = src_[pos_++];
        switch (e) {
            case 'n': return U'\n';
            case 't': return U'\t';
            case 'r': return U'\r';
            case '\\': case '"': case '[': case ']': case '-': case '^': case '/': case '\'': return static_cast<char32_t>(e);
            case 'x': return parse_hex(2, at);
            case 'u': return parse_hex(4, at);
            case 'U': return parse_hex(8, at);
            default: return error(at, std::string("unknown escape '\\") + e + "'");
        }
    }

    Expected<char32_t> parse_hex(int digits, size_t at) {
        char32_t value = 0;
        for (int i = 0; i < digits; ++i) {
            const char c = peek();
            if (!std::isxdigit(static_cast<unsigned char>(c)))
                return error(at, "escape needs " + std::to_string(digits) + " hexadecimal digits");
            value = value * 16 + static_cast<char32_t>(std::isdigit(static_cast<unsigned char>(c)) ? c - '0' : (std::tolower(c) - 'a' + 10));
            ++pos_;
        }
        if (value > 0x10FFFF) return error(at, "escape beyond U+10FFFF");
        return value;
    }

    // A class as one item: a byte set when every character is one byte, else a rule whose
    // alternatives are the UTF-8 sequences.
    GrammarItem class_item(const std::vector<CodePointRange>& ranges, const std::string& rule) {
        const std::vector<ByteRangeSequence> sequences = utf8_sequences(ranges);
        ByteSet single;
        std::vector<ItemSequence> alternatives;
        for (const ByteRangeSequence& seq : sequences) {
            if (seq.size() == 1) {
                for (unsigned b = seq[0].first; b <= seq[0].second; ++b) single.set(b);
                continue;
            }
            ItemSequence items;
            for (auto [lo, hi] : seq) {
                ByteSet set;
                for (unsigned b = lo; b <= hi; ++b) set.set(b);
                items.push_back(builder_.bytes(set));
            }
            alternatives.push_back(std::move(items));
        }
        if (alternatives.empty()) return builder_.bytes(single);
        if (single.any()) alternatives.insert(alternatives.begin(), ItemSequence{builder_.bytes(single)});
        const int32_t r = builder_.fresh(rule);
        (void)builder_.define(r, std::move(alternatives), {});
        return GrammarBuilder::ref(r);
    }

    std::string_view src_;
    size_t pos_ = 0;
    GrammarBuilder builder_;
};

}  // namespace

Expected<Grammar> parse_gbnf(std::string_view text) { return GbnfParser(text).parse(); }

}  // namespace stormo::constrain
