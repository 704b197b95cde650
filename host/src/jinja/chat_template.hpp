#pragma once
// A model directory's own chat template (chat_template.jinja, or tokenizer_config.json's
// chat_template), rendered as transformers renders it, so a new model's prompt format needs no
// code. The Jinja subset the hub's templates use is implemented; a template using anything else
// fails at load, naming the construct and its line.
#include <filesystem>
#include <memory>
#include <string>

#include "jinja/chat_value.hpp"
#include "jinja/render_limits.hpp"
#include "model/model_text.hpp"
#include "stormo/error.hpp"

namespace stormo::text {

class ChatTemplate {
public:
    // From what an opened model hands over (model/model_bundle.hpp): a model directory's
    // chat_template.jinja or tokenizer_config.json with a chat_template (a string, or the list of
    // named templates, "default" chosen), bos_token and eos_token (strings or {"content": ...}
    // objects) coming from tokenizer_config.json when present; or a GGUF model's
    // tokenizer.chat_template, with the special tokens its tokenizer.ggml.*_token_id keys name.
    static Expected<ChatTemplate> from_model_text(const ModelText& text);
    // `dir` is a directory with those files or a GGUF model (recognised by its content), read
    // through read_model_text (model/model_text_files.hpp).
    static Expected<ChatTemplate> load(const std::filesystem::path& dir);
    // From template text (tests, GGUF metadata later); `source` names it in errors.
    static Expected<ChatTemplate> parse(const std::string& text, const std::string& source);
    ChatTemplate(ChatTemplate&&) noexcept;
    ChatTemplate& operator=(ChatTemplate&&) noexcept;
    ~ChatTemplate();

    // messages: a list of {"role", "content", ...} objects. options: an object whose members become
    // the template's variables (add_generation_prompt, tools, reasoning_effort, enable_thinking,
    // builtin_tools, model_identity, ...); "strftime_now", when given, is the text strftime_now()
    // returns, else the local date in the format asked. Jinja's semantics as transformers sets
    // them (trim_blocks, lstrip_blocks, loopcontrols; an undefined variable prints as nothing, a
    // member of one is an error); raise_exception() or a type error becomes an error naming the line.
    Expected<std::string> render(const Value& messages, const Value& options) const;

    // Tighter or looser bounds on output size, macro recursion and work (tests, servers).
    void set_limits(const RenderLimits& limits);

    const std::string& bos_token() const;
    const std::string& eos_token() const;
    const std::string& source() const;

private:
    static Expected<ChatTemplate> from_gguf(const GgufHeader& h);
    struct Impl;
    explicit ChatTemplate(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

}  // namespace stormo::text
