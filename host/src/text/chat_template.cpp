// ChatTemplate: finding a model directory's template, parsing it once, rendering it with the
// variables transformers' apply_chat_template passes.
#include "text/chat_template.hpp"

#include <system_error>

#include "model/gguf_split.hpp"
#include "text/jinja_evaluator.hpp"
#include "text/jinja_lexer.hpp"
#include "text/jinja_parser.hpp"
#include "util/file.hpp"

namespace stormo::text {
namespace {

namespace fs = std::filesystem;

constexpr uint64_t max_template_bytes = uint64_t{4} << 20;
constexpr uint64_t max_config_bytes = uint64_t{64} << 20;  // some configs list every added token

// The special tokens transformers passes to every template (its special_tokens_map).
constexpr const char* special_token_names[] = {"bos_token", "eos_token", "unk_token", "sep_token",
                                               "pad_token", "cls_token", "mask_token"};

Expected<std::string> read_capped(const fs::path& path, uint64_t cap) {
    std::error_code ec;
    if (!fs::is_regular_file(path, ec))
        return fail(ErrorKind::io, path.string() + ": not a regular file");
    STORMO_TRY_ASSIGN(FileDescriptor fd, FileDescriptor::open_read(path.string()));
    STORMO_TRY_ASSIGN(uint64_t size, fd.size(path.string()));
    if (size > cap)
        return fail(ErrorKind::resource, path.string() + ": " + std::to_string(size) + " bytes, more than the " +
                                             std::to_string(cap) + " a chat template file may have");
    std::string text(size, '\0');
    if (size > 0) STORMO_TRY(pread_exact(fd.get(), text.data(), size, 0, path.string()));
    return text;
}

// A token as tokenizer_config.json writes it: "text" or {"content": "text", ...}; else none.
const std::string* token_text(const Value* v) {
    if (!v) return nullptr;
    if (v->is_string()) return &v->as_string();
    if (const Value* content = v->find("content"); content && content->is_string()) return &content->as_string();
    return nullptr;
}

Value special_tokens_of(const Value& config) {
    Value tokens = Value::object();
    for (const char* name : special_token_names)
        if (const std::string* text = token_text(config.find(name)); text && !text->empty()) tokens.set(name, Value(*text));
    if (const Value* extra = config.find("additional_special_tokens"); extra && extra->is_list() && !extra->as_list().empty()) {
        ValueList texts;
        for (const Value& item : extra->as_list())
            if (const std::string* text = token_text(&item)) texts.emplace_back(*text);
        tokens.set("additional_special_tokens", Value::list(std::move(texts)));
    }
    return tokens;
}

// tokenizer_config.json's chat_template: a string, or [{"name", "template"}, ...] of which
// "default" is the one apply_chat_template uses when none is named.
Expected<std::string> template_of(const Value& field, const std::string& where) {
    if (field.is_string()) return field.as_string();
    if (field.is_list()) {
        for (const Value& entry : field.as_list()) {
            const Value* name = entry.find("name");
            const Value* text = entry.find("template");
            if (name && name->is_string() && name->as_string() == "default" && text && text->is_string()) return text->as_string();
        }
        return fail(ErrorKind::missing, where + ": a list of named chat templates without one named \"default\"");
    }
    return fail(ErrorKind::format, where + ": chat_template is neither a string nor a list of named templates");
}

}  // namespace

struct ChatTemplate::Impl {
    std::string source;
    jinja::NodeList nodes;
    Value special_tokens = Value::object();
    std::string bos_token;
    std::string eos_token;
    RenderLimits limits;
};

ChatTemplate::ChatTemplate(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ChatTemplate::ChatTemplate(ChatTemplate&&) noexcept = default;
ChatTemplate& ChatTemplate::operator=(ChatTemplate&&) noexcept = default;
ChatTemplate::~ChatTemplate() = default;

Expected<ChatTemplate> ChatTemplate::parse(const std::string& text, const std::string& source) {
    STORMO_TRY_ASSIGN(auto tokens, jinja::tokenize(text, source));
    auto impl = std::make_unique<Impl>();
    impl->source = source;
    STORMO_TRY_ASSIGN(impl->nodes, jinja::parse_template(tokens, source));
    return ChatTemplate(std::move(impl));
}

// A GGUF model's template is its tokenizer.chat_template; the special tokens the template may
// use are the texts of the ids the tokenizer.ggml.*_token_id keys name, as tokenizer_config.json
// names them for transformers.
Expected<ChatTemplate> load_gguf_chat_template(const fs::path& file) {
    STORMO_TRY_ASSIGN(auto model, GgufModel::open(file.string()));
    const GgufHeader& h = model.metadata();
    const GgufValue* text = h.find("tokenizer.chat_template");
    if (text == nullptr) return fail(ErrorKind::missing, h.path + ": no chat template (tokenizer.chat_template is missing)");
    if (!text->as_string())
        return fail(ErrorKind::format, h.path + ": key \"tokenizer.chat_template\" must be a string, found " + text->type_name());
    STORMO_TRY_ASSIGN(ChatTemplate loaded, ChatTemplate::parse(std::string(text->text), h.path + ":tokenizer.chat_template"));
    const GgufValue* tokens = h.find("tokenizer.ggml.tokens");
    Value special = Value::object();
    constexpr std::pair<const char*, const char*> kIds[] = {{"bos_token", "tokenizer.ggml.bos_token_id"},
                                                            {"eos_token", "tokenizer.ggml.eos_token_id"},
                                                            {"unk_token", "tokenizer.ggml.unknown_token_id"},
                                                            {"sep_token", "tokenizer.ggml.seperator_token_id"},
                                                            {"pad_token", "tokenizer.ggml.padding_token_id"},
                                                            {"cls_token", "tokenizer.ggml.cls_token_id"},
                                                            {"mask_token", "tokenizer.ggml.mask_token_id"}};
    for (const auto& [name, key] : kIds) {
        const GgufValue* id = h.find(key);
        if (id == nullptr) continue;
        const auto n = id->as_uint();
        if (!n || tokens == nullptr || *n >= tokens->strings.size())
            return fail(ErrorKind::format, h.path + ": key \"" + key + "\" is not the id of a token in tokenizer.ggml.tokens");
        special.set(name, Value(std::string(tokens->strings[*n])));
    }
    loaded.impl_->special_tokens = special;
    if (const Value* bos = special.find("bos_token")) loaded.impl_->bos_token = bos->as_string();
    if (const Value* eos = special.find("eos_token")) loaded.impl_->eos_token = eos->as_string();
    return loaded;
}

Expected<ChatTemplate> ChatTemplate::load(const fs::path& dir) {
    if (dir.string().ends_with(".gguf")) return load_gguf_chat_template(dir);
    const fs::path jinja_path = dir / "chat_template.jinja";
    const fs::path config_path = dir / "tokenizer_config.json";
    std::error_code ec;
    Value config = Value::object();
    if (fs::exists(config_path, ec)) {
        STORMO_TRY_ASSIGN(std::string text, read_capped(config_path, max_config_bytes));
        STORMO_TRY_ASSIGN(config, parse_json_value(text, config_path.string()));
        if (!config.is_object()) return fail(ErrorKind::format, config_path.string() + ": not a JSON object");
    }
    std::string text;
    std::string source;
    if (fs::exists(jinja_path, ec)) {
        STORMO_TRY_ASSIGN(text, read_capped(jinja_path, max_template_bytes));
        source = jinja_path.string();
    } else if (const Value* field = config.find("chat_template"); field && !field->is_null()) {
        source = config_path.string() + ":chat_template";
        STORMO_TRY_ASSIGN(text, template_of(*field, config_path.string()));
    } else {
        return fail(ErrorKind::missing, dir.string() + ": no chat template (looked for chat_template.jinja and for "
                                                       "a chat_template field in tokenizer_config.json)");
    }
    STORMO_TRY_ASSIGN(ChatTemplate loaded, parse(text, source));
    loaded.impl_->special_tokens = special_tokens_of(config);
    if (const std::string* bos = token_text(config.find("bos_token"))) loaded.impl_->bos_token = *bos;
    if (const std::string* eos = token_text(config.find("eos_token"))) loaded.impl_->eos_token = *eos;
    return loaded;
}

// The variables, in the order transformers layers them: special tokens, then tools, documents and
// add_generation_prompt (None, None, False unless given), then the caller's options, then
// messages. "strftime_now" in the options is not a variable but the text strftime_now() returns.
Expected<std::string> ChatTemplate::render(const Value& messages, const Value& options) const {
    if (!options.is_null() && !options.is_object())
        return fail(ErrorKind::invalid_argument, impl_->source + ": render options must be an object");
    Value variables = impl_->special_tokens.is_object() ? Value::object(impl_->special_tokens.as_object()) : Value::object();
    variables.set("tools", Value());
    variables.set("documents", Value());
    variables.set("add_generation_prompt", Value(false));
    std::optional<std::string> strftime_text;
    if (options.is_object())
        for (const auto& [key, value] : options.as_object()) {
            if (key == "strftime_now") {
                if (value.is_string()) strftime_text = value.as_string();
                continue;
            }
            variables.set(key, value);
        }
    variables.set("messages", messages);
    jinja::RenderContext context{impl_->source, variables.as_object(), strftime_text, impl_->limits};
    return jinja::render_nodes(impl_->nodes, context);
}

void ChatTemplate::set_limits(const RenderLimits& limits) { impl_->limits = limits; }
const std::string& ChatTemplate::bos_token() const { return impl_->bos_token; }
const std::string& ChatTemplate::eos_token() const { return impl_->eos_token; }
const std::string& ChatTemplate::source() const { return impl_->source; }

}  // namespace stormo::text
