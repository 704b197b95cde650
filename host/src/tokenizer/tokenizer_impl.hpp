#pragma once
// What a loaded tokenizer holds, made by the loader (tokenizer_json.cpp) and used by the encode
// and decode paths (tokenizer.cpp, where Tokenizer::Impl wraps it).
#include <filesystem>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "model/model_text.hpp"
#include "tokenizer/added_tokens.hpp"
#include "tokenizer/bpe.hpp"
#include "tokenizer/normalizer.hpp"
#include "tokenizer/pre_tokenizer.hpp"
#include "tokenizer/tokenizer.hpp"

namespace stormo::text {

enum class DecoderKind { none, byte_level };

struct TokenizerData {
    std::filesystem::path file;
    Normalizer normalizer;
    PreTokenizer pre_tokenizer;
    Bpe model;
    DecoderKind decoder = DecoderKind::none;
    // Matched in the raw text (normalized: false) and in each normalized gap (normalized: true).
    AddedTokenMatcher raw_added;
    AddedTokenMatcher normalized_added;
    // Added tokens by id and by content (they take precedence over the vocabulary).
    std::unordered_map<int32_t, AddedToken> added_by_id;
    std::unordered_map<std::string, int32_t> added_by_content;
    size_t size = 0;
};

// Checks a tokenizer.json as the model bundle read it (a file that could not be read is its error).
Expected<std::unique_ptr<TokenizerData>> load_tokenizer_json(const TextFile& file);
// The same from a tokenizer.json's path, read by read_tokenizer_files (model/model_text_files.hpp).
Expected<std::unique_ptr<TokenizerData>> load_tokenizer_json(const std::filesystem::path& file);
// Builds one from a GGUF model's tokenizer.ggml.* metadata (tokenizer_gguf.cpp); `file` names it.
Expected<std::unique_ptr<TokenizerData>> load_tokenizer_gguf(const GgufHeader& h, const std::filesystem::path& file);

}  // namespace stormo::text
