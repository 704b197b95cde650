// ChatTemplate: choosing a model's template from what its opened bundle read, parsing it once,
// rendering it with the variables transformers' apply_chat_template passes.
#include "jinja/chat_template.hpp"

#include "jinja/jinja_evaluator.hpp"
#include "jinja/jinja_lexer.hpp"
#include "jinja/jinja_parser.hpp"
#include "model/gguf.hpp"
#include "model/model_text_files.hpp"

namespace stormo::text {
namespace {

namespace fs = std::filesystem;

// The special tokens transformers passes to every template (its special_tokens_map).
constexpr const char* special_token_names[] = {"bos_token", "eos_token", "unk_token", "sep_token",
                                               "pad_token", "cls_token", "mask_token"};

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
Expected<ChatTemplate> ChatTemplate::from_gguf(const GgufHeader& h) {
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

Expected<ChatTemplate> ChatTemplate::from_model_text(const ModelText& model) {
    if (model.gguf != nullptr) return from_gguf(*model.gguf);
    Value config = Value::object();
    if (model.tokenizer_config.present()) {
        if (!model.tokenizer_config.bytes) return tl::unexpected(model.tokenizer_config.bytes.error());
        STORMO_TRY_ASSIGN(config, parse_json_value(*model.tokenizer_config.bytes, model.tokenizer_config.path));
        if (!config.is_object()) return fail(ErrorKind::format, model.tokenizer_config.path + ": not a JSON object");
    }
    std::string text;
    std::string source;
    if (model.chat_template.present()) {
        if (!model.chat_template.bytes) return tl::unexpected(model.chat_template.bytes.error());
        text = *model.chat_template.bytes;
        source = model.chat_template.path;
    } else if (const Value* field = config.find("chat_template"); field && !field->is_null()) {
        source = model.tokenizer_config.path + ":chat_template";
        STORMO_TRY_ASSIGN(text, template_of(*field, model.tokenizer_config.path));
    } else {
        return fail(ErrorKind::missing, model.path + ": no chat template (looked for chat_template.jinja and for "
                                                     "a chat_template field in tokenizer_config.json)");
    }
    STORMO_TRY_ASSIGN(ChatTemplate loaded, parse(text, source));
    loaded.impl_->special_tokens = special_tokens_of(config);
    if (const std::string* bos = token_text(config.find("bos_token"))) loaded.impl_->bos_token = *bos;
    if (const std::string* eos = token_text(config.find("eos_token"))) loaded.impl_->eos_token = *eos;
    return loaded;
}

Expected<ChatTemplate> ChatTemplate::load(const fs::path& dir) {
    STORMO_TRY_ASSIGN(const ModelText model, read_model_text(dir.string()));
    return from_model_text(model);
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
