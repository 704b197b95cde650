// A tokenizer from a GGUF file's metadata (llama.cpp's tokenizer.ggml.* keys): the vocabulary
// (tokens with their types), the merges, and the pre-tokenizer named by tokenizer.ggml.pre, which
// stands for the split regex and normalizer of the Hugging Face tokenizer.json the file was
// converted from. The result is the same TokenizerData a tokenizer.json gives, so it encodes and
// decodes exactly as that file would.
#include <array>

#include "model/gguf.hpp"
#include "stormo/quote.hpp"
#include "tokenizer/tokenizer_impl.hpp"

namespace stormo::text {
namespace {

// What a tokenizer.ggml.pre name stands for: the tokenizer.json pieces llama.cpp's converter
// recognised (by hashing the tokenizer's output) when it wrote that name. Copied from the
// tokenizer.json files of the models named.
struct PreTokenizerKind {
    std::string_view name;
    std::string_view split_regex;  // a Split (Isolated) before a ByteLevel without its own regex
    bool nfc = false;              // a NFC normalizer
    bool ignore_merges = false;    // BPE's ignore_merges: a word in the vocabulary is one token
    std::string_view models;       // whose tokenizer.json this is, for the docs and errors
};

constexpr std::array<PreTokenizerKind, 4> kPreTokenizers{{
    {"gpt-4o", kO200kPattern, false, true, "gpt-oss (o200k)"},
    {"qwen2", kQwen2Pattern, true, false, "Qwen2, Qwen3"},
    // GLM's split regex is Llama 3's; llama.cpp reads "glm4" and "chatglm-bpe" with it, no
    // normalizer, and the merges applied to in-vocabulary words.
    {"glm4", kLlama3Pattern, false, false, "GLM-4, GLM-4.5"},
    {"chatglm-bpe", kLlama3Pattern, false, false, "ChatGLM"},
}};

std::string known_pre_names() {
    std::string s;
    for (const auto& k : kPreTokenizers) s += (s.empty() ? "" : ", ") + std::string(k.name);
    return s;
}

Expected<const GgufValue*> required(const GgufHeader& h, std::string_view key, GgufValueType type, bool array) {
    const GgufValue* v = h.find(key);
    if (v == nullptr) return fail(ErrorKind::missing, h.path + ": key " + in_quotes(key) + " is missing (a tokenizer needs it)");
    const bool ok = array ? v->is_array() && v->element_type == type : v->type == type;
    if (!ok)
        return fail(ErrorKind::format, h.path + ": key " + in_quotes(key) + " must be " + (array ? "an array of " : "") +
                                           std::string(gguf_value_type_name(type)) + ", found " + v->type_name());
    return v;
}

}  // namespace

Expected<std::unique_ptr<TokenizerData>> load_tokenizer_gguf(const GgufHeader& h, const std::filesystem::path& file) {
    const std::string& path = h.path;

    STORMO_TRY_ASSIGN(const GgufValue* kind_v, required(h, "tokenizer.ggml.model", GgufValueType::string, false));
    const std::string_view kind = kind_v->text;
    if (kind == "none")
        return fail(ErrorKind::missing, path + ": the file holds no tokenizer (tokenizer.ggml.model is \"none\")");
    if (kind != "gpt2")
        return fail(ErrorKind::unsupported, path + ": tokenizer.ggml.model " + in_quotes(kind) +
                                                " is not supported (only \"gpt2\", byte-level BPE)");
    STORMO_TRY_ASSIGN(const GgufValue* pre_v, required(h, "tokenizer.ggml.pre", GgufValueType::string, false));
    const PreTokenizerKind* pre = nullptr;
    for (const auto& k : kPreTokenizers)
        if (k.name == pre_v->text) pre = &k;
    if (pre == nullptr)
        return fail(ErrorKind::unsupported, path + ": tokenizer.ggml.pre " + in_quotes(pre_v->text) +
                                                " is not supported (known: " + known_pre_names() + ")");
    STORMO_TRY_ASSIGN(const GgufValue* tokens, required(h, "tokenizer.ggml.tokens", GgufValueType::string, true));
    STORMO_TRY_ASSIGN(const GgufValue* types, required(h, "tokenizer.ggml.token_type", GgufValueType::i32, true));
    // A vocabulary without merges (a character-level one) has no merges key, as tokenizer.json
    // may have no "merges".
    const GgufValue* merges = nullptr;
    if (h.find("tokenizer.ggml.merges") != nullptr) {
        STORMO_TRY_ASSIGN(merges, required(h, "tokenizer.ggml.merges", GgufValueType::string, true));
    }
    if (types->count != tokens->count)
        return fail(ErrorKind::format, path + ": tokenizer.ggml.token_type has " + std::to_string(types->count) +
                                           " entries, tokenizer.ggml.tokens " + std::to_string(tokens->count));
    if (tokens->count > static_cast<uint64_t>(INT32_MAX))
        return fail(ErrorKind::format, path + ": tokenizer.ggml.tokens has more entries than token ids can number");

    auto impl = std::make_unique<TokenizerData>();
    impl->file = file;
    impl->normalizer.nfc = pre->nfc;
    const std::string where = path + ": tokenizer.ggml.pre " + in_quotes(pre->name);
    STORMO_TRY_ASSIGN(auto regex, SplitRegex::compile(pre->split_regex, where));
    PreTokenizerStep split;
    split.kind = PreTokenizerStep::Kind::split_regex;
    split.regex = std::make_shared<const SplitRegex>(std::move(regex));
    PreTokenizerStep bytes;
    bytes.kind = PreTokenizerStep::Kind::byte_level;  // no prefix space, no regex of its own
    impl->pre_tokenizer = PreTokenizer({std::move(split), std::move(bytes)});
    impl->decoder = DecoderKind::byte_level;

    // Normal tokens are the BPE vocabulary; control and user-defined ones are added tokens
    // (special or not), matched in the raw text before BPE as tokenizer.json's added_tokens are;
    // unused ones (the converter's [PAD] fillers up to the model's vocab_size) are no token.
    BpeConfig config;
    std::vector<AddedToken> added;
    for (uint64_t id = 0; id < tokens->count; ++id) {
        const std::string_view text = tokens->strings[id];
        const int64_t type = *types->int_at(id);
        const std::string token_where = path + ": tokenizer.ggml.tokens[" + std::to_string(id) + "]";
        switch (type) {
            case kGgufTokenNormal:
                if (text.empty()) return fail(ErrorKind::format, token_where + " is empty");
                if (config.id_to_token.size() <= id) config.id_to_token.resize(id + 1);
                config.id_to_token[id] = std::string(text);
                break;
            case kGgufTokenControl:
            case kGgufTokenUserDefined:
                if (text.empty()) return fail(ErrorKind::format, token_where + " is empty");
                added.push_back(AddedToken{static_cast<int32_t>(id), std::string(text), type == kGgufTokenControl, false});
                break;
            case kGgufTokenUnused: break;
            default:
                return fail(ErrorKind::unsupported, token_where + " " + quoted_printable(text) + " has token type " +
                                                        std::to_string(type) + " (byte-level BPE has normal, control, "
                                                        "user-defined and unused tokens)");
        }
    }
    // The unknown token stands for characters the vocabulary lacks; tokenizer.json keeps it in the
    // BPE vocabulary too (the converter types it as a control token), so it goes in both.
    if (const GgufValue* unk = h.find("tokenizer.ggml.unknown_token_id")) {
        const auto id = unk->as_uint();
        if (!id || *id >= tokens->count || tokens->strings[*id].empty())
            return fail(ErrorKind::format, path + ": tokenizer.ggml.unknown_token_id is not the id of a token in tokenizer.ggml.tokens");
        if (config.id_to_token.size() <= *id) config.id_to_token.resize(*id + 1);
        config.id_to_token[*id] = std::string(tokens->strings[*id]);
        config.unk_token = config.id_to_token[*id];
    }
    config.ignore_merges = pre->ignore_merges;
    const size_t n_merges = merges != nullptr ? merges->strings.size() : 0;
    config.merges.reserve(n_merges);
    for (size_t i = 0; i < n_merges; ++i) {
        const std::string_view m = merges->strings[i];
        const size_t space = m.find(' ');
        if (space == std::string_view::npos || m.find(' ', space + 1) != std::string_view::npos)
            return fail(ErrorKind::format, path + ": tokenizer.ggml.merges[" + std::to_string(i) +
                                               "] must be two tokens separated by one space");
        config.merges.emplace_back(m.substr(0, space), m.substr(space + 1));
    }
    STORMO_TRY_ASSIGN(impl->model, Bpe::build(std::move(config), path + ": tokenizer.ggml"));
    impl->size = impl->model.size();
    for (AddedToken& t : added) {
        impl->size = std::max(impl->size, static_cast<size_t>(t.id) + 1);
        impl->added_by_content.emplace(t.content, t.id);
        impl->added_by_id.emplace(t.id, t);
    }
    impl->raw_added = AddedTokenMatcher(std::move(added));
    return impl;
}

}  // namespace stormo::text
