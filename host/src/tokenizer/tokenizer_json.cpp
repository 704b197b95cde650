// Loading a tokenizer.json: the text the model bundle read (with a size cap), parsed with
// simdjson (a 27 MB file parses in tens of milliseconds), each component checked against what this
// implementation supports. Every error names the file and the field path.
#include <simdjson.h>

#include <algorithm>

#include "stormo/quote.hpp"
#include "tokenizer/tokenizer_impl.hpp"

namespace stormo::text {

namespace {

namespace dom = simdjson::dom;

// Field access that reports "<file>: <path>: <what>".
class Reader {
public:
    explicit Reader(std::string file) : file_(std::move(file)) {}

    tl::unexpected<Error> error(ErrorKind kind, const std::string& path, const std::string& what) const {
        return fail(kind, file_ + ": " + path + ": " + what);
    }
    const std::string& file() const { return file_; }

    Expected<dom::object> object(dom::element e, const std::string& path) const {
        dom::object o;
        if (e.get(o) != simdjson::SUCCESS) return error(ErrorKind::format, path, "expected an object");
        return o;
    }
    Expected<dom::array> array(dom::element e, const std::string& path) const {
        dom::array a;
        if (e.get(a) != simdjson::SUCCESS) return error(ErrorKind::format, path, "expected an array");
        return a;
    }
    Expected<std::string_view> string(dom::element e, const std::string& path) const {
        std::string_view s;
        if (e.get(s) != simdjson::SUCCESS) return error(ErrorKind::format, path, "expected a string");
        return s;
    }
    // A field that may be absent or null.
    static std::optional<dom::element> optional(dom::object o, std::string_view key) {
        dom::element e;
        if (o.at_key(key).get(e) != simdjson::SUCCESS || e.is_null()) return std::nullopt;
        return e;
    }
    Expected<dom::element> required(dom::object o, std::string_view key, const std::string& path) const {
        dom::element e;
        if (o.at_key(key).get(e) != simdjson::SUCCESS)
            return error(ErrorKind::format, path.empty() ? std::string(key) : path + "." + std::string(key), "missing");
        return e;
    }
    Expected<bool> boolean(dom::object o, std::string_view key, bool fallback, const std::string& path) const {
        const auto e = optional(o, key);
        if (!e) return fallback;
        bool b = false;
        if (e->get(b) != simdjson::SUCCESS) return error(ErrorKind::format, path + "." + std::string(key), "expected true or false");
        return b;
    }
    Expected<std::optional<std::string>> optional_string(dom::object o, std::string_view key, const std::string& path) const {
        const auto e = optional(o, key);
        if (!e) return std::optional<std::string>();
        STORMO_TRY_ASSIGN(auto s, string(*e, path + "." + std::string(key)));
        return std::optional<std::string>(std::string(s));
    }
    Expected<int64_t> integer(dom::element e, const std::string& path) const {
        int64_t v = 0;
        if (e.get(v) != simdjson::SUCCESS) return error(ErrorKind::format, path, "expected an integer");
        return v;
    }
    // The "type" of a component.
    Expected<std::string_view> type(dom::object o, const std::string& path) const {
        STORMO_TRY_ASSIGN(auto e, required(o, "type", path));
        return string(e, path + ".type");
    }

private:
    std::string file_;
};

Expected<int32_t> token_id_value(const Reader& r, dom::element e, const std::string& path) {
    STORMO_TRY_ASSIGN(const int64_t v, r.integer(e, path));
    if (v < 0 || v > INT32_MAX) return r.error(ErrorKind::format, path, "id " + std::to_string(v) + " is out of range");
    return static_cast<int32_t>(v);
}

Expected<void> read_normalizer(const Reader& r, dom::element e, const std::string& path, Normalizer& out) {
    STORMO_TRY_ASSIGN(auto o, r.object(e, path));
    STORMO_TRY_ASSIGN(auto type, r.type(o, path));
    if (type == "NFC") {
        out.nfc = true;
        return {};
    }
    if (type == "Sequence") {
        STORMO_TRY_ASSIGN(auto list_el, r.required(o, "normalizers", path));
        STORMO_TRY_ASSIGN(auto list, r.array(list_el, path + ".normalizers"));
        size_t i = 0;
        for (dom::element step : list) STORMO_TRY(read_normalizer(r, step, path + ".normalizers[" + std::to_string(i++) + "]", out));
        return {};
    }
    return r.error(ErrorKind::unsupported, path + ".type", "normalizer '" + std::string(type) + "' is not supported (only NFC)");
}

Expected<void> read_pre_tokenizer(const Reader& r, dom::element e, const std::string& path, std::vector<PreTokenizerStep>& out) {
    STORMO_TRY_ASSIGN(auto o, r.object(e, path));
    STORMO_TRY_ASSIGN(auto type, r.type(o, path));
    if (type == "Sequence") {
        STORMO_TRY_ASSIGN(auto list_el, r.required(o, "pretokenizers", path));
        STORMO_TRY_ASSIGN(auto list, r.array(list_el, path + ".pretokenizers"));
        size_t i = 0;
        for (dom::element step : list) STORMO_TRY(read_pre_tokenizer(r, step, path + ".pretokenizers[" + std::to_string(i++) + "]", out));
        return {};
    }
    PreTokenizerStep step;
    if (type == "ByteLevel") {
        step.kind = PreTokenizerStep::Kind::byte_level;
        STORMO_TRY_ASSIGN(step.add_prefix_space, r.boolean(o, "add_prefix_space", true, path));
        STORMO_TRY_ASSIGN(const bool use_regex, r.boolean(o, "use_regex", true, path));
        if (use_regex) {
            STORMO_TRY_ASSIGN(auto regex, SplitRegex::compile(kGpt2Pattern, r.file() + ": " + path));
            step.regex = std::make_shared<const SplitRegex>(std::move(regex));
        }
        out.push_back(std::move(step));
        return {};
    }
    if (type == "Split") {
        STORMO_TRY_ASSIGN(auto behavior_el, r.required(o, "behavior", path));
        STORMO_TRY_ASSIGN(auto behavior, r.string(behavior_el, path + ".behavior"));
        if (behavior != "Isolated")
            return r.error(ErrorKind::unsupported, path + ".behavior", "Split behavior '" + std::string(behavior) + "' is not supported (only Isolated)");
        STORMO_TRY_ASSIGN(const bool invert, r.boolean(o, "invert", false, path));
        if (invert) return r.error(ErrorKind::unsupported, path + ".invert", "inverted Split is not supported");
        STORMO_TRY_ASSIGN(auto pattern_el, r.required(o, "pattern", path));
        STORMO_TRY_ASSIGN(auto pattern, r.object(pattern_el, path + ".pattern"));
        if (const auto regex = Reader::optional(pattern, "Regex")) {
            STORMO_TRY_ASSIGN(auto text, r.string(*regex, path + ".pattern.Regex"));
            STORMO_TRY_ASSIGN(auto compiled, SplitRegex::compile(text, r.file() + ": " + path + ".pattern.Regex"));
            step.kind = PreTokenizerStep::Kind::split_regex;
            step.regex = std::make_shared<const SplitRegex>(std::move(compiled));
        } else if (const auto literal = Reader::optional(pattern, "String")) {
            STORMO_TRY_ASSIGN(auto text, r.string(*literal, path + ".pattern.String"));
            step.kind = PreTokenizerStep::Kind::split_literal;
            step.literal = std::string(text);
        } else {
            return r.error(ErrorKind::format, path + ".pattern", "expected {\"Regex\": ...} or {\"String\": ...}");
        }
        out.push_back(std::move(step));
        return {};
    }
    return r.error(ErrorKind::unsupported, path + ".type",
                   "pre-tokenizer '" + std::string(type) + "' is not supported (only Sequence, Split, ByteLevel)");
}

// Post-processors only add special tokens around an encoding; encode() never adds them (the
// references were made without), so the ones that change nothing else are accepted.
Expected<void> check_post_processor(const Reader& r, dom::element e, const std::string& path) {
    STORMO_TRY_ASSIGN(auto o, r.object(e, path));
    STORMO_TRY_ASSIGN(auto type, r.type(o, path));
    if (type == "ByteLevel" || type == "TemplateProcessing") return {};
    if (type == "Sequence") {
        STORMO_TRY_ASSIGN(auto list_el, r.required(o, "processors", path));
        STORMO_TRY_ASSIGN(auto list, r.array(list_el, path + ".processors"));
        size_t i = 0;
        for (dom::element step : list) STORMO_TRY(check_post_processor(r, step, path + ".processors[" + std::to_string(i++) + "]"));
        return {};
    }
    return r.error(ErrorKind::unsupported, path + ".type",
                   "post-processor '" + std::string(type) + "' is not supported (only ByteLevel, TemplateProcessing)");
}

Expected<DecoderKind> read_decoder(const Reader& r, dom::element e, const std::string& path) {
    STORMO_TRY_ASSIGN(auto o, r.object(e, path));
    STORMO_TRY_ASSIGN(auto type, r.type(o, path));
    if (type == "ByteLevel") return DecoderKind::byte_level;
    return r.error(ErrorKind::unsupported, path + ".type", "decoder '" + std::string(type) + "' is not supported (only ByteLevel)");
}

Expected<std::vector<AddedToken>> read_added_tokens(const Reader& r, dom::element e) {
    STORMO_TRY_ASSIGN(auto list, r.array(e, "added_tokens"));
    std::vector<AddedToken> tokens;
    size_t i = 0;
    for (dom::element item : list) {
        const std::string path = "added_tokens[" + std::to_string(i++) + "]";
        STORMO_TRY_ASSIGN(auto o, r.object(item, path));
        AddedToken t;
        STORMO_TRY_ASSIGN(auto id_el, r.required(o, "id", path));
        STORMO_TRY_ASSIGN(t.id, token_id_value(r, id_el, path + ".id"));
        STORMO_TRY_ASSIGN(auto content_el, r.required(o, "content", path));
        STORMO_TRY_ASSIGN(auto content, r.string(content_el, path + ".content"));
        if (content.empty()) return r.error(ErrorKind::format, path + ".content", "an added token cannot be empty");
        t.content = std::string(content);
        STORMO_TRY_ASSIGN(t.special, r.boolean(o, "special", false, path));
        STORMO_TRY_ASSIGN(t.normalized, r.boolean(o, "normalized", !t.special, path));
        for (const char* flag : {"lstrip", "rstrip", "single_word"}) {
            STORMO_TRY_ASSIGN(const bool set, r.boolean(o, flag, false, path));
            if (set) return r.error(ErrorKind::unsupported, path + "." + flag, std::string(flag) + " added tokens are not supported");
        }
        tokens.push_back(std::move(t));
    }
    return tokens;
}

// Merges come as "a b" strings (older files) or ["a", "b"] pairs (newer ones). The views point
// into the parsed document.
Expected<std::vector<std::pair<std::string_view, std::string_view>>> read_merges(const Reader& r, dom::element e,
                                                                                  const std::string& path) {
    STORMO_TRY_ASSIGN(auto list, r.array(e, path));
    std::vector<std::pair<std::string_view, std::string_view>> merges;
    merges.reserve(list.size());
    size_t i = 0;
    for (dom::element item : list) {
        std::string_view s, a, b;
        dom::array pair;
        if (item.get(s) == simdjson::SUCCESS) {
            const size_t space = s.find(' ');
            if (space == std::string_view::npos || s.find(' ', space + 1) != std::string_view::npos)
                return r.error(ErrorKind::format, path + "[" + std::to_string(i) + "]", "a merge must be two tokens separated by one space");
            a = s.substr(0, space), b = s.substr(space + 1);
        } else if (item.get(pair) != simdjson::SUCCESS || pair.size() != 2 || pair.at(0).get(a) != simdjson::SUCCESS ||
                   pair.at(1).get(b) != simdjson::SUCCESS) {
            return r.error(ErrorKind::format, path + "[" + std::to_string(i) + "]", "expected \"a b\" or [\"a\", \"b\"]");
        }
        merges.emplace_back(a, b);
        ++i;
    }
    return merges;
}

Expected<Bpe> read_model(const Reader& r, dom::element e) {
    const std::string path = "model";
    STORMO_TRY_ASSIGN(auto o, r.object(e, path));
    if (const auto type = Reader::optional(o, "type")) {
        STORMO_TRY_ASSIGN(auto name, r.string(*type, path + ".type"));
        if (name != "BPE") return r.error(ErrorKind::unsupported, path + ".type", "model '" + std::string(name) + "' is not supported (only BPE)");
    }
    if (const auto dropout_el = Reader::optional(o, "dropout")) {
        double dropout = 0;
        if (dropout_el->get(dropout) != simdjson::SUCCESS || dropout != 0.0)
            return r.error(ErrorKind::unsupported, path + ".dropout", "BPE dropout is not supported");
    }
    STORMO_TRY_ASSIGN(const bool byte_fallback, r.boolean(o, "byte_fallback", false, path));
    if (byte_fallback) return r.error(ErrorKind::unsupported, path + ".byte_fallback", "byte fallback (<0xNN> tokens) is not supported");
    for (const char* affix : {"continuing_subword_prefix", "end_of_word_suffix"}) {
        STORMO_TRY_ASSIGN(auto value, r.optional_string(o, affix, path));
        if (value && !value->empty())
            return r.error(ErrorKind::unsupported, path + "." + affix, "'" + *value + "' is not supported (only null or empty)");
    }
    BpeConfig config;
    STORMO_TRY_ASSIGN(config.unk_token, r.optional_string(o, "unk_token", path));
    STORMO_TRY_ASSIGN(config.fuse_unk, r.boolean(o, "fuse_unk", false, path));
    STORMO_TRY_ASSIGN(config.ignore_merges, r.boolean(o, "ignore_merges", false, path));

    STORMO_TRY_ASSIGN(auto vocab_el, r.required(o, "vocab", path));
    STORMO_TRY_ASSIGN(auto vocab, r.object(vocab_el, path + ".vocab"));
    config.id_to_token.reserve(vocab.size());
    std::vector<bool> given;  // ids a token of the vocabulary already took
    for (auto [key, value] : vocab) {
        int64_t id = -1;
        const std::string where = path + ".vocab[" + in_quotes(key) + "]";
        if (value.get(id) != simdjson::SUCCESS || id < 0 || id > INT32_MAX)
            return r.error(ErrorKind::format, where, "expected an id (a non-negative integer)");
        const auto at = static_cast<size_t>(id);
        if (at >= config.id_to_token.size()) {
            config.id_to_token.resize(at + 1);
            given.resize(at + 1, false);
        }
        // Two tokens on one id: one of them could never be decoded, and text would come out wrong.
        if (given[at])
            return r.error(ErrorKind::format, where, "id " + std::to_string(id) + " is already the id of " +
                                                         in_quotes(config.id_to_token[at]));
        given[at] = true;
        config.id_to_token[at] = std::string(key);
    }
    if (const auto merges_el = Reader::optional(o, "merges")) {
        STORMO_TRY_ASSIGN(config.merges, read_merges(r, *merges_el, path + ".merges"));
    }
    return Bpe::build(std::move(config), r.file() + ": " + path);
}

// The reference reads the top level into a struct, whose deserializer refuses a field given
// twice (simdjson would quietly take the first).
Expected<void> refuse_duplicate_keys(const Reader& r, dom::object root) {
    std::vector<std::string_view> seen;
    for (auto [key, value] : root) {
        if (std::find(seen.begin(), seen.end(), key) != seen.end())
            return r.error(ErrorKind::format, std::string(key), "given twice at the top level");
        seen.push_back(key);
    }
    return {};
}

Expected<std::unique_ptr<TokenizerData>> build(const Reader& r, dom::object root) {
    STORMO_TRY(refuse_duplicate_keys(r, root));
    auto impl = std::make_unique<TokenizerData>();
    for (const char* unsupported : {"truncation", "padding"})
        if (Reader::optional(root, unsupported)) return r.error(ErrorKind::unsupported, unsupported, "must be null (not supported)");
    if (const auto e = Reader::optional(root, "normalizer")) STORMO_TRY(read_normalizer(r, *e, "normalizer", impl->normalizer));
    if (const auto e = Reader::optional(root, "pre_tokenizer")) {
        std::vector<PreTokenizerStep> steps;
        STORMO_TRY(read_pre_tokenizer(r, *e, "pre_tokenizer", steps));
        impl->pre_tokenizer = PreTokenizer(std::move(steps));
    }
    if (const auto e = Reader::optional(root, "post_processor")) STORMO_TRY(check_post_processor(r, *e, "post_processor"));
    if (const auto e = Reader::optional(root, "decoder")) {
        STORMO_TRY_ASSIGN(impl->decoder, read_decoder(r, *e, "decoder"));
    }
    STORMO_TRY_ASSIGN(auto model_el, r.required(root, "model", ""));
    STORMO_TRY_ASSIGN(impl->model, read_model(r, model_el));
    impl->size = impl->model.size();

    std::vector<AddedToken> raw, normalized;
    if (const auto e = Reader::optional(root, "added_tokens")) {
        STORMO_TRY_ASSIGN(auto tokens, read_added_tokens(r, *e));
        for (size_t i = 0; i < tokens.size(); ++i) {
            AddedToken& t = tokens[i];
            // An added token on an id the vocabulary or another added token holds with other text:
            // ids would decode to the wrong text, and the token whose id was taken to none.
            const std::string_view model_token = impl->model.token(t.id);
            const auto added = impl->added_by_id.find(t.id);
            const std::string other = added != impl->added_by_id.end() ? added->second.content : std::string(model_token);
            if (!other.empty() && other != t.content)
                return r.error(ErrorKind::format, "added_tokens[" + std::to_string(i) + "]",
                               in_quotes(t.content) + " takes id " + std::to_string(t.id) + ", already the id of " +
                                   in_quotes(other));
            impl->size = std::max(impl->size, static_cast<size_t>(t.id) + 1);
            impl->added_by_content.emplace(t.content, t.id);
            impl->added_by_id.emplace(t.id, t);
            // Normalized tokens are looked for after normalization; without a normalizer that is the raw text.
            (t.normalized && !impl->normalizer.identity() ? normalized : raw).push_back(std::move(t));
        }
    }
    impl->raw_added = AddedTokenMatcher(std::move(raw));
    impl->normalized_added = AddedTokenMatcher(std::move(normalized));
    return impl;
}

}  // namespace

Expected<std::unique_ptr<TokenizerData>> load_tokenizer_json(const TextFile& file) {
    if (!file.bytes) return tl::unexpected(file.bytes.error());
    // simdjson reads past the end of its input: the text is copied into a padded buffer.
    const simdjson::padded_string bytes(*file.bytes);
    const Reader r(file.path);
    dom::parser parser;
    dom::element root_el;
    if (const auto err = parser.parse(bytes).get(root_el); err != simdjson::SUCCESS)
        return fail(ErrorKind::format, file.path + ": malformed JSON: " + simdjson::error_message(err));
    STORMO_TRY_ASSIGN(auto root, r.object(root_el, "(top level)"));
    STORMO_TRY_ASSIGN(auto impl, build(r, root));
    impl->file = file.path;
    return impl;
}

}  // namespace stormo::text
