#include "tokenizer/pre_tokenizer.hpp"

#include "tokenizer/byte_level.hpp"

namespace stormo::text {

namespace {

// Split with a literal pattern, behavior Isolated: each occurrence is a piece of its own.
void split_literal(std::string_view text, std::string_view literal, const std::function<void(std::string_view)>& piece) {
    size_t emitted = 0;
    if (!literal.empty()) {
        for (size_t at = text.find(literal); at != std::string_view::npos; at = text.find(literal, emitted)) {
            if (at > emitted) piece(text.substr(emitted, at - emitted));
            piece(text.substr(at, literal.size()));
            emitted = at + literal.size();
        }
    }
    if (emitted < text.size()) piece(text.substr(emitted));
}

}  // namespace

bool PreTokenizer::byte_level() const {
    for (const PreTokenizerStep& s : steps_)
        if (s.kind == PreTokenizerStep::Kind::byte_level) return true;
    return false;
}

void PreTokenizer::run(std::string_view text, const std::function<void(std::string_view)>& word) const {
    if (!text.empty()) run_from(0, text, word);
}

void PreTokenizer::run_from(size_t step, std::string_view text, const std::function<void(std::string_view)>& word) const {
    if (step == steps_.size()) {
        word(text);
        return;
    }
    const PreTokenizerStep& s = steps_[step];
    const auto next = [&](std::string_view piece) { run_from(step + 1, piece, word); };
    switch (s.kind) {
        case PreTokenizerStep::Kind::split_regex:
            s.regex->split_isolated(text, next);
            return;
        case PreTokenizerStep::Kind::split_literal:
            split_literal(text, s.literal, next);
            return;
        case PreTokenizerStep::Kind::byte_level: {
            // The reference adds the prefix space to every piece that does not start with one,
            // then splits with GPT-2's regex, then spells each piece's bytes in the alphabet.
            std::string prefixed;
            if (s.add_prefix_space && text.front() != ' ') {
                prefixed.reserve(text.size() + 1);
                prefixed += ' ';
                prefixed += text;
                text = prefixed;
            }
            const ByteLevelAlphabet& alphabet = ByteLevelAlphabet::get();
            std::string spelled;
            const auto spell = [&](std::string_view piece) {
                spelled.clear();
                alphabet.encode(piece, spelled);
                next(spelled);
            };
            if (s.regex)
                s.regex->split_isolated(text, spell);
            else
                spell(text);
            return;
        }
    }
}

}  // namespace stormo::text
