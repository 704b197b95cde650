// Encoding and decoding with a loaded tokenizer.json, in the reference's order: added tokens in
// the raw text, then per gap the normalizer, normalized added tokens, the pre-tokenizer and BPE.
#include "tokenizer/tokenizer.hpp"

#include <algorithm>

#include "model/model_text_files.hpp"
#include "stormo/quote.hpp"
#include "tokenizer/byte_level.hpp"
#include "tokenizer/tokenizer_impl.hpp"
#include "util/utf8.hpp"

namespace stormo::text {

struct Tokenizer::Impl {
    std::unique_ptr<TokenizerData> data;
};

Tokenizer::Tokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;
Tokenizer::~Tokenizer() = default;

Expected<std::unique_ptr<TokenizerData>> load_tokenizer_json(const std::filesystem::path& file) {
    return load_tokenizer_json(read_tokenizer_files(file.string()).tokenizer_json);
}

Expected<Tokenizer> Tokenizer::from_model_text(const ModelText& text) {
    // A GGUF model carries its tokenizer in its metadata.
    if (text.gguf != nullptr) {
        STORMO_TRY_ASSIGN(auto data, load_tokenizer_gguf(*text.gguf, text.path));
        return Tokenizer(std::make_unique<Impl>(Impl{std::move(data)}));
    }
    STORMO_TRY_ASSIGN(auto data, load_tokenizer_json(text.tokenizer_json));
    return Tokenizer(std::make_unique<Impl>(Impl{std::move(data)}));
}

Expected<Tokenizer> Tokenizer::load(const std::filesystem::path& path) {
    STORMO_TRY_ASSIGN(const ModelText text, read_model_text(path.string()));
    return from_model_text(text);
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool match_special) const {
    // The reference takes Rust strings, always valid UTF-8; other bytes are read as the lossy
    // text a caller would have to make of them (and the regex engine only ever sees UTF-8).
    std::string repaired;
    if (!utf8::is_valid(text)) {
        repaired = utf8::lossy(text);
        text = repaired;
    }
    const TokenizerData& t = *impl_->data;
    std::vector<int32_t> ids;
    BpeCache cache;
    const auto push_id = [&](int32_t id) { ids.push_back(id); };
    const auto encode_words = [&](std::string_view piece) {
        t.pre_tokenizer.run(piece, [&](std::string_view word) { t.model.encode_word(word, cache, ids); });
    };
    const auto encode_gap = [&](std::string_view gap) {
        if (t.normalizer.identity()) {
            encode_words(gap);
            return;
        }
        const std::string normalized = t.normalizer.apply(gap);
        if (t.normalized_added.empty() || !match_special)
            encode_words(normalized);
        else
            t.normalized_added.split(normalized, encode_words, push_id);
    };
    // Plain encoding (the references' ids_plain) reads every added token's text as ordinary
    // text, special or not: Qwen3's <think> (special: false) becomes '<', 'think', '>' there.
    if (match_special)
        t.raw_added.split(text, encode_gap, push_id);
    else
        encode_gap(text);
    return ids;
}

Expected<std::string> Tokenizer::token_bytes(int32_t id, bool skip_special) const {
    const TokenizerData& t = *impl_->data;
    if (id < 0 || static_cast<size_t>(id) >= t.size)
        return fail(ErrorKind::invalid_argument, "token id " + std::to_string(id) + " is out of range (the tokenizer has " +
                                                     std::to_string(t.size) + " ids)");
    std::string_view token;
    if (const auto it = t.added_by_id.find(id); it != t.added_by_id.end()) {
        if (skip_special && it->second.special) return std::string();
        token = it->second.content;
    } else {
        token = t.model.token(id);
        if (token.empty()) return fail(ErrorKind::invalid_argument, "token id " + std::to_string(id) + " has no token in " + t.file.string());
    }
    if (t.decoder == DecoderKind::byte_level) {
        // The reference keeps a token's own UTF-8 when a character of it is outside the alphabet.
        if (auto bytes = ByteLevelAlphabet::get().decode(token)) return std::move(*bytes);
    }
    return std::string(token);
}

Expected<std::string> Tokenizer::decode(std::span<const int32_t> ids, bool skip_special) const {
    std::string bytes;
    bool first = true;
    for (const int32_t id : ids) {
        STORMO_TRY_ASSIGN(auto piece, token_bytes(id, skip_special));
        if (skip_special && is_special(id)) continue;
        // Without a decoder the reference joins the tokens with spaces.
        if (impl_->data->decoder == DecoderKind::none && !first) bytes += ' ';
        bytes += piece;
        first = false;
    }
    return utf8::lossy(bytes);
}

std::optional<int32_t> Tokenizer::token_id(std::string_view token) const {
    if (const auto it = impl_->data->added_by_content.find(std::string(token)); it != impl_->data->added_by_content.end()) return it->second;
    return impl_->data->model.id(token);
}

bool Tokenizer::is_special(int32_t id) const {
    const auto it = impl_->data->added_by_id.find(id);
    return it != impl_->data->added_by_id.end() && it->second.special;
}

std::optional<size_t> Tokenizer::max_bytes_per_token() const {
    const TokenizerData& t = *impl_->data;
    const Bpe& model = t.model;
    if (model.unk_id() && model.fuse_unk()) return std::nullopt;
    if (!model.unk_id()) {
        // Without an unknown token a character outside the vocabulary is dropped, unless byte
        // level spells every byte as one of 256 characters that are all in it.
        if (!t.pre_tokenizer.byte_level()) return std::nullopt;
        for (int b = 0; b < 256; ++b)
            if (!model.id(ByteLevelAlphabet::get().utf8(static_cast<uint8_t>(b)))) return std::nullopt;
    }
    // A token's spelling is at least as long as the text it stands for (under byte level each
    // byte is one character of one or two bytes); an unknown one stands for one character.
    size_t longest = 4;
    for (size_t id = 0; id < model.size(); ++id) longest = std::max(longest, model.token(static_cast<int32_t>(id)).size());
    for (const auto& [id, token] : t.added_by_id) longest = std::max(longest, token.content.size());
    // NFC makes text shorter by at most a third: Hangul jamo L, V and T (9 bytes) compose into one
    // 3-byte syllable; other compositions shrink less.
    if (!t.normalizer.identity()) longest *= 3;
    return longest;
}

size_t Tokenizer::size() const { return impl_->data->size; }

Expected<void> Tokenizer::check_fits(size_t model_vocab) const {
    if (size() <= model_vocab) return {};
    const auto top = static_cast<int32_t>(size() - 1);
    STORMO_TRY_ASSIGN(const std::string text, token_bytes(top));
    return fail(ErrorKind::mismatch, file().string() + ": token " + in_quotes(utf8::lossy(text)) + " has id " + std::to_string(top) +
                                         ", beyond the model's vocabulary: the tokenizer has " + std::to_string(size()) +
                                         " ids, the model " + std::to_string(model_vocab));
}

Expected<void> Tokenizer::check_stop_ids(std::span<const int32_t> stop_ids) const {
    for (const int32_t id : stop_ids)
        if (!token_bytes(id))
            return fail(ErrorKind::mismatch, file().string() + ": the model's end-of-text id " + std::to_string(id) +
                                                 " (eos_token_id) has no token in this tokenizer");
    return {};
}

const std::filesystem::path& Tokenizer::file() const { return impl_->data->file; }

}  // namespace stormo::text
