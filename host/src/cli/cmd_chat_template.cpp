// stormo chat-template: messages rendered with a model directory's own chat template, as text or
// as the ids the model would read.
#include <iostream>

#include "cli/commands.hpp"
#include "cli/options.hpp"
#include "jinja/chat_template.hpp"
#include "model/model_text_files.hpp"
#include "tokenizer/tokenizer.hpp"
#include "util/file.hpp"

namespace stormo::cli {
namespace {

constexpr uint64_t kMessagesFileCap = uint64_t{64} << 20;

struct MessagesFile {
    text::Value messages;
    text::Value options;
};

// {"messages": [...], "options": {...}}; options may be absent.
Expected<MessagesFile> read_messages(const std::string& path) {
    auto content = read_file(path, kMessagesFileCap);
    if (!content) return tl::unexpected(with_context(content.error(), "--messages"));
    STORMO_TRY_ASSIGN(text::Value root, text::parse_json_value(*content, path));
    const text::Value* messages = root.find("messages");
    if (!messages || !messages->is_list())
        return fail(ErrorKind::invalid_argument, path + ": \"messages\" must be a list of {\"role\", \"content\"} objects");
    for (size_t i = 0; i < messages->as_list().size(); ++i) {
        const text::Value& m = messages->as_list()[i];
        const text::Value* role = m.find("role");
        if (!m.is_object() || !role || !role->is_string())
            return fail(ErrorKind::invalid_argument, path + ": messages[" + std::to_string(i) + "] has no \"role\" string");
    }
    const text::Value* options = root.find("options");
    if (options && !options->is_object())
        return fail(ErrorKind::invalid_argument, path + ": \"options\" must be an object");
    return MessagesFile{*messages, options ? *options : text::Value::object()};
}

}  // namespace

int run_chat_template(int argc, char** argv) {
    std::optional<std::string> dir, messages_file;
    bool as_ids = false;
    po::options_description d("chat-template options");
    d.add_options()
        ("tokenizer", po::value<std::string>()->value_name("DIR")->notifier([&dir](const std::string& v) { dir = v; }),
         "a directory with tokenizer_config.json (and chat_template.jinja); a model directory works")
        ("messages", po::value<std::string>()->value_name("FILE")->notifier([&messages_file](const std::string& v) { messages_file = v; }),
         "{\"messages\": [...], \"options\": {...}}: add_generation_prompt and the template's variables")
        ("ids", po::bool_switch(&as_ids), "print the prompt's token ids on one line instead of its text");
    auto parsed = parse_command_line(argc, argv, "chat-template", "--tokenizer DIR --messages FILE.json [--ids]",
                                     "Renders messages with the directory's chat template, exactly as the model reads them.", d);
    if (!parsed) return report_usage_error("chat-template", parsed.error());
    if (*parsed == ParseResult::help_shown) return 0;
    if (!dir) return report_usage_error("chat-template", Error{ErrorKind::invalid_argument, "--tokenizer DIR is required"});
    if (!messages_file) return report_usage_error("chat-template", Error{ErrorKind::invalid_argument, "--messages FILE is required"});

    auto input = read_messages(*messages_file);
    if (!input) return report_error("chat-template", input.error());
    // The files read once: the template and, for --ids, the tokenizer come from the same reading.
    auto model_text = read_model_text(*dir);
    if (!model_text) return report_error("chat-template", model_text.error());
    auto chat_template = text::ChatTemplate::from_model_text(*model_text);
    if (!chat_template) return report_error("chat-template", chat_template.error());
    auto prompt = chat_template->render(input->messages, input->options);
    if (!prompt) return report_error("chat-template", prompt.error());
    if (!as_ids) {
        std::cout << *prompt << std::flush;
        return 0;
    }
    auto tokenizer = text::Tokenizer::from_model_text(*model_text);
    if (!tokenizer) return report_error("chat-template", tokenizer.error());
    const std::vector<int32_t> ids = tokenizer->encode(*prompt, /*match_special=*/true);
    for (size_t i = 0; i < ids.size(); ++i) std::cout << (i ? " " : "") << ids[i];
    std::cout << "\n" << std::flush;
    return 0;
}

}  // namespace stormo::cli
