#pragma once
// A Hugging Face tokenizer.json (byte-level BPE as GPT-OSS's o200k_harmony, Qwen3's and the demo
// models' character-level files use), encoding and decoding exactly as the `tokenizers` library
// does: normalizer, added and special tokens matched before the model, the pre-tokenizer's split
// regexes (Oniguruma, the reference's engine), BPE with merges and ignore_merges, the decoders.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "model/model_text.hpp"
#include "stormo/error.hpp"

namespace stormo::text {

class Tokenizer {
public:
    // From what an opened model hands over (model/model_bundle.hpp): its tokenizer.json, or a GGUF
    // model's tokenizer.ggml.* metadata. A missing file, malformed JSON or a component this
    // implementation lacks is an error naming file and field.
    static Expected<Tokenizer> from_model_text(const ModelText& text);
    // `path` is a tokenizer.json, a directory holding one (a model directory), or a GGUF model
    // (recognised by its content), read through read_model_text (model/model_text_files.hpp).
    static Expected<Tokenizer> load(const std::filesystem::path& path);
    Tokenizer(Tokenizer&&) noexcept;
    Tokenizer& operator=(Tokenizer&&) noexcept;
    ~Tokenizer();

    // match_special: added tokens are matched in the text (the contract's default); false encodes
    // the text of every added token, special or not, as ordinary text (`tokenize --plain`), as the
    // references' ids_plain do.
    std::vector<int32_t> encode(std::string_view text, bool match_special = true) const;
    // The exact text of `ids`; an id outside the vocabulary is an error naming it.
    Expected<std::string> decode(std::span<const int32_t> ids, bool skip_special = false) const;
    // The bytes one id stands for (for streaming): no decoder clean-ups that span tokens.
    Expected<std::string> token_bytes(int32_t id, bool skip_special = false) const;

    // The id of a token's text (vocabulary or added token), if any.
    std::optional<int32_t> token_id(std::string_view token) const;
    bool is_special(int32_t id) const;
    // The most bytes of text one token can stand for, so a text of N bytes encodes to at least
    // N / max tokens (a server refuses a prompt by its length so). Nothing when no such bound
    // holds: characters outside the vocabulary are dropped, or a run of them is one unknown token.
    std::optional<size_t> max_bytes_per_token() const;
    // One past the largest id the tokenizer knows.
    size_t size() const;
    // Refuses a tokenizer with ids the model has no embedding row for, naming the highest such
    // token and both sizes (the reference would index past the embedding with it).
    Expected<void> check_fits(size_t model_vocab) const;
    // Refuses an id generation stops at (eos_token_id) that no token of the tokenizer stands for:
    // an answer would end on it and fail to decode only then.
    Expected<void> check_stop_ids(std::span<const int32_t> stop_ids) const;
    const std::filesystem::path& file() const;

private:
    struct Impl;
    explicit Tokenizer(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

// Turns generated ids into text as they come: bytes that end inside a UTF-8 sequence are held
// back until the sequence completes, so every piece printed is whole characters.
class StreamDecoder {
public:
    explicit StreamDecoder(const Tokenizer& tokenizer, bool skip_special = false);
    // The text that became complete with this id (possibly empty; none for an id past the
    // tokenizer's, a padding row of the model's vocabulary). A negative id is an error.
    Expected<std::string> push(int32_t id);
    // Whatever is still held back (an incomplete sequence at the very end), as the reference
    // decoder would render it.
    std::string finish();

private:
    const Tokenizer* tokenizer_;
    bool skip_special_;
    std::string pending_;
};

}  // namespace stormo::text
